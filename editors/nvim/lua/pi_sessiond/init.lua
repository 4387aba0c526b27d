--- pi-sessiond for Neovim: the Lua API that the `:Pi*` commands wrap.
---
--- Every function acts on the most recently opened session. Calls made before
--- the daemon has answered `initialize`, or before a session is open, are
--- queued and run in order once it is. Functions that talk to the daemon take
--- `opts.callback(err, result)`; without one, errors and results are reported
--- with `vim.notify`.
local buffers = require('pi_sessiond.buffers')
local client = require('pi_sessiond.client')
local drafts = require('pi_sessiond.drafts')
local errors = require('pi_sessiond.errors')
local events = require('pi_sessiond.events')
local jobs = require('pi_sessiond.jobs')
local masking = require('pi_sessiond.masking')
local progress = require('pi_sessiond.progress')
local protocol = require('pi_sessiond.protocol')
local session = require('pi_sessiond.session')

local M = {}

local defaults = {
  cmd = { 'pi-sessiond' },
  cmd_env = nil,
  settings = nil,
  sessions_dir = nil,
  split = 'botright vsplit',
  editor_text_register = '"',
  statusline_prefix = 'π',
}
local options = vim.deepcopy(defaults)

local function notify(message, level)
  vim.notify('pi-sessiond: ' .. message, level or vim.log.levels.INFO)
end

local describe_error = errors.describe

--- Call `opts.callback`, or report: errors always, `success(result)` if given.
local function finish(opts, err, result, success)
  if opts.callback then
    opts.callback(err, result)
  elseif err and err.code == protocol.errors.cancelled then
    notify('cancelled')
  elseif err then
    notify(describe_error(err), vim.log.levels.ERROR)
  elseif success then
    local message = success(result)
    if message then
      notify(message)
    end
  end
end

local function configure_client()
  client.configure({
    cmd = options.cmd,
    cmd_env = options.cmd_env,
    settings = options.settings,
    sessions_dir = options.sessions_dir,
    handlers = events.handlers(),
    on_exit = session.on_daemon_exit,
  })
end

