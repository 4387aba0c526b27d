--- Draft buffers: `:PiPreview` opens a compaction DRAFT (`pi/compact {draft = true}`)
--- as a markdown scratch buffer — a header comment saying what it replaces, the
--- tokens before → after and what the fidelity gate added, then the summary.
--- `:w` (or `:PiCommit`) commits it with `pi/commitDraft`, sending `summary`
--- only when the text below the header was changed; closing the buffer
--- (`:q!`, `:bwipeout`, `:PiDiscard`) discards it and writes nothing.
---
--- Invariants: `M.summary_of(M.document(draft, …))` is exactly `draft.summary`;
--- the header never contains `-->` before its own last line; a buffer is
--- committed at most once.
local M = {}

M.MARK = '<!-- pi-sessiond draft'
local HEADER_END = '-->'
local HOW_TO = 'Commit: :w (or :PiCommit); discard: :q! (or :PiDiscard).'
local MESSAGE_TYPES = { message = true, branch_summary = true, custom_message = true }

local open = {} -- bufnr -> { draft, committed }

local function safe(text, width)
  text = vim.trim(tostring(text or ''):gsub('%s+', ' '))
  text = text:gsub('%-%-+>?', '–')
  if vim.fn.strchars(text) > width then
    text = vim.fn.strcharpart(text, 0, width - 1) .. '…'
  end
  return text
end

local tokens = require('pi_sessiond.render').short_count

local function index_of(list, id)
  for i, node in ipairs(list) do
    if node.id == id then
      return i
    end
  end
  return nil
end

