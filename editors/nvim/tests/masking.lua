-- Headless test of masked tool output against the real daemon: :PiMask (the dry run's
-- question), the tree's marks, :PiOriginal, :PiUnmask and :PiUnmask!.
--
--   nvim --headless -u NONE -c "set rtp+=editors/nvim" -c "luafile editors/nvim/tests/masking.lua"
--
-- Environment and exits: see support.lua. The summarizer is the offline one.

local t = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/support.lua')
local check, wait_for, said, errors_seen = t.check, t.wait_for, t.said, t.errors_seen
local read_entries, context, messages = t.read_entries, t.context, t.messages

local masking = require('pi_sessiond.masking')

local PLACEHOLDER = table.concat({
  '[masked tool output: bash — the original is entry t2; pi/unmask restores it]',
  'arguments: {"command": "cd src && npm test"}',
  'outcome: error (exit code 1); 5200 characters, 120 lines',
  'last lines:',
  'FAIL a.test.ts',
}, '\n')

-- Placeholders, edits and the masked state of the leaf's context (pure).
local function test_pure()
  local p = masking.parse_placeholder(PLACEHOLDER)
  check(p.tool == 'bash' and p.original_id == 't2' and p.target == 'cd src && npm test'
    and p.size == 'error (exit code 1); 5200 characters, 120 lines', 'a placeholder names tool, target and size', p)
  local first_line = PLACEHOLDER:match('^[^\n]+')
  local clipped = masking.parse_placeholder(first_line .. '\narguments: {"path": "/repo/src/long.ts", "x": 1…')
  check(clipped.target == 'long.ts', 'a clipped arguments line still gives the target', clipped)
  local nodes = {
    { id = 'u1', type = 'message', role = 'user', preview = 'run the tests' },
    { id = 't1', parentId = 'u1', type = 'message', role = 'toolResult', preview = 'x' },
    { id = 't2', parentId = 't1', type = 'message', role = 'toolResult', preview = 'FAIL' },
    { id = 'e1', parentId = 't2', type = 'context_edit', preview = 't1: [masked tool output: read — the original…' },
    { id = 'e2', parentId = 'e1', type = 'context_edit', preview = 't2: [masked tool output: bash — the original…' },
    { id = 'e3', parentId = 'e2', type = 'context_edit', preview = 't2: FAIL a.test.ts' },
  }
  for i = 1, #nodes - 1 do
    nodes[i].childIds, nodes[i].onActivePath, nodes[i + 1].onActivePath = { nodes[i + 1].id }, true, true
  end
  local entries = { e2 = { targetId = 't2', replacement = { content = { { type = 'text', text = PLACEHOLDER } } } } }
  local tree = masking.annotate({ nodes = nodes, leafId = 'e3' }, entries)
  check(vim.deep_equal(vim.tbl_keys(tree.masked), { 't1' }),
    'the latest edit per target decides: t1 masked, t2 restored',
    tree.masked)
  check(tree.marks.e3.label == 'restored bash cd src && npm test' and tree.marks.t1.note == 'masked',
    'a restore reads as "restored <tool> <target>"; the masked result is marked', tree.marks)
  check(tree.marks.e2.note == '→ t2 · error (exit code 1); 5200 characters, 120 lines',
    'an edit notes its target and size')
  local detail = table.concat(masking.detail_lines(nodes[5], tree.marks.e2), '\n')
  check(detail:find('masked bash cd src && npm test → t2', 1, true) and detail:find('FAIL a.test.ts', 1, true),
    'K in the tree shows an edit\'s label and its whole placeholder', detail)
  local compaction = { id = 'c1', parentId = 'e1', type = 'compaction' }
  local compacted = vim.list_extend(vim.list_slice(nodes, 1, 4), { compaction })
  check(vim.tbl_isempty(masking.masked_targets(compacted, 'c1', { e1 = masking.edit_info(nodes[4]) })),
    'a result summarized away by a compaction is not masked in the context')
  local lines = require('pi_sessiond.render').tree_lines(nodes, 'e3', 120, nil, tree.marks)
  check(lines[2]:find('toolResult (masked): x', 1, true)
    and lines[6]:find('● restored bash cd src && npm test (→ t2)', 1, true),
    'the tree lines show the marks', lines)
  check(masking.question({ edits = { {}, {} }, tokensBefore = 180820, tokensAfter = 96774 })
    == 'mask 2 tool results, frees ~84k tokens?', 'the question counts and frees tokens')
  local describe = require('pi_sessiond.errors').describe
  local stale = { message = 'm', data = { reason = 'invalidParams', entryId = 't1' } }
  check(describe(stale, 'unmask'):find('not masked in the context of the leaf', 1, true), 'a stale unmask: a sentence')
  local live = { message = 'Pi (pid 7) has this session open; trim the context there: type /compact in Pi',
    data = { reason = 'liveWriter', piCommand = '/compact' } }
  check(describe(live, 'mask') == live.message .. ' (liveWriter)', 'a live Pi: the message names the Pi command')
