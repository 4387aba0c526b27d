-- Headless test of a big session opened tail-first against the real daemon: the open says
-- the rest is being read, the context is there at once, and the warnings of the whole file
-- follow (`pi/sessionLoaded`).
--
--   nvim --headless -u NONE -c "set rtp+=editors/nvim" -c "luafile editors/nvim/tests/loading.lua"
--
-- Environment and exits: see support.lua. PI_TEST_SESSION has a broken line in its middle.

local t = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/support.lua')
local check, wait_for, said = t.check, t.wait_for, t.said

t.main(function()
  local path = t.setup({ daemon = { tailOpenBytes = 1 } }) -- every file opens tail-first
  require('pi_sessiond').open_session(path) -- as :PiOpen does: the result is a message
  wait_for('the open says the rest of the file is being read', function()
    return said('reading the rest of it') ~= nil
  end)
  check(#t.context() > 0, 'the context is there at once')
  wait_for('the whole file was read', function() return said('line %d+: ') ~= nil end)
  check(said('line %d+: ').level == vim.log.levels.WARN, 'its broken line is a warning')
  local stats = t.call('pi/getStats', { sessionId = require('pi_sessiond').session().sessionId })
  check(type(stats.messageCounts) == 'table', 'the session answers what needs the whole file')
end)