--- Pi's range on the path to `leaf_id`: from the newest earlier compaction's first kept
--- entry (`first_kept[id]`; else the entry after it; else the start) up to `first_kept_id`
--- (exclusive; nil: everything). Returns `{count, first, last, kept, previous_summary}`.
function M.replaced_range(nodes, leaf_id, first_kept_id, first_kept)
  local path = require('pi_sessiond.render').root_path(nodes, leaf_id)
  local previous = nil
  for i, node in ipairs(path) do
    if node.type == 'compaction' then
      previous = i
    end
  end
  local start = 1
  if previous then
    local kept_before = index_of(path, (first_kept or {})[path[previous].id])
    start = (kept_before and kept_before < previous) and kept_before or previous + 1
  end
  local kept_at = type(first_kept_id) == 'string' and index_of(path, first_kept_id) or nil
  local range = { count = 0, kept = kept_at and path[kept_at] or nil, previous_summary = previous ~= nil }
  for i = start, (kept_at or (#path + 1)) - 1 do
    if MESSAGE_TYPES[path[i].type] then
      range.count = range.count + 1
      range.first = range.first or path[i]
      range.last = path[i]
    end
  end
  return range
end

local function quoted(node)
  local preview = node and node.preview
  return (type(preview) == 'string' and preview ~= '') and string.format(' "%s"', safe(preview, 60)) or ''
end

local function range_lines(range, draft)
  if not range then
    return type(draft.firstKeptEntryId) == 'string'
        and { string.format('Keeps: `%s` and everything after it', draft.firstKeptEntryId) } or {}
  end
  local from = range.first and (', from' .. quoted(range.first)) or ''
  local to = (range.last and range.last ~= range.first) and (' to' .. quoted(range.last)) or ''
  local replaces = string.format('Replaces: %d message%s%s%s%s', range.count, range.count == 1 and '' or 's', from,
    to, range.previous_summary and ' and the previous summary' or '')
  local keeps = range.kept and string.format('Keeps: `%s`%s and everything after it', range.kept.id, quoted(range.kept))
      or 'Keeps: nothing before the summary'
  return { replaces, keeps }
end

--- At most this many of the gate's additions are listed in the header (all are in the summary).
M.GATE_LISTED = 10

--- What the fidelity gate added: counts by kind, the first `GATE_LISTED` items.
local function gate_lines(added)
  if #added == 0 then
    return { 'Fidelity gate: added nothing' }
  end
  local order, counts = {}, {}
  for _, item in ipairs(added) do
    if not counts[item.kind] then
      table.insert(order, item.kind)
    end
    counts[item.kind] = (counts[item.kind] or 0) + 1
  end
  local by_kind = vim.tbl_map(function(kind)
    return string.format('%s ×%d', safe(kind, 30), counts[kind])
  end, order)
  local lines = { string.format('Fidelity gate added %d (%s):', #added, table.concat(by_kind, ', ')) }
  for i = 1, math.min(#added, M.GATE_LISTED) do
    table.insert(lines, string.format('  - %s: %s', safe(added[i].kind, 30), safe(added[i].text, 100)))
  end
  if #added > M.GATE_LISTED then
    table.insert(lines, string.format('  … and %d more, all in the summary below', #added - M.GATE_LISTED))
  end
  return lines
end

--- The buffer lines of `draft`: the header comment, then the summary's lines.
function M.document(draft, range)
  local kind = draft.kind == 'branchSummary' and 'branch summary' or 'compaction'
  local lines = { string.format('%s %s (%s): everything below this comment is the summary that will be written.',
    M.MARK, safe(draft.draftId, 80), kind) }
  vim.list_extend(lines, range_lines(range, draft))
  table.insert(lines, string.format('Tokens: %s → ~%s', tokens(draft.tokensBefore), tokens(draft.estimatedTokensAfter)))
  local added = type(draft.gate) == 'table' and type(draft.gate.added) == 'table' and draft.gate.added or {}
  vim.list_extend(lines, gate_lines(added))
  table.insert(lines, HOW_TO)
  if type(draft.expiresAt) == 'string' then
    table.insert(lines, string.format('The draft can be committed until %s.', draft.expiresAt))
  end
  table.insert(lines, HEADER_END)
  vim.list_extend(lines, vim.split(draft.summary or '', '\n', { plain = true }))
  return lines
end

--- The summary part of a draft buffer's lines (all of them when the header was deleted).
function M.summary_of(lines)
  if #lines > 0 and lines[1]:sub(1, #M.MARK) == M.MARK then
    for i, line in ipairs(lines) do
      if line == HEADER_END then
        return table.concat(vim.list_slice(lines, i + 1), '\n')
      end
    end
  end
  return table.concat(lines, '\n')
end

--- What the commit sends: `{}` unchanged, `{summary = text}` edited, `{problem = …}` when empty.
function M.commit_summary(draft, lines)
  local summary = M.summary_of(lines)
  if vim.trim(summary) == '' then
    return { problem = 'the summary is empty: write one, or discard the draft (:q!)' }
  end
  return summary == draft.summary and {} or { summary = summary }
end

--- The draft shown in `buf`, or nil.
function M.draft_of(buf)
  local info = open[buf or vim.api.nvim_get_current_buf()]
  return info and info.draft or nil
end

--- Show `draft` in a new scratch buffer (`range` from `replaced_range`, optional).
--- `commit(draft, summary_or_nil, done)` writes it; `done(ok)` reports back.
--- `on_discard(draft)` runs when the buffer goes away uncommitted.
function M.show(draft, range, commit, on_discard, show_window)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, 'pi-sessiond://draft/' .. draft.draftId .. '.md')
  open[buf] = { draft = draft, committed = false }
  vim.bo[buf].buftype = 'acwrite'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, M.document(draft, range))
  vim.bo[buf].modified = false
  vim.bo[buf].filetype = 'markdown'
  vim.api.nvim_create_autocmd('BufWriteCmd', {
    buffer = buf,
    callback = function()
      M.commit(buf, commit)
    end,
  })
  vim.api.nvim_create_autocmd('BufWipeout', {
    buffer = buf,
    callback = function()
      local info = open[buf]
      open[buf] = nil
      if info and not info.committed then
        on_discard(info.draft)
      end
    end,
  })
  show_window(buf)
  return buf
end

--- Commit the draft of `buf` (`:w`): waits for the daemon's answer so that `:wq` works.
function M.commit(buf, commit)
  local info = open[buf]
  if not info or info.committed then
    return false
  end
  local wanted = M.commit_summary(info.draft, vim.api.nvim_buf_get_lines(buf, 0, -1, false))
  if wanted.problem then
    vim.notify('pi-sessiond: ' .. wanted.problem, vim.log.levels.WARN)
    return false
  end
  local result = nil
  commit(info.draft, wanted.summary, function(ok)
    result = ok
  end)
  vim.wait(30000, function()
    return result ~= nil
  end, 10)
  if not result then
    return false
  end
  info.committed = true
  vim.bo[buf].modified = false
  vim.schedule(function()
    if vim.api.nvim_buf_is_valid(buf) then
      vim.api.nvim_buf_delete(buf, { force = true })
    end
  end)
  return true
end

--- Buffers showing a draft (for scripts and tests).
function M.buffers()
  local out = {}
  for buf in pairs(open) do
    table.insert(out, buf)
  end
  return out
end

return M
