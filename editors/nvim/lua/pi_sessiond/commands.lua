--- The `:Pi*` commands: prompts (`vim.ui.select`, `vim.ui.input`) around the
--- Lua API. `plugin/pi_sessiond.lua` defines them; this module is loaded on
--- first use.
local buffers = require('pi_sessiond.buffers')
local compat = require('pi_sessiond.compat')
local drafts = require('pi_sessiond.drafts')
local render = require('pi_sessiond.render')
local session = require('pi_sessiond.session')

local M = {}

local function api()
  return require('pi_sessiond')
end

local function notify(message, level)
  vim.notify('pi-sessiond: ' .. message, level or vim.log.levels.INFO)
end

local function report(err)
  local text = tostring(err.message or err)
  if type(err.data) == 'table' and err.data.reason then
    text = string.format('%s (%s)', text, err.data.reason)
  end
  notify(text, vim.log.levels.ERROR)
end

--- False (with a message) when no session is open or being opened.
local function need_session()
  if session.pending_or_open() then
    return true
  end
  notify('no session open: use :PiSessions or :PiOpen {file}', vim.log.levels.WARN)
  return false
end

local function session_item(item)
  local title = item.name ~= vim.NIL and item.name or item.firstMessage
  title = vim.trim(tostring(title or ''):gsub('%s+', ' '))
  local modified = item.modified ~= vim.NIL and item.modified or ''
  return string.format('%s  (%s, %d messages)', title:sub(1, 80), modified, item.messageCount or 0)
end

--- `:PiSessions[!]`: pick a session of the current directory (all with `!`).
function M.sessions(all)
  local cwd = not all and compat.uv.cwd() or nil
  api().list_sessions({
    cwd = cwd,
    callback = function(err, result)
      if err then
        return report(err)
      end
      if #result.sessions == 0 then
        return notify(all and 'no sessions' or 'no sessions for this directory (try :PiSessions!)')
      end
      vim.ui.select(result.sessions, { prompt = 'Pi session', format_item = session_item }, function(item)
        if item then
          api().open_session(item.path)
        end
      end)
    end,
  })
end

--- `:PiCompact [instructions]`.
function M.compact(instructions)
  if need_session() then
    api().compact({ instructions = instructions ~= '' and instructions or nil })
  end
end

--- `:PiPreview [instructions]`: a compaction draft in a markdown buffer (`:w` commits, `:q!` discards).
function M.preview(instructions)
  if need_session() then
    api().preview({ instructions = instructions ~= '' and instructions or nil })
  end
end

--- `:PiCommit`: commit the draft of the current buffer (as `:w` does).
function M.commit()
  if not drafts.draft_of() then
    return notify('this buffer is not a draft (use :PiPreview)', vim.log.levels.WARN)
  end
  vim.cmd('write')
end

--- `:PiDiscard`: close the draft of the current buffer without writing it.
function M.discard()
  if not drafts.draft_of() then
    return notify('this buffer is not a draft (use :PiPreview)', vim.log.levels.WARN)
  end
  vim.cmd('bwipeout!')
end

--- `:PiUndo`: undo the compaction or branch summary at the leaf.
function M.undo()
  if need_session() then
    api().undo()
  end
end

