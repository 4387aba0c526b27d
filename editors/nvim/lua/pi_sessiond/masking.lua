--- The masking tier in Neovim: which tool results are masked on the active branch, what a
--- `context_edit` does (the pure part, shared by the tree), and `:PiMask`, `:PiUnmask`,
--- `:PiOriginal` around `pi/mask`, `pi/unmask` and `pi/getEntries`.
---
--- A placeholder (the daemon's `compaction/masking.py`) starts with `MARKER`, names the tool
--- and the original entry on its first line, then `arguments: {json}` and `outcome: …; N
--- characters, M lines`. Masked state follows Pi 1.6.0's projection: among the leaf's context
--- entries (after the newest compaction, plus its kept range) the latest edit per target wins.
--- The original always comes from the raw history (`pi/getEntries`), asked each time.
local M = {}

M.MARKER = '[masked tool output'
M.NOTHING = 'nothing to mask: no tool result (compaction.masking.tools) is at least minTokens long'
  .. ' with olderThanTokens of context after it'

local function starts(text, prefix)
  return type(text) == 'string' and text:sub(1, #prefix) == prefix
end

--- The text of a message's content (text blocks joined by newlines; images named).
function M.content_text(content)
  if type(content) == 'string' then
    return content
  end
  local parts = {}
  for _, block in ipairs(type(content) == 'table' and content or {}) do
    if type(block) == 'table' and block.type == 'text' then
      table.insert(parts, tostring(block.text or ''))
    elseif type(block) == 'table' and block.type == 'image' then
      table.insert(parts, string.format('[image %s]', tostring(block.mimeType or '')))
    end
  end
  return table.concat(parts, '\n')
end

local TARGET_KEYS = { 'path', 'file_path', 'filePath', 'file', 'pattern', 'command' }

--- The short target of a call's arguments line (it may be clipped: then the known keys only).
local function target_of(line)
  local json = starts(line, 'arguments: ') and line:sub(#'arguments: ' + 1) or ''
  local ok, args = pcall(vim.fn.json_decode, json)
  for _, key in ipairs(TARGET_KEYS) do
    local value = ok and type(args) == 'table' and args[key] or json:match('"' .. key .. '": "([^"]*)')
    if type(value) == 'string' and value ~= '' then
      value = vim.split(value, '\n', { plain = true })[1]
      if key:find('path') or key == 'file' then
        return value:match('[^/]+$') or value
      end
      return value
    end
  end
  return ''
end

--- What a placeholder says: `{tool, original_id, target, size, text}`, or nil.
function M.parse_placeholder(text)
  if not starts(text, M.MARKER) then
    return nil
  end
  local lines = vim.split(text, '\n', { plain = true })
  local tool, original = lines[1]:match('^%[masked tool output: (.-) — the original is entry ([^;%s]+);')
  local out = { tool = tool or 'tool', original_id = original, target = '', size = '', text = text }
  for _, line in ipairs(lines) do
    if starts(line, 'arguments: ') then
      out.target = target_of(line)
    elseif starts(line, 'outcome: ') then
      out.size = line:sub(#'outcome: ' + 1)
    end
  end
  return out
end

--- What a `context_edit` node does (`entry`, when fetched, has the whole placeholder):
--- `{id, target_id, kind = 'masked' | 'replaced' | 'omitted', placeholder?}`, or nil.
function M.edit_info(node, entry)
  if node.type ~= 'context_edit' then
    return nil
  end
  local preview = tostring(node.preview or '')
  local colon = preview:find(': ', 1, true)
  local target = entry and entry.targetId or (colon and preview:sub(1, colon - 1) or '')
  local replacement = entry and entry.replacement
  if (entry and type(replacement) ~= 'table') or (not entry and preview:sub(-#': (omitted)') == ': (omitted)') then
    return { id = node.id, target_id = target, kind = 'omitted' }
  end
  local text = entry and M.content_text(replacement.content) or (colon and preview:sub(colon + 2) or '')
  if not starts(text, M.MARKER) then
    return { id = node.id, target_id = target, kind = 'replaced' }
  end
  return { id = node.id, target_id = target, kind = 'masked', placeholder = entry and M.parse_placeholder(text) }
end

--- True for an edit node whose preview shows a placeholder (the entries worth fetching).
function M.is_masking_edit(node)
  return node.type == 'context_edit' and tostring(node.preview or ''):find(': ' .. M.MARKER, 1, true) ~= nil
end

--- The ids of the leaf's context entries, in path order (`first_kept`: compaction id -> kept id).
function M.context_ids(nodes, leaf_id, first_kept)
  local path = require('pi_sessiond.render').root_path(nodes, leaf_id)
  local newest
  for i, node in ipairs(path) do
    if node.type == 'compaction' then
      newest = i
    end
  end
  local ids = {}
  local kept = newest and (first_kept or {})[path[newest].id]
  local start = newest and newest + 1 or 1
  for i, node in ipairs(path) do
    if newest and node.id == kept and i < newest then
      start = i
    end
  end
  for i = start, #path do
    if i ~= newest then
      table.insert(ids, path[i].id)
    end
  end
  return ids
end

--- The tool results masked in the leaf's context: target id -> the edit masking it.
function M.masked_targets(nodes, leaf_id, edits, first_kept)
  local ids = M.context_ids(nodes, leaf_id, first_kept)
  local in_context, latest = {}, {}
  for _, id in ipairs(ids) do
    in_context[id] = true
  end
  for _, id in ipairs(ids) do
    local edit = edits[id]
    if edit and in_context[edit.target_id] then
      latest[edit.target_id] = edit
    end
  end
  local out = {}
  for target, edit in pairs(latest) do
    if edit.kind == 'masked' then
      out[target] = edit
    end
  end
  return out
end

--- `masked bash npm test`, `restored …`, `omitted …` for an edit (`edits`: all of the tree's).
function M.edit_label(edit, edits)
  local found, restores = edit.placeholder, false
  for _, other in pairs(edits) do
    if other.target_id == edit.target_id then
      found = found or other.placeholder
      restores = restores or other.kind == 'masked'
    end
  end
  local what = found and vim.trim(found.tool .. ' ' .. found.target) or ('tool result ' .. edit.target_id)
  if edit.kind == 'replaced' then
    return (restores and 'restored ' or 'edited ') .. what
  end
  return edit.kind .. ' ' .. what
end

--- Tree annotations: id -> `{label?, note, text?}` (`text`: the placeholder) for every edit and
--- every masked tool result.
function M.marks(nodes, leaf_id, edits, first_kept)
  local marks, masked = {}, M.masked_targets(nodes, leaf_id, edits, first_kept)
  for _, node in ipairs(nodes) do
    local edit, by = edits[node.id], masked[node.id]
    if edit then
      local size = edit.placeholder and edit.placeholder.size or ''
      local note = '→ ' .. edit.target_id .. (size ~= '' and ' · ' .. size or '')
      local text = edit.placeholder and edit.placeholder.text
      marks[node.id] = { label = M.edit_label(edit, edits), note = note, text = text }
    elseif by then
      local size = by.placeholder and by.placeholder.size or ''
      local note = 'masked' .. (size ~= '' and ' · ' .. size or '')
      marks[node.id] = { note = note, text = by.placeholder and by.placeholder.text }
    end
  end
  return marks, masked
end

local short = require('pi_sessiond.render').short_count

--- `mask 29 tool results, frees ~84k tokens?` from a dry run.
function M.question(dry)
  local n = #(dry.edits or {})
  local freed = math.max(0, (dry.tokensBefore or 0) - (dry.tokensAfter or 0))
  return string.format('mask %d tool result%s, frees ~%s tokens?', n, n == 1 and '' or 's', short(freed))
end

--- The message after `pi/mask` (`kind = 'mask'`) or `pi/unmask`.
function M.message(kind, result)
  local n = #(result.edits or {})
  local what = string.format('%d tool result%s (%s → ~%s tokens)', n, n == 1 and '' or 's',
    short(result.tokensBefore), short(result.tokensAfter))
  return kind == 'mask' and ('masked ' .. what .. '; :PiUnmask restores them')
    or ('restored ' .. what .. '; the context holds the full output again')
end

--- Lines of the tree's `K` detail of `node`: kind, id and preview, then what masking says of it.
function M.detail_lines(node, mark)
  local kind = node.type == 'message' and node.role or node.type
  local when = type(node.timestamp) == 'string' and '  ' .. node.timestamp or ''
  local lines = { string.format('%s %s%s', tostring(kind), node.id, when) }
  if mark then
    table.insert(lines, (mark.label and mark.label .. ' ' or '') .. mark.note)
  end
  local text = mark and mark.text or tostring(node.preview or '')
  table.insert(lines, '')
  vim.list_extend(lines, vim.split(text, '\n', { plain = true }))
  if mark then
    vim.list_extend(lines, { '', 'o: show the original · u: unmask' })
  end
  return lines
end

--- Lines of the `:PiOriginal` buffer: a header, a rule, then the stored output exactly.
function M.original_lines(entry, masked)
  local message = type(entry) == 'table' and entry.message or nil
  if type(message) ~= 'table' or message.role ~= 'toolResult' then
    return nil
  end
  local text = M.content_text(message.content)
  local code = type(message.details) == 'table' and message.details.exitCode or nil
  local outcome = (message.isError == true and 'error' or 'ok')
    .. (type(code) == 'number' and string.format(' (exit code %d)', code) or '')
  local body = vim.split(text, '\n', { plain = true })
  local count = #body - ((text == '' or text:sub(-1) == '\n') and 1 or 0)
  local lines = {
    string.format('Original tool result %s (%s), as stored in the session file.', entry.id,
      tostring(message.toolName or 'tool')),
    string.format('Outcome: %s; %d characters, %d lines.', outcome, vim.fn.strchars(text), count),
    masked and 'Masked in the context (the model sees the placeholder); :PiUnmask restores it.'
      or 'Not masked in the context.',
    string.rep('─', 40),
  }
  return vim.list_extend(lines, body)
end

--- Adds `marks` and `masked` (see `M.marks`) to a `pi/getTree` result; `entries`: id -> fetched
--- entry (the masking edits' whole placeholders), `result.first_kept` as `get_tree` fills it.
function M.annotate(result, entries)
  local edits = {}
  for _, node in ipairs(result.nodes or {}) do
    edits[node.id] = M.edit_info(node, entries[node.id])
  end
  result.marks, result.masked = M.marks(result.nodes or {}, result.leafId, edits, result.first_kept)
  return result
end

-- The commands' side: requests, questions and buffers.

local methods = require('pi_sessiond.protocol').methods

local function notify(message, level)
  vim.notify('pi-sessiond: ' .. message, level or vim.log.levels.INFO)
end

local function request(method, params, callback)
  require('pi_sessiond.session').request(method, params, callback)
end

local function failed(kind, err, opts)
  if opts.callback then
    return opts.callback(err, nil)
  end
  notify(kind .. ' failed: ' .. require('pi_sessiond.errors').describe(err, kind), vim.log.levels.ERROR)
end

--- One `pi/mask` / `pi/unmask`; then the leaf, the views and a message.
local function write(kind, method, params, opts)
  request(method, params, function(err, result, session_id)
    if err then
      return failed(kind, err, opts)
    end
    local last = (result.edits or {})[#(result.edits or {})]
    if last then
      require('pi_sessiond.session').set_leaf(session_id, last.id)
    end
    require('pi_sessiond.events').changed(session_id)
    if opts.callback then
      return opts.callback(nil, result)
    end
    notify(M.message(kind, result))
  end)
end

--- `:PiMask`: a dry run, the question (`opts.confirm(question, yes)`, default `vim.ui.select`),
--- then `pi/mask`. `opts.entry_ids` masks those (no question); `opts.callback(err, result)`.
function M.mask(opts)
  opts = opts or {}
  if opts.entry_ids then
    return write('mask', methods.MASK, { entryIds = opts.entry_ids }, opts)
  end
  request(methods.MASK, { dryRun = true }, function(err, dry)
    if err then
      return failed('mask', err, opts)
    elseif #(dry.edits or {}) == 0 then
      return opts.callback and opts.callback(nil, dry) or notify(M.NOTHING, vim.log.levels.WARN)
    end
    local confirm = opts.confirm or function(question, yes)
      vim.ui.select({ 'Mask', 'Cancel' }, { prompt = 'pi-sessiond: ' .. question .. ' ' }, function(choice)
        if choice == 'Mask' then
          yes()
        end
      end)
    end
    confirm(M.question(dry), function()
      write('mask', methods.MASK, {}, opts)
    end)
  end)
end

--- `:PiUnmask[!]`: restore `ids` (a list), or with `ids == nil` every masked result of the leaf's context.
function M.unmask(ids, opts)
  opts = opts or {}
  if ids then
    return write('unmask', methods.UNMASK, { entryIds = ids }, opts)
  end
  require('pi_sessiond').get_tree(function(err, tree)
    if err then
      return failed('unmask', err, opts)
    end
    local all = vim.tbl_keys(tree.masked or {})
    table.sort(all)
    if #all == 0 then
      return opts.callback and opts.callback(nil, { edits = {} })
        or notify('no tool result is masked in the context of the leaf', vim.log.levels.WARN)
    end
    write('unmask', methods.UNMASK, { entryIds = all }, opts)
  end)
end

--- The tool result an entry stands for: an edit's target (from its preview), else itself.
function M.target_of(tree, entry_id)
  for _, node in ipairs(tree.nodes or {}) do
    if node.id == entry_id and node.type == 'context_edit' then
      local info = M.edit_info(node)
      return info and info.target_id ~= '' and info.target_id or entry_id
    end
  end
  return entry_id
end

--- `:PiOriginal`: the stored tool result `entry_id` (or an edit's target) in a read-only
--- buffer, fetched now; `opts.callback(err, buf)`.
function M.show_original(entry_id, opts)
  opts = opts or {}
  require('pi_sessiond').get_tree(function(tree_err, tree)
    if tree_err then
      return failed('show original', tree_err, opts)
    end
    local target = M.target_of(tree, entry_id)
    request(methods.GET_ENTRIES, { ids = { target } }, function(err, result, session_id)
      local lines = not err and M.original_lines((result.entries or {})[1], (tree.masked or {})[target] ~= nil)
      if err or not lines then
        return failed('show original', err or { message = target .. ' is not a tool result' }, opts)
      end
      local name = string.format('pi-sessiond://original/%s/%s', session_id, target)
      local buf = require('pi_sessiond.buffers').show_text(name, lines, 'text')
      return opts.callback and opts.callback(nil, buf)
    end)
  end)
end

return M
