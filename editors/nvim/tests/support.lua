-- What the headless tests against the real daemon share (drafts.lua, masking.lua):
-- output, checks, the notifications seen, the session file, requests, and the runner.
--
--   local t = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/support.lua')
--
-- Environment: PI_TEST_SESSION (a *copy* of a session file; it is written to),
-- PI_TEST_PYTHON (runs `-m pi_sessiond serve`), PI_TEST_TIMEOUT_MS (default 120000).
-- `t.main(run)` exits 0 after printing PASS, `cquit 1` on a failed check or a Lua
-- error, `cquit 2` on the global timeout.

local M = {}

local STEP_MS = 60000

function M.say(...)
  io.stdout:write(table.concat(vim.tbl_map(function(v)
    return type(v) == 'string' and v or vim.inspect(v)
  end, { ... }), ' ') .. '\n')
  io.stdout:flush()
end

function M.check(condition, what, detail)
  if not condition then
    error(string.format('check failed: %s%s', what, detail and (' — ' .. vim.inspect(detail)) or ''), 2)
  end
  M.say('ok   ' .. what)
end

function M.wait_for(what, condition, ms)
  M.check(vim.wait(ms or STEP_MS, condition, 20), what)
end

--- Every vim.notify message since this module loaded: `{message, level}` (tests may remove some).
M.messages = {}
local real_notify = vim.notify
vim.notify = function(message, level, opts)
  table.insert(M.messages, { message = tostring(message), level = level or vim.log.levels.INFO })
  M.say('note ' .. tostring(message))
  return real_notify(message, level, opts)
end

--- The first message from index `from` on whose text matches `pattern`, or nil.
function M.said(pattern, from)
  for i = from or 1, #M.messages do
    if M.messages[i].message:find(pattern) then
      return M.messages[i]
    end
  end
  return nil
end

--- The texts of the error messages seen.
function M.errors_seen()
  local out = {}
  for _, m in ipairs(M.messages) do
    if m.level >= vim.log.levels.ERROR then
      table.insert(out, m.message)
    end
  end
  return out
end

--- The session file's lines, decoded.
function M.read_entries(path)
  local out = {}
  for _, line in ipairs(vim.fn.readfile(path)) do
    if line ~= '' then
      table.insert(out, vim.fn.json_decode(line))
    end
  end
  return out
end

--- One request through the plugin's client, waited for; a failed check on an error.
function M.call(method, params)
  local done
  require('pi_sessiond').request(method, params, function(err, result)
    done = { err = err, result = result }
  end)
  M.wait_for('answer to ' .. method, function() return done ~= nil end)
  M.check(done.err == nil, method .. ' succeeded', done.err)
  return done.result
end

--- The context of the plugin's current session.
function M.context()
  return M.call('pi/getContext', { sessionId = require('pi_sessiond').session().sessionId }).messages
end

--- The plugin set up on the test's daemon with `settings`; the session file's absolute path.
function M.setup(settings)
  local path = vim.fn.fnamemodify(os.getenv('PI_TEST_SESSION'), ':p')
  vim.cmd('runtime plugin/pi_sessiond.lua')
  require('pi_sessiond').setup({
    cmd = { os.getenv('PI_TEST_PYTHON') or 'python3', '-m', 'pi_sessiond', 'serve' },
    sessions_dir = vim.fn.fnamemodify(path, ':h'),
    settings = settings,
  })
  return path
end

--- Open `path` in the plugin and wait until it is open.
function M.open(path)
  local opened
  require('pi_sessiond').open_session(path, { callback = function(err) opened = err or true end })
  M.wait_for('the session opened', function() return opened ~= nil end)
  M.check(opened == true, 'pi/openSession succeeded', opened)
end

--- Run `run` under the global timeout; PASS and exit 0, or FAIL and cquit.
function M.main(run)
  vim.v.errmsg = ''
  vim.defer_fn(function()
    M.say('FAIL global timeout')
    vim.cmd('cquit 2')
  end, tonumber(os.getenv('PI_TEST_TIMEOUT_MS') or '120000'))
  local ok, err = xpcall(run, debug.traceback)
  if ok then
    M.say('PASS')
    vim.cmd('qall!')
  else
    M.say('FAIL ' .. tostring(err))
    vim.cmd('cquit 1')
  end
end

return M