--- `:PiMask`: mask old tool output (asks first, with the dry run's count and tokens).
function M.mask()
  if need_session() then
    require('pi_sessiond.masking').mask()
  end
end

--- `:PiUnmask[!] [id]`: restore the tool result under the cursor in `:PiTree` (or `id`, or an
--- edit's target); `!` restores every masked result of the leaf's context.
function M.unmask(id, all)
  if not need_session() then
    return
  end
  local masking = require('pi_sessiond.masking')
  if all then
    return masking.unmask(nil)
  end
  local entry_id = id ~= '' and id or buffers.entry_at_cursor()
  if not entry_id then
    return notify('no entry: use :PiUnmask {id} or the tree (:PiUnmask! restores all)', vim.log.levels.WARN)
  end
  api().get_tree(function(err, tree)
    if err then
      return report(err)
    end
    masking.unmask({ masking.target_of(tree, entry_id) })
  end)
end

--- `:PiOriginal [id]`: the stored tool result under the cursor in `:PiTree` (or `id`).
function M.original(id)
  if not need_session() then
    return
  end
  local entry_id = id ~= '' and id or buffers.entry_at_cursor()
  if not entry_id then
    return notify('no entry: use :PiOriginal {id} or the tree', vim.log.levels.WARN)
  end
  require('pi_sessiond.masking').show_original(entry_id)
end

--- `:PiTree`: show the tree of the current session.
function M.tree()
  if not need_session() then
    return
  end
  api().get_tree(function(err, result)
    if err then
      return report(err)
    end
    buffers.show_tree(session.current().sessionId, result)
  end)
end

local NO_SUMMARY, SUMMARIZE, WITH_INSTRUCTIONS = 'No summary', 'Summarize', 'Summarize with instructions…'

--- Ask how to leave the current branch, then navigate to `entry_id`.
function M.navigate_prompt(entry_id)
  if not entry_id then
    return
  end
  local choices = { NO_SUMMARY, SUMMARIZE, WITH_INSTRUCTIONS }
  vim.ui.select(choices, { prompt = 'Summarize the branch you leave?' }, function(choice)
    if choice == NO_SUMMARY then
      api().navigate(entry_id, { summarize = false })
    elseif choice == SUMMARIZE then
      api().navigate(entry_id, { summarize = true })
    elseif choice == WITH_INSTRUCTIONS then
      vim.ui.input({ prompt = 'Summary instructions: ' }, function(text)
        if text then
          api().navigate(entry_id, { summarize = true, instructions = text })
        end
      end)
    end
  end)
end

--- `:PiContext`: the LLM context of the current leaf as markdown.
function M.context()
  if not need_session() then
    return
  end
  api().get_context({
    callback = function(err, result)
      if err then
        return report(err)
      end
      buffers.show_markdown('pi-sessiond://context/' .. session.current().sessionId, render.context_lines(result))
    end,
  })
end

local function target_entry()
  return buffers.entry_at_cursor() or (session.current() or {}).leafId
end

--- `:PiLabel[!] [text]`: label the entry under the cursor in `:PiTree` (else
--- the leaf); `!` clears; no text asks for it.
function M.label(text, clear)
  if not need_session() then
    return
  end
  local entry_id = target_entry()
  if not entry_id or entry_id == vim.NIL then
    return notify('no entry to label', vim.log.levels.WARN)
  end
  if clear then
    return api().label(entry_id, nil)
  end
  if text ~= '' then
    return api().label(entry_id, text)
  end
  vim.ui.input({ prompt = 'Label: ' }, function(input)
    if input and input ~= '' then
      api().label(entry_id, input)
    end
  end)
end

local function pick_user_message(callback)
  api().get_tree(function(err, result)
    if err then
      return report(err)
    end
    local users = {}
    for _, node in ipairs(result.nodes or {}) do
      if node.onActivePath and node.role == 'user' then
        table.insert(users, node)
      end
    end
    vim.ui.select(users, {
      prompt = 'Fork at',
      format_item = function(node)
        return vim.trim(tostring(node.preview or ''):gsub('%s+', ' '))
      end,
    }, function(node)
      if node then
        callback(node.id)
      end
    end)
  end)
end

--- `:PiFork`: fork at the user message under the cursor in `:PiTree`, else pick one.
function M.fork()
  if not need_session() then
    return
  end
  local entry_id = buffers.entry_at_cursor()
  if entry_id then
    return api().fork(entry_id)
  end
  pick_user_message(function(id)
    api().fork(id)
  end)
end

local function stats_lines(stats)
  local tokens = stats.tokens or {}
  local percent = type(stats.contextPercent) == 'number' and string.format('%.1f%%', stats.contextPercent) or '?'
  local counts = {}
  for role, count in pairs(stats.messageCounts or {}) do
    table.insert(counts, string.format('%s %d', role, count))
  end
  table.sort(counts)
  local context
  if type(stats.contextTokens) == 'number' then
    context = string.format('context: %d of %s tokens (%s)', stats.contextTokens, stats.contextWindow, percent)
  elseif type(stats.estimatedContextTokens) == 'number' then
    context = string.format('context: ~%d of %s tokens (estimated; exact after the next answer)',
      stats.estimatedContextTokens, stats.contextWindow)
  else
    context = string.format('context: unknown of %s tokens', stats.contextWindow)
  end
  return {
    context,
    string.format('tokens: input %d, output %d, cache read %d, cache write %d, total %d',
      tokens.input or 0, tokens.output or 0, tokens.cacheRead or 0, tokens.cacheWrite or 0, tokens.total or 0),
    string.format('cost: $%.4f', stats.cost or 0),
    string.format('messages: %s', table.concat(counts, ', ')),
    string.format('compactions: %d, branch summaries: %d', stats.compactions or 0, stats.branchSummaries or 0),
  }
end

--- `:PiStats`.
function M.stats()
  if not need_session() then
    return
  end
  api().stats({
    callback = function(err, result)
      if err then
        return report(err)
      end
      notify(table.concat(stats_lines(result), '\n'))
    end,
  })
end

--- `:PiCancel`.
function M.cancel()
  local count = api().cancel()
  notify(count > 0 and string.format('cancelling %d job(s)', count) or 'nothing to cancel')
end

return M
