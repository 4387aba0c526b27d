-- :PiCancel of a compaction whose model never finishes answering (the loopback
-- provider in `stall` mode): the job ends within 0.5 s, reported as cancelled
-- (not an error), and the session file is unchanged.
--
-- Environment: PI_TEST_SESSION (a copy, opened), PI_TEST_PROVIDER_URL (stalling),
-- PI_TEST_PYTHON. Exits 0 when every check passed, `cquit 1` otherwise.

local function env(name)
  return assert(os.getenv(name), name .. ' is not set')
end

local function fail(what)
  io.stdout:write('FAIL ' .. what .. '\n')
  vim.cmd('cquit 1')
end

local plugin = require('pi_sessiond')
local notes = {}
vim.notify = function(message, level)
  table.insert(notes, { message = message, level = level })
end
plugin.setup({
  cmd = { env('PI_TEST_PYTHON'), '-m', 'pi_sessiond', 'serve' },
  settings = { summarizer = { provider = 'openai', baseUrl = env('PI_TEST_PROVIDER_URL') .. '/v1', model = 'm',
                              apiKeyEnv = 'LOOPBACK_KEY' },
               compaction = { keepRecentTokens = 2000 } },
})
local path = env('PI_TEST_SESSION')
local before = table.concat(vim.fn.readfile(path, 'b'), '\n')
local opened = false
plugin.open_session(path, { callback = function(err) opened = err == nil end })
if not vim.wait(60000, function() return opened end, 20) then
  fail('the session did not open')
end
plugin.compact({})
if not vim.wait(60000, function() return plugin.progress_log()[1] ~= nil and #plugin.progress_log() >= 2 end, 20) then
  fail('the compaction showed no progress')
end
vim.wait(500) -- the stream has started and stalls
local asked = vim.loop.hrtime()
plugin.cancel()
local note = nil
local ended = vim.wait(3000, function()
  for _, n in ipairs(notes) do
    if n.message:match('cancelled') then
      note = n
      return true
    end
  end
  return false
end, 5)
local ms = (vim.loop.hrtime() - asked) / 1e6
if not ended then
  fail('no cancelled report within 3 s')
end
io.stdout:write(string.format('ok   cancelled after %.0f ms: %s\n', ms, note.message))
if ms > 500 then
  fail(string.format('the cancel took %.0f ms (more than 500)', ms))
end
if note.message ~= 'pi-sessiond: cancelled' or note.level == vim.log.levels.ERROR then
  fail('reported as ' .. vim.inspect(note))
end
if table.concat(vim.fn.readfile(path, 'b'), '\n') ~= before then
  fail('the session file changed')
end
io.stdout:write('PASS\n')
plugin.stop()
vim.cmd('qall!')
