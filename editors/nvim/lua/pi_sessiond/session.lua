--- The session the plugin acts on: the most recently opened (or forked) one.
---
--- Invariant: work that needs a session waits in `waiting` while an open is in
--- flight or none was opened yet, and runs in order once one is open. After a
--- daemon restart the session is reopened from its path before work runs.
local client = require('pi_sessiond.client')
local protocol = require('pi_sessiond.protocol')

local M = {}

local current = nil -- SESSION (as `pi/openSession` answers it) plus `stale` after a daemon exit
local opening = 0
local waiting = {} -- { run = function(session_id), fail = function(err) }
local stats = nil
local live = {} -- session id -> holder `{pid, program}` of the live Pi holding it (`pi/sessionLive`)

local function flush(err)
  local queue = waiting
  waiting = {}
  for _, job in ipairs(queue) do
    if current then
      job.run(current.sessionId)
    else
      job.fail(err or { code = protocol.errors.unknownSession, message = 'no pi session is open' })
    end
  end
end

--- The current SESSION table, or nil.
function M.current()
  return current
end

--- The last `pi/getStats` result for the current session, or nil.
function M.stats()
  return stats
end

--- Record whether a live Pi holds `session_id` (`holder` is nil when it let go).
function M.set_live(session_id, holder)
  live[session_id] = holder
end

--- The holder `{pid, program}` of the live Pi that has the current session open, or nil.
function M.live()
  local open = M.current()
  return open and live[open.sessionId] or nil
end

--- True when a session is open or being opened.
function M.pending_or_open()
  return current ~= nil or opening > 0
end

--- Make `info` (a SESSION) the current session.
function M.set_current(info)
  current = info
  stats = nil
end

--- Record a new leaf for `session_id` (from a result or a notification).
function M.set_leaf(session_id, leaf_id)
  if current and current.sessionId == session_id then
    current.leafId = leaf_id
  end
end

--- Send `pi/openSession`; on success it becomes the current session.
--- `params` is `{path = …}` or `{sessionId = …}`; `callback(err, session)`.
function M.open(params, callback)
  opening = opening + 1
  client.request(protocol.methods.OPEN_SESSION, params, function(err, result)
    opening = opening - 1
    if not err then
      M.set_current(result)
    end
    callback(err, result)
    if opening == 0 then
      flush(err)
    end
  end)
end

--- Run `run(session_id)` on the current session, now or once one is open.
function M.with_session(run, fail)
  fail = fail or function() end
  if current and current.stale and opening == 0 then
    M.open({ path = current.path }, function() end)
  end
  if current and opening == 0 then
    run(current.sessionId)
  else
    table.insert(waiting, { run = run, fail = fail })
  end
end

--- Send `method` with `params` plus the current session's `sessionId` (once one is open);
--- `callback(err, result, session_id)`.
function M.request(method, params, callback)
  M.with_session(function(session_id)
    client.request(method, vim.tbl_extend('force', { sessionId = session_id }, params), function(err, result)
      callback(err, result, session_id)
    end)
  end, function(err)
    callback(err, nil, nil)
  end)
end

--- The daemon exited: the session must be reopened before it is used again.
function M.on_daemon_exit()
  if current then
    current.stale = true
  end
end

--- Refresh the cached `pi/getStats` result; `callback(err, stats)` optional.
function M.refresh_stats(callback)
  M.with_session(function(session_id)
    client.request(protocol.methods.GET_STATS, { sessionId = session_id }, function(err, result)
      if not err and current and current.sessionId == session_id then
        stats = result
        vim.cmd('redrawstatus')
      end
      if callback then
        callback(err, result)
      end
    end)
  end, function(err)
    if callback then
      callback(err, nil)
    end
  end)
end

return M
