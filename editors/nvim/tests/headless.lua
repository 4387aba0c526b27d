-- Headless end-to-end test of the plugin against the real daemon.
--
--   nvim --headless -u NONE -c "set rtp+=editors/nvim" -c "luafile editors/nvim/tests/headless.lua"
--
-- Environment:
--   PI_TEST_SESSION       a *copy* of a Pi session file (it is written to)
--   PI_TEST_PROVIDER_URL  base URL of `python -m tests.loopback_provider` (LOOPBACK_KEY set)
--   PI_TEST_PYTHON        the Python that runs `-m pi_sessiond serve` (default python3)
--   PI_TEST_DAEMON_CMD    optional JSON list replacing the whole daemon command
--   PI_TEST_SESSIONS_DIR  optional sessionsDir (default: the session file's folder)
--   PI_TEST_TIMEOUT_MS    global timeout (default 120000)
--
-- Exits 0 when every check passed, `cquit 1` on a failed check, a Lua error
-- (also inside scheduled callbacks, seen through v:errmsg) or an error
-- message, `cquit 2` on the global timeout.

local STEP_MS = 60000

local function say(...)
  local parts = {}
  for _, value in ipairs({ ... }) do
    table.insert(parts, type(value) == 'string' and value or vim.inspect(value))
  end
  io.stdout:write(table.concat(parts, ' ') .. '\n')
  io.stdout:flush()
end

local function check(condition, what, detail)
  if not condition then
    error(string.format('check failed: %s%s', what, detail and (' — ' .. vim.inspect(detail)) or ''), 2)
  end
  say('ok   ' .. what)
end

local function wait_for(what, condition, ms)
  local ok = vim.wait(ms or STEP_MS, condition, 20)
  check(ok, what)
end

local function env(name, default)
  local value = os.getenv(name)
  if value == nil or value == '' then
    if default == nil then
      error('environment variable ' .. name .. ' is not set')
    end
    return default
  end
  return value
end

local function read_entries(path)
  local entries = {}
  for _, line in ipairs(vim.fn.readfile(path)) do
    if line ~= '' then
      table.insert(entries, vim.fn.json_decode(line))
    end
  end
  return entries
end

local function count_type(entries, entry_type)
  local count = 0
  for _, entry in ipairs(entries) do
    if entry.type == entry_type then
      count = count + 1
    end
  end
  return count
end

local function find(list, predicate)
  for i, item in ipairs(list) do
    if predicate(item) then
      return item, i
    end
  end
  return nil
end

-- Messages: any ERROR-level notification fails the run.
local messages = {}
local real_notify = vim.notify
vim.notify = function(message, level, opts)
  table.insert(messages, { message = message, level = level or vim.log.levels.INFO })
  say('note ' .. tostring(message))
  return real_notify(message, level, opts)
end

local function errors_seen()
  local out = {}
  for _, m in ipairs(messages) do
    if m.level >= vim.log.levels.ERROR then
      table.insert(out, m.message)
    end
  end
  if vim.v.errmsg ~= '' then
    table.insert(out, 'v:errmsg: ' .. vim.v.errmsg)
  end
  return out
end

local function notifications(method)
  local out = {}
  for _, n in ipairs(require('pi_sessiond').notifications()) do
    if n.method == method then
      table.insert(out, n.params)
    end
  end
  return out
end

local function setup(session_path)
  local cmd = os.getenv('PI_TEST_DAEMON_CMD')
  if cmd and cmd ~= '' then
    cmd = vim.fn.json_decode(cmd)
  else
    cmd = { env('PI_TEST_PYTHON', 'python3'), '-m', 'pi_sessiond', 'serve' }
  end
  local url = env('PI_TEST_PROVIDER_URL')
  require('pi_sessiond').setup({
    cmd = cmd,
    sessions_dir = env('PI_TEST_SESSIONS_DIR', vim.fn.fnamemodify(session_path, ':h')),
    settings = {
      summarizer = { provider = 'openai', baseUrl = url .. '/v1', model = 'loopback', apiKeyEnv = 'LOOPBACK_KEY' },
    },
    split = 'botright vsplit', -- the default: a split narrower than the editor
  })
  say('daemon: ' .. table.concat(cmd, ' '))
end

-- 1. Calls before `initialize` is answered and before the session is open are queued;
--    `:PiCompact` runs with progress and writes exactly one compaction entry.
local function test_queue_and_compact(path, state)
  local api = require('pi_sessiond')
  local client = require('pi_sessiond.client')
  local before = read_entries(path)
  state.progress_events = 0
  local progress_event = require('pi_sessiond.compat').progress_event()
  vim.api.nvim_create_autocmd(progress_event.event, {
    pattern = progress_event.pattern,
    callback = function()
      state.progress_events = state.progress_events + 1
    end,
  })

  local opened, stats = nil, nil
  api.open_session(path, { callback = function(err, result) opened = { err = err, result = result } end })
  api.stats({ callback = function(err, result) stats = { err = err, result = result } end })
  vim.cmd('PiCompact keep the file names')
  check(not client.is_ready(), 'open, stats and :PiCompact were issued before the daemon answered initialize')

  wait_for('the session opened', function() return opened ~= nil end)
  check(opened.err == nil, 'pi/openSession succeeded', opened.err)
  check(opened.result.path == path, 'the opened path is the copy', opened.result.path)
  wait_for('the queued pi/getStats answered', function() return stats ~= nil end)
  check(stats.err == nil and type(stats.result.contextWindow) == 'number', 'queued pi/getStats answered', stats)

  wait_for(':PiCompact finished (pi/compacted)', function() return #notifications('pi/compacted') > 0 end)
  wait_for('no job left running', function() return require('pi_sessiond.jobs').count() == 0 end)
  check(#errors_seen() == 0, 'no error while compacting', errors_seen())

  local log = api.progress_log()
  local kinds = {}
  for _, item in ipairs(log) do
    kinds[item.value.kind] = (kinds[item.value.kind] or 0) + 1
  end
  check(kinds.begin and kinds['end'], '$/progress begin and end arrived', kinds)
  check(log[1].token:match('^pi%-sessiond%-'), 'progress used the client workDoneToken', log[1].token)
  check(state.progress_events > 0, "Neovim's own progress event fired (" .. progress_event.event .. ')')

  local after = read_entries(path)
  local added = count_type(after, 'compaction') - count_type(before, 'compaction')
  check(added == 1, 'the file gained exactly one compaction entry', { added = added })
  local compaction = after[#after]
  check(compaction.type == 'compaction', 'the compaction entry is the last line', compaction.type)
  check(api.session().leafId == compaction.id, 'the session leaf is the compaction entry')
  check(notifications('pi/compacted')[1].reason == 'manual', 'pi/compacted says manual')
  state.compaction = compaction

  wait_for('statusline shows context usage', function() return api.statusline():match('%d+%%$') ~= nil end)
  say('statusline: ' .. api.statusline())
end

local function tree_buffer()
  local buffers = require('pi_sessiond.buffers').tree_buffers()
  return buffers[1]
end

local function leaf_line(buf)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line:find('●', 1, true) then
      return i, line
    end
  end
end

-- 2. `:PiTree` renders the tree with the active leaf marked.
local function test_tree(path, state)
  vim.cmd('PiTree')
  wait_for(':PiTree opened a tree buffer', function() return tree_buffer() ~= nil end)
  local buf = tree_buffer()
  check(vim.api.nvim_get_current_buf() == buf, 'the tree buffer is current')
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local entries = read_entries(path)
  check(#lines == #entries - 1, 'one line per entry', { lines = #lines, entries = #entries - 1 })
  local row, line = leaf_line(buf)
  check(row == vim.api.nvim_win_get_cursor(0)[1], 'the cursor is on the active leaf')
  check(line:find('compaction', 1, true) ~= nil, 'the active leaf is the compaction', line)
  check(vim.bo[buf].filetype == 'pi-sessiond-tree' and not vim.bo[buf].modifiable, 'a read-only tree buffer')
  local width = vim.api.nvim_win_get_width(0)
  local widest = 0
  for _, text in ipairs(lines) do
    widest = math.max(widest, vim.fn.strdisplaywidth(text))
  end
  check(width < vim.o.columns and widest < width, 'every line fits the split (no wrapping)',
    { widest = widest, window = width, columns = vim.o.columns })
  state.tree_buf = buf
end

-- 3. `<CR>` on an earlier user message asks how to leave the branch; "Summarize"
--    writes a branch summary, moves the leaf and re-renders the tree.
local function test_navigate(path, state)
  local buf = state.tree_buf
  local ids = {}
  for _, entry in ipairs(read_entries(path)) do
    ids[entry.id] = entry
  end
  local buffers = require('pi_sessiond.buffers')
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local target_row
  for row = #lines, 1, -1 do
    vim.api.nvim_win_set_cursor(0, { row, 0 })
    local entry = ids[buffers.entry_at_cursor()]
    if entry and entry.type == 'message' and entry.message.role == 'user' then
      target_row = row
      break
    end
  end
  check(target_row ~= nil, 'found the last user message in the tree')
  local target_id = buffers.entry_at_cursor()
  local before = read_entries(path)

  local asked
  vim.ui.select = function(items, opts, on_choice)
    asked = { items = items, prompt = opts.prompt }
    on_choice('Summarize', 2)
  end
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<CR>', true, false, true), 'x', false)
  check(asked and #asked.items == 3, '<CR> asked: no summary / summarize / with instructions', asked)

  wait_for('pi/treeNavigated arrived', function() return #notifications('pi/treeNavigated') > 0 end)
  wait_for('no job left running', function() return require('pi_sessiond.jobs').count() == 0 end)
  check(#errors_seen() == 0, 'no error while navigating', errors_seen())

  local after = read_entries(path)
  local summaries = count_type(after, 'branch_summary') - count_type(before, 'branch_summary')
  check(summaries == 1, 'the file gained one branch_summary entry', { added = summaries })
  local summary = after[#after]
  check(summary.type == 'branch_summary' and summary.summary ~= '', 'the summary is the last line, not empty')
  check(summary.parentId == ids[target_id].parentId, "the summary hangs under the target's parent")
  local session = require('pi_sessiond').session()
  check(session.leafId == summary.id, 'the session leaf moved to the summary', session.leafId)
  check(vim.fn.getreg('"') ~= '', "the target's text is in the unnamed register")
  wait_for('the tree re-rendered with the new leaf', function()
    local row = leaf_line(buf)
    return row ~= nil and vim.api.nvim_buf_get_lines(buf, row - 1, row, false)[1]:find('branch_summary', 1, true) ~= nil
  end)
end

-- 4. `:PiLabel`, `:PiContext` and `:PiStats` work on the new leaf.
local function test_label_context_stats(path)
  local label_count = count_type(read_entries(path), 'label')
  vim.cmd('PiLabel checkpoint')
  wait_for('the label entry was written', function()
    return count_type(read_entries(path), 'label') == label_count + 1
  end)
  wait_for('the tree shows the label', function()
    local lines = vim.api.nvim_buf_get_lines(tree_buffer(), 0, -1, false)
    return find(lines, function(l) return l:find('[checkpoint]', 1, true) ~= nil end) ~= nil
  end)

  vim.cmd('PiContext')
  local name = 'pi-sessiond://context/' .. require('pi_sessiond').session().sessionId
  wait_for(':PiContext opened a markdown buffer', function() return vim.fn.bufnr(name) ~= -1 end)
  local lines = vim.api.nvim_buf_get_lines(vim.fn.bufnr(name), 0, -1, false)
  check(vim.bo[vim.fn.bufnr(name)].filetype == 'markdown', 'the context buffer is markdown')
  check(find(lines, function(l) return l == '## branchSummary' end) ~= nil, 'the context ends with the branch summary')

  local before = #messages
  vim.cmd('PiStats')
  wait_for(':PiStats reported', function() return #messages > before end)
  check(messages[#messages].message:find('compactions:', 1, true) ~= nil, ':PiStats shows the counts')
end

-- `:helptags` + `:help pi-sessiond`, on a copy of the doc (no tags file in the checkout).
local function test_help()
  local source = vim.api.nvim_get_runtime_file('doc/pi-sessiond.txt', false)[1]
  check(source ~= nil, 'doc/pi-sessiond.txt is on the runtimepath')
  local root = vim.fn.tempname()
  vim.fn.mkdir(root .. '/doc', 'p')
  vim.fn.writefile(vim.fn.readfile(source), root .. '/doc/pi-sessiond.txt')
  vim.cmd('helptags ' .. vim.fn.fnameescape(root .. '/doc'))
  vim.opt.runtimepath:append(root)
  for _, tag in ipairs({ 'pi-sessiond', ':PiCompact', ':PiPreview', ':PiUndo', ':PiTree', 'pi_sessiond.setup()',
    'pi_sessiond.statusline()' }) do
    local ok, err = pcall(vim.cmd, 'help ' .. tag)
    check(ok and vim.bo.filetype == 'help', ':help ' .. tag, err)
    vim.cmd('close')
  end
end

local function run()
  local path = vim.fn.fnamemodify(env('PI_TEST_SESSION'), ':p')
  local state = {}
  say('nvim ' .. tostring(vim.version().major) .. '.' .. vim.version().minor .. '.' .. vim.version().patch)
  vim.cmd('runtime plugin/pi_sessiond.lua')
  check(vim.fn.exists(':PiCompact') == 2, 'plugin/pi_sessiond.lua defined the commands')
  setup(path)
  test_help()
  test_queue_and_compact(path, state)
  test_tree(path, state)
  test_navigate(path, state)
  test_label_context_stats(path)

  local api = require('pi_sessiond')
  api.stop()
  wait_for('the daemon stopped', function() return not require('pi_sessiond.client').is_ready() end, 10000)
  local errors = errors_seen()
  check(#errors == 0, 'no error messages and no Lua errors', errors)
end

vim.v.errmsg = ''
vim.defer_fn(function()
  say('FAIL global timeout')
  vim.cmd('cquit 2')
end, tonumber(env('PI_TEST_TIMEOUT_MS', '120000')))

local ok, err = xpcall(run, debug.traceback)
if ok then
  say('PASS')
  vim.cmd('qall!')
else
  say('FAIL ' .. tostring(err))
  vim.cmd('cquit 1')
end
