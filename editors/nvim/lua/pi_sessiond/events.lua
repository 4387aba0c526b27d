--- Handlers for what the daemon sends on its own (notifications and hook
--- requests), and the refresh that follows any change to a session.
local compat = require('pi_sessiond.compat')
local progress = require('pi_sessiond.progress')
local protocol = require('pi_sessiond.protocol')
local session = require('pi_sessiond.session')

local M = {}

local LOG_SIZE = 100
local log = {} -- the last LOG_SIZE notifications: { method, params }
local refresh_due = {}

local function notify(message, level)
  vim.notify('pi-sessiond: ' .. message, level or vim.log.levels.INFO)
end

--- Refresh the statusline stats and tree views of `session_id` once, soon
--- (several notifications about one change collapse into one refresh).
function M.changed(session_id)
  if refresh_due[session_id] then
    return
  end
  refresh_due[session_id] = true
  vim.defer_fn(function()
    refresh_due[session_id] = nil
    local current = session.current()
    if current and current.sessionId == session_id then
      session.refresh_stats()
    end
    require('pi_sessiond.buffers').refresh(session_id)
    compat.fire_user_event('PiSessiondChanged')
  end, 20)
end

local function record(method, params)
  table.insert(log, { method = method, params = params })
  if #log > LOG_SIZE then
    table.remove(log, 1)
  end
end

local function on(method, fn)
  return function(_, params)
    record(method, params)
    if type(params) == 'table' then
      fn(params)
    end
    return vim.NIL
  end
end

local function on_compaction_ended(params)
  if params.error and params.error ~= vim.NIL then
    notify('auto-compaction failed: ' .. tostring(params.error), vim.log.levels.WARN)
  else
    local entry = type(params.entry) == 'table' and params.entry or {}
    local undo = (entry.type == 'compaction' and params.reason == 'threshold') and '; :PiUndo takes it back' or ''
    notify(string.format('auto-compaction done (%s)%s', params.reason, undo))
  end
end

-- A session opened with `loading = true` was read in full: its warnings, or why it was closed.
local function on_session_loaded(params)
  if type(params.error) == 'string' then
    notify('the session could not be read in full: ' .. params.error, vim.log.levels.ERROR)
    return
  end
  for _, warning in ipairs(type(params.warnings) == 'table' and params.warnings or {}) do
    notify(string.format('line %s: %s', warning.line, warning.message), vim.log.levels.WARN)
  end
  M.changed(params.sessionId)
end

--- The `handlers` table for the pi-sessiond LSP client.
function M.handlers()
  return {
    ['$/progress'] = progress.handler,
    [protocol.notifications.SESSION_CHANGED] = on(protocol.notifications.SESSION_CHANGED, function(p)
      session.set_leaf(p.sessionId, p.leafId)
      M.changed(p.sessionId)
    end),
    [protocol.notifications.TREE_NAVIGATED] = on(protocol.notifications.TREE_NAVIGATED, function(p)
      session.set_leaf(p.sessionId, p.leafId)
      M.changed(p.sessionId)
    end),
    [protocol.notifications.SESSION_LIVE] = on(protocol.notifications.SESSION_LIVE, function(p)
      session.set_live(p.sessionId, p.live and type(p.holder) == 'table' and p.holder or nil)
      M.changed(p.sessionId)
    end),
    [protocol.notifications.SESSION_LOADED] = on(protocol.notifications.SESSION_LOADED, on_session_loaded),
    [protocol.notifications.COMPACTED] = on(protocol.notifications.COMPACTED, function(p)
      M.changed(p.sessionId)
    end),
    [protocol.notifications.COMPACTION_STARTED] = on(protocol.notifications.COMPACTION_STARTED, function(p)
      notify(string.format('auto-compaction started (%s)', p.reason))
    end),
    [protocol.notifications.COMPACTION_ENDED] = on(protocol.notifications.COMPACTION_ENDED, on_compaction_ended),
  }
end

--- A copy of the recorded notifications (for scripts and tests).
function M.log()
  return vim.deepcopy(log)
end

return M
