-- The README's setup: `require('pi_sessiond').setup({})` with nothing else, the
-- daemon found as `pi-sessiond` on $PATH. Lua encodes an empty table as `[]`;
-- the daemon must still start and answer.
--
--   nvim --headless -u NONE -c "set rtp+=editors/nvim" -c "luafile editors/nvim/tests/setup_empty.lua"
--
-- Exits 0 when a request was answered, `cquit 1` otherwise.

local plugin = require('pi_sessiond')
plugin.setup({})
local answer, failure = nil, nil
plugin.list_sessions({ cwd = vim.fn.getcwd(), callback = function(err, result)
  failure, answer = err, result
end })
local ok = vim.wait(60000, function()
  return answer ~= nil or failure ~= nil
end, 20)
if ok and failure == nil and type(answer.sessions) == 'table' then
  io.stdout:write('ok   setup({}) started the daemon and pi/listSessions answered\n')
  plugin.stop()
  vim.cmd('qall!')
else
  io.stdout:write('FAIL ' .. vim.inspect({ waited = ok, err = failure, result = answer }) .. '\n')
  vim.cmd('cquit 1')
end
