-- Headless test of preview / edit / commit / discard / undo against the real daemon.
--
--   nvim --headless -u NONE -c "set rtp+=editors/nvim" -c "luafile editors/nvim/tests/drafts.lua"
--
-- Environment and exits: see support.lua. The summarizer is the offline one.

local t = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/support.lua')
local check, wait_for, said, errors_seen = t.check, t.wait_for, t.said, t.errors_seen
local read_entries, context, messages = t.read_entries, t.context, t.messages

local drafts = require('pi_sessiond.drafts')

-- The header and the summary round trip (pure).
local function test_document()
  local draft = { draftId = 'd-1', kind = 'compaction', summary = '## Goal\nShip -->it\n', tokensBefore = 50000,
    estimatedTokensAfter = 9000, gate = { added = { { kind = 'modifiedFile', text = 'src/a -->b.ts' } } } }
  local nodes = {
    { id = 'u1', type = 'message', preview = 'first' },
    { id = 'a1', parentId = 'u1', type = 'message', preview = 'answer' },
    { id = 'c1', parentId = 'a1', type = 'compaction' },
    { id = 'u2', parentId = 'c1', type = 'message', preview = 'second -->request' },
    { id = 'a2', parentId = 'u2', type = 'message', preview = 'second answer' },
  }
  local range = drafts.replaced_range(nodes, 'a2', 'a2', { c1 = 'a1' })
  check(range.count == 2 and range.first.id == 'a1' and range.last.id == 'u2' and range.previous_summary,
    'the range runs from the earlier compaction\'s kept entry to the new one', range)
  local lines = drafts.document(draft, range)
  local text = table.concat(lines, '\n')
  check(lines[1]:find(drafts.MARK, 1, true) == 1, 'the buffer starts with the draft mark')
  check(text:find('Replaces: 2 messages, from "answer" to "second –request" and the previous summary', 1, true),
    'the header says what it replaces', lines)
  check(text:find('Tokens: 50k → ~9k', 1, true) and text:find('  - modifiedFile: src/a –b.ts', 1, true),
    'the header has the tokens and the gate\'s additions', lines)
  check(drafts.summary_of(lines) == draft.summary, 'the summary below the header is the draft\'s exactly')
  local many = {}
  for i = 1, 13 do
    table.insert(many, { kind = i <= 3 and 'goal' or 'todo', text = 'item ' .. i })
  end
  local long = table.concat(drafts.document(vim.tbl_extend('force', draft, { gate = { added = many } })), '\n')
  check(long:find('Fidelity gate added 13 (goal ×3, todo ×10):', 1, true)
    and long:find('  - todo: item 10\n  … and 3 more, all in the summary below\n', 1, true)
    and not long:find('item 11', 1, true), 'the header lists the first 10 additions and counts the rest')
  check(vim.tbl_isempty(drafts.commit_summary(draft, lines)), 'unchanged: the commit sends no summary')
  lines[#lines] = 'More.'
  check(drafts.commit_summary(draft, lines).summary == draft.summary .. 'More.', 'edited: the commit sends the text')
  check(drafts.commit_summary(draft, { lines[1], '-->', ' ' }).problem ~= nil, 'an empty summary is refused')
end

-- Errors of undo and commit read as sentences; a live Pi's message (with its command) is kept.
local function test_errors()
  local describe = require('pi_sessiond.errors').describe
  local conflict = { message = 'm', data = { reason = 'conflict' } }
  check(describe(conflict, 'undo'):find('no longer the leaf', 1, true), 'undo conflict: a sentence')
  check(describe(conflict, 'commit'):find('changed since the preview', 1, true), 'commit conflict: a sentence')
  check(describe(conflict) == 'm (conflict)', 'other conflicts: the daemon\'s message and reason')
  local expired = { message = 'x', data = { reason = 'invalidParams', draftState = 'expired' } }
  check(describe(expired, 'commit'):find('draft expired', 1, true), 'an expired draft says so')
  local live = { message = 'Pi (pid 7) has this session open; undo it there: type /tree in Pi',
    data = { reason = 'liveWriter', piCommand = '/tree' } }
  check(describe(live, 'undo') == live.message .. ' (liveWriter)', 'a live Pi: the message names the Pi command')
end

-- :PiPreview → :q! writes nothing; :PiPreview → edit → :w writes the edited summary.
local function test_preview(path)
  local before = #read_entries(path)
  local mark = #messages + 1
  vim.cmd('PiPreview')
  wait_for(':PiPreview opened a draft buffer', function() return #drafts.buffers() == 1 end)
  local buf = drafts.buffers()[1]
  check(vim.api.nvim_get_current_buf() == buf and vim.bo[buf].filetype == 'markdown', 'the draft is current, markdown')
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  check(table.concat(lines, '\n'):find('Replaces: %d+ messages') ~= nil, 'the header says what it replaces', lines)
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { 'changed and then thrown away' })
  vim.cmd('quit!')
  wait_for('discarding says so', function() return said('draft discarded; nothing was written', mark) ~= nil end)
  check(#drafts.buffers() == 0 and #read_entries(path) == before, ':q! discarded the draft: the file is unchanged')

  vim.cmd('PiPreview')
  wait_for('a second draft buffer', function() return #drafts.buffers() == 1 end)
  buf = drafts.buffers()[1]
  check(#read_entries(path) == before, 'a preview writes nothing')
  local draft = drafts.draft_of(buf)
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { '', '## Reviewer note', 'Keep the retry logic as it is.' })
  vim.cmd('write')
  wait_for('the draft buffer is gone after :w', function() return not vim.api.nvim_buf_is_valid(buf) end)
  local entries = read_entries(path)
  local last = entries[#entries]
  check(#entries == before + 1 and last.type == 'compaction', ':w wrote one compaction entry')
  check(last.summary:find('## Reviewer note\nKeep the retry logic as it is.', 1, true) ~= nil,
    'the entry holds the edited summary', last.summary:sub(-200))
  check(said('your edited summary was written') ~= nil, 'the message says the edit was written')

  -- The same draft again: refused, with a sentence (an ERROR message, removed from the log after).
  local answered
  require('pi_sessiond').commit_draft(draft, nil, function(ok) answered = ok end)
  wait_for('a second commit of the draft is answered', function() return answered ~= nil end)
  local refused = said('commit failed: that draft was already committed')
  check(answered == false and refused ~= nil, 'a second commit says the draft was already committed')
  for i, m in ipairs(messages) do
    if m == refused then
      table.remove(messages, i)
    end
  end
  check(#read_entries(path) == before + 1, 'the refused commit wrote nothing')
  return last
end

-- :PiUndo of the compaction at the leaf: the context is the one before it.
local function test_undo(path, compaction, context_before)
  local api = require('pi_sessiond')
  check(api.session().leafId == compaction.id, 'the leaf is the committed compaction')
  vim.cmd('PiUndo')
  wait_for(':PiUndo reported', function() return said('undid the compaction') ~= nil end)
  check(vim.deep_equal(context(), context_before), 'after :PiUndo the context equals the context before the compaction')
  local last = read_entries(path)[#read_entries(path)]
  check(last.customType == 'pi-sessiond.undo' and last.parentId == compaction.parentId,
    'an undo entry under its parent')
  local mark = #messages + 1
  vim.cmd('PiUndo')
  wait_for('a second :PiUndo says there is nothing to undo',
    function() return said('nothing to undo', mark) ~= nil end)
end

local function run()
  local path = t.setup({ compaction = { keepRecentTokens = 2000 } })
  test_document()
  test_errors()
  t.open(path)
  local before = context()
  local compaction = test_preview(path)
  test_undo(path, compaction, before)
  check(#errors_seen() == 0, 'no error messages', errors_seen())
end

t.main(run)