end

local function count_edits(path)
  local n = 0
  for _, entry in ipairs(read_entries(path)) do
    n = n + (entry.type == 'context_edit' and 1 or 0)
  end
  return n
end

local function tree_buffer_text()
  local buf = require('pi_sessiond.buffers').tree_buffers()[1]
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
end

-- :PiMask asks with the dry run's numbers; "Mask" writes the edits; the tree marks them.
local function test_mask(path)
  local before = #read_entries(path)
  local asked
  vim.ui.select = function(items, opts, on_choice)
    asked = opts.prompt
    on_choice(items[1])
  end
  vim.cmd('PiMask')
  wait_for(':PiMask reported', function() return said('masked %d+ tool results') ~= nil end)
  local n = tonumber(asked:match('mask (%d+) tool results, frees ~[%d.]+k tokens%?'))
  check(n and n > 0, 'the question came first, with the count and the tokens freed', asked)
  check(count_edits(path) == n and #read_entries(path) == before + n, 'one context edit per masked result')
  vim.cmd('PiTree')
  wait_for('the tree shows the edits', function()
    return #require('pi_sessiond.buffers').tree_buffers() == 1 and tree_buffer_text():find('masked · ok', 1, true)
  end)
  check(tree_buffer_text():find('masked %a+ [^\n]* %(→ %x+') ~= nil,
    'an edit reads as "masked <tool> <target>"', tree_buffer_text():sub(-600))
  return n
end

-- :PiOriginal on an edit opens its target as stored; :PiUnmask restores one, :PiUnmask! the rest.
local function test_original_and_unmask(path, n, context_before)
  local entries = read_entries(path)
  local edit = entries[#entries]
  local original
  for _, entry in ipairs(entries) do
    if entry.id == edit.targetId then
      original = entry
    end
  end
  vim.cmd('PiOriginal ' .. edit.id)
  local name = 'pi-sessiond://original/' .. require('pi_sessiond').session().sessionId .. '/' .. edit.targetId
  wait_for(':PiOriginal opened the stored output', function() return vim.fn.bufnr(name) ~= -1 end)
  local lines = vim.api.nvim_buf_get_lines(vim.fn.bufnr(name), 0, -1, false)
  local body = table.concat(vim.list_slice(lines, 5), '\n')
  check(body == masking.content_text(original.message.content),
    'the buffer holds the full original, not the placeholder')
  check(lines[3]:find('Masked in the context', 1, true) ~= nil, 'the header says it is masked now', lines[3])
  vim.cmd('PiUnmask ' .. edit.id)
  wait_for(':PiUnmask reported', function() return said('restored 1 tool result') ~= nil end)
  vim.cmd('PiUnmask!')
  wait_for(':PiUnmask! reported', function() return said(string.format('restored %d tool results', n - 1)) ~= nil end)
  check(count_edits(path) == 2 * n, 'one restoring edit per masked result')
  local entries_count = #read_entries(path) - 2 * n
  check(vim.deep_equal(context(), context_before), 'after :PiUnmask! the context equals the context before :PiMask')
  -- `m` in the tree: one named result; masking it again is refused with a sentence.
  local target = edit.targetId
  local answer
  masking.mask({ entry_ids = { target }, callback = function(err, result) answer = { err = err, result = result } end })
  wait_for('masking one result is answered', function() return answer ~= nil end)
  check(answer.err == nil and #answer.result.edits == 1 and answer.result.edits[1].targetId == target,
    'one named result is masked', answer)
  answer = nil
  masking.mask({ entry_ids = { target }, callback = function(err) answer = { err = err } end })
  wait_for('masking it again is answered', function() return answer ~= nil end)
  check(answer.err and require('pi_sessiond.errors').describe(answer.err, 'mask')
    :find('not an unmasked tool result', 1, true), 'masking it again is refused with a sentence', answer)
  vim.cmd('PiUnmask ' .. target)
  wait_for('it is restored again', function() return #read_entries(path) == entries_count + 2 * n + 2 end)
  check(vim.deep_equal(context(), context_before), 'the context is the one before :PiMask again')
  local mark = #messages + 1
  vim.cmd('PiUnmask!')
  wait_for('a second :PiUnmask! says nothing is masked', function()
    return said('no tool result is masked', mark) ~= nil
  end)
end

local function run()
  local path = t.setup()
  test_pure()
  t.open(path)
  local before = context()
  local n = test_mask(path)
  test_original_and_unmask(path, n, before)
  local errs = vim.tbl_filter(function(m) return not m:find('no tool result is masked', 1, true) end, errors_seen())
  check(#errs == 0, 'no error messages', errs)
end

t.main(run)