--- Configure the plugin. `opts.cmd` (list, default `{'pi-sessiond'}`),
--- `opts.settings` (the daemon's settings tree, sent as initializationOptions),
--- `opts.sessions_dir`, `opts.cmd_env`, `opts.split`,
--- `opts.editor_text_register`, `opts.statusline_prefix`. Takes effect when
--- the daemon next starts (see `stop()`).
function M.setup(opts)
  options = vim.tbl_extend('force', vim.deepcopy(defaults), opts or {})
  buffers.set_split(options.split)
  configure_client()
end

--- The current options (a copy).
function M.options()
  return vim.deepcopy(options)
end

--- Send any request once the daemon is ready: `callback(err, result)`.
function M.request(method, params, callback)
  client.request(method, params, callback)
end

--- The current SESSION table (what `pi/openSession` answers), or nil.
function M.session()
  return session.current()
end

--- Open a session file and make it the current session.
function M.open_session(path, opts)
  opts = opts or {}
  path = vim.fn.fnamemodify(vim.fn.expand(path), ':p')
  session.open({ path = path }, function(err, result)
    if not err then
      session.refresh_stats()
      for _, warning in ipairs(result.warnings or {}) do
        notify(string.format('%s:%s: %s', path, warning.line, warning.message), vim.log.levels.WARN)
      end
    end
    finish(opts, err, result, function(info)
      local where = vim.fn.fnamemodify(info.path, ':~')
      if info.loading then -- a big file opened from its end: the rest is read in the background
        return string.format('opened %s (reading the rest of it)', where)
      end
      return string.format('opened %s (%d entries)', where, info.entryCount)
    end)
  end)
end

--- List sessions (`opts.cwd`, default all); `opts.callback(err, {sessions})`.
function M.list_sessions(opts)
  opts = opts or {}
  client.request(protocol.methods.LIST_SESSIONS, { cwd = opts.cwd }, function(err, result)
    finish(opts, err, result)
  end)
end

--- Compact the current session (`opts.instructions`), with progress.
function M.compact(opts)
  opts = opts or {}
  return jobs.start(protocol.methods.COMPACT, function(session_id)
    return { sessionId = session_id, customInstructions = opts.instructions }
  end, function(err, result, session_id)
    if not err then
      events.changed(session_id)
    end
    finish(opts, err, result, function(r)
      return string.format('compacted: %d → %d tokens (:PiUndo takes it back)', r.tokensBefore, r.tokensAfter)
    end)
  end)
end

--- Prepare a compaction without writing it (`pi/compact {draft = true}`, with progress) and
--- open the DRAFT in a markdown buffer: `:w` commits (the edited text, if changed), closing
--- discards. `opts.instructions`; `opts.callback(err, draft, buf)` instead of the messages.
function M.preview(opts)
  opts = opts or {}
  return jobs.start(protocol.methods.COMPACT, function(session_id)
    return { sessionId = session_id, customInstructions = opts.instructions, draft = true }
  end, function(err, draft, session_id)
    if err then
      return finish(opts, err, nil)
    end
    M.get_tree(function(tree_err, tree)
      local range = nil
      if not tree_err and tree and draft.kind == 'compaction' then
        range = drafts.replaced_range(tree.nodes or {}, tree.leafId, draft.firstKeptEntryId, tree.first_kept)
      end
      local buf = drafts.show(draft, range, M.commit_draft, function()
        notify('draft discarded; nothing was written')
      end, buffers.show_buffer)
      if opts.callback then
        opts.callback(nil, draft, buf)
      end
    end, { session_id = session_id })
  end)
end

--- Write `draft` (`pi/commitDraft`), with `summary` when the person edited it; `done(ok)`.
function M.commit_draft(draft, summary, done)
  local params = { sessionId = draft.sessionId, draftId = draft.draftId, summary = summary }
  client.request(protocol.methods.COMMIT_DRAFT, params, function(err, result)
    if err then
      notify('commit failed: ' .. describe_error(err, 'commit'), vim.log.levels.ERROR)
      return done(false)
    end
    session.set_leaf(draft.sessionId, result.entry and result.entry.id)
    events.changed(draft.sessionId)
    notify(string.format('compacted: %d → %d tokens; %s', result.tokensBefore, result.tokensAfter,
      summary and 'your edited summary was written' or 'the summary was written as previewed'))
    done(true)
  end)
end

local function navigated(result)
  if result.cancelled then
    return 'navigation cancelled'
  end
  local text = result.editorText
  if text and text ~= vim.NIL and options.editor_text_register then
    vim.fn.setreg(options.editor_text_register, text)
    return string.format('moved to %s; its message is in register %s', result.leafId, options.editor_text_register)
  end
  return string.format('moved to %s', tostring(result.leafId))
end

--- Move the leaf to `target_id` (Pi's `/tree`): `opts.summarize`,
--- `opts.instructions`, `opts.replace_instructions`, `opts.label`.
function M.navigate(target_id, opts)
  opts = opts or {}
  return jobs.start(protocol.methods.NAVIGATE_TREE, function(session_id)
    return {
      sessionId = session_id,
      targetId = target_id,
      summarize = opts.summarize and true or false,
      customInstructions = opts.instructions,
      replaceInstructions = opts.replace_instructions and true or false,
      label = opts.label,
    }
  end, function(err, result, session_id)
    if not err then
      session.set_leaf(session_id, result.leafId)
      events.changed(session_id)
    end
    finish(opts, err, result, navigated)
  end)
end

--- Cancel the running summaries (compaction, branch summary); returns how many.
function M.cancel()
  return jobs.cancel_all()
end

local session_request = session.request

local function on_session(method, params, opts, success)
  session_request(method, params, function(err, result)
    finish(opts, err, result, success)
  end)
end

local UNDOABLE = { compaction = 'compaction', branch_summary = 'branch summary' }

--- Undo the compaction or branch summary at the leaf (`pi/undo`): the leaf goes back to the
--- entry before it, the context to what it was. `opts.callback(err, result)` replaces the messages.
function M.undo(opts)
  opts = opts or {}
  local leaf = (session.current() or {}).leafId
  if type(leaf) ~= 'string' then
    return finish(opts, { message = 'no leaf to undo' }, nil)
  end
  session_request(protocol.methods.GET_ENTRIES, { ids = { leaf } }, function(err, result)
    local entry = not err and result and (result.entries or {})[1] or nil
    local kind = entry and UNDOABLE[entry.type]
    if err or not kind then
      if opts.callback then
        return opts.callback(err or { message = 'nothing to undo' }, nil)
      end
      return err and notify(describe_error(err), vim.log.levels.ERROR)
          or notify('nothing to undo: the leaf is not a compaction or a branch summary', vim.log.levels.WARN)
    end
    session_request(protocol.methods.UNDO, { entryId = leaf }, function(undo_err, undone, session_id)
      if not undo_err then
        session.set_leaf(session_id, undone.leafId)
        events.changed(session_id)
      end
      if opts.callback then
        return opts.callback(undo_err, undone)
      elseif undo_err then
        return notify('undo failed: ' .. describe_error(undo_err, 'undo'), vim.log.levels.ERROR)
      end
      notify(string.format('undid the %s; the leaf is back at %s', kind, tostring(undone.entry.parentId)))
    end)
  end)
end

--- `pi/getTree` of the current session (or `opts.session_id`).
--- The result gains `tokens`: compaction id -> `tokensBefore`, branch summary id -> its
--- estimated size, and `first_kept`: compaction id -> `firstKeptEntryId` (from
--- `pi/getEntries`; absent when that fails), and `marks` / `masked` (`masking.annotate`).
function M.get_tree(callback, opts)
  opts = opts or {}
  local function with_tokens(err, result, session_id)
    if err or not result then
      return callback(err, result)
    end
    local ids = {}
    for _, node in ipairs(result.nodes or {}) do
      if node.type == 'compaction' or node.type == 'branch_summary' or masking.is_masking_edit(node) then
        table.insert(ids, node.id)
      end
    end
    if #ids == 0 or not session_id then
      return callback(nil, masking.annotate(result, {}))
    end
    client.request(protocol.methods.GET_ENTRIES, { sessionId = session_id, ids = ids }, function(e, entries)
      local by_id = {}
      if not e and entries then
        result.tokens, result.first_kept = {}, {}
        for _, entry in ipairs(entries.entries or {}) do
          by_id[entry.id] = entry
          if entry.type == 'compaction' and type(entry.firstKeptEntryId) == 'string' then
            result.first_kept[entry.id] = entry.firstKeptEntryId
          end
          if type(entry.tokensBefore) == 'number' then
            result.tokens[entry.id] = entry.tokensBefore
          elseif type(entry.summary) == 'string' then
            result.tokens[entry.id] = math.ceil(#entry.summary / 4)
          end
        end
      end
      callback(nil, masking.annotate(result, by_id))
    end)
  end
  if opts.session_id then
    client.request(protocol.methods.GET_TREE, { sessionId = opts.session_id }, function(err, result)
      with_tokens(err, result, opts.session_id)
    end)
  else
    session_request(protocol.methods.GET_TREE, {}, with_tokens)
  end
end

--- `pi/getContext` of the current session (`opts.leaf_id` optional).
function M.get_context(opts)
  opts = opts or {}
  on_session(protocol.methods.GET_CONTEXT, { leafId = opts.leaf_id }, opts)
end

--- `pi/getStats` of the current session; also refreshes `statusline()`.
function M.stats(opts)
  opts = opts or {}
  session.refresh_stats(function(err, result)
    finish(opts, err, result)
  end)
end

--- Set (or with `label == nil` clear) the label of `entry_id`.
function M.label(entry_id, label, opts)
  opts = opts or {}
  local params = { entryId = entry_id, label = label == nil and vim.NIL or label }
  session_request(protocol.methods.SET_LABEL, params, function(err, result, session_id)
    if not err then
      events.changed(session_id)
    end
    finish(opts, err, result, function()
      return label and string.format('labelled %s "%s"', entry_id, label) or 'label cleared'
    end)
  end)
end

--- Fork at a user message (Pi's `/fork`); the new session becomes current.
function M.fork(entry_id, opts)
  opts = opts or {}
  session_request(protocol.methods.FORK, { entryId = entry_id }, function(err, result)
    if not err then
      session.set_current(result)
      session.refresh_stats()
    end
    finish(opts, err, result, function(info)
      local where = type(info.path) == 'string' and vim.fn.fnamemodify(info.path, ':~') or info.sessionId
      return 'forked to ' .. where
    end)
  end)
end

--- Short status for 'statusline': the running job, else context usage; `[Pi]` after the
--- prefix while a live Pi has the session open (its compactions then run in Pi).
function M.statusline()
  local prefix = options.statusline_prefix .. (session.live() and '[Pi]' or '')
  local running = progress.describe()
  if running then
    return prefix .. ' ' .. running
  end
  local stats = session.stats()
  if stats and type(stats.contextPercent) == 'number' then
    return string.format('%s %d%%', prefix, math.floor(stats.contextPercent + 0.5))
  end
  -- After a compaction Pi's contextTokens is null until real usage arrives: the estimate, as ~N%.
  if stats and type(stats.estimatedContextTokens) == 'number' and type(stats.contextWindow) == 'number'
      and stats.contextWindow > 0 then
    return string.format('%s ~%d%%', prefix, math.floor(100 * stats.estimatedContextTokens / stats.contextWindow + 0.5))
  end
  return session.current() and prefix or ''
end

--- The `$/progress` values received (for scripts and tests).
function M.progress_log()
  return progress.log()
end

--- The daemon notifications received (for scripts and tests).
function M.notifications()
  return events.log()
end

--- Stop the daemon; the next call starts it again with the current options.
function M.stop()
  client.stop()
end

configure_client()

return M
