--- The daemon connection: one `pi-sessiond` per Neovim, started on first use
--- through Neovim's LSP client.
---
--- Invariant: nothing is sent before the daemon has answered `initialize`;
--- work asked for earlier waits in `pending` and runs, in order, once it has.
--- If the daemon exits, waiting work fails with an error instead of hanging.
local compat = require('pi_sessiond.compat')

local M = {}

local NAME = 'pi-sessiond'

local config = { cmd = { 'pi-sessiond' }, settings = nil, sessions_dir = nil, handlers = {} }
local client_id = nil
local ready = false
local pending = {} -- { run = function(client), fail = function(err) }

--- Set the daemon command, settings and handlers; takes effect at the next start.
function M.configure(opts)
  config = vim.tbl_extend('force', config, opts)
end

-- An empty Lua table is encoded as `[]`: objects that may be empty are built
-- from vim.empty_dict() so the daemon always gets JSON objects.
local function object(tbl)
  if tbl == nil or next(tbl) == nil then
    return vim.empty_dict()
  end
  return tbl
end

local function init_options()
  local options = vim.empty_dict()
  if config.settings ~= nil then
    options.settings = object(config.settings)
  end
  if config.sessions_dir ~= nil then
    options.sessionsDir = vim.fn.fnamemodify(vim.fn.expand(config.sessions_dir), ':p')
  end
  return options
end

local function flush()
  local queue = pending
  pending = {}
  local client = compat.get_client(client_id)
  for _, job in ipairs(queue) do
    if client then
      job.run(client)
    else
      job.fail({ code = -32099, message = 'pi-sessiond is not running' })
    end
  end
end

local function on_exit(code, signal, id)
  if id ~= client_id then
    return
  end
  client_id, ready = nil, false
  if config.on_exit then
    config.on_exit(code, signal) -- may run in a fast event: it only sets flags
  end
  vim.schedule(flush)
end

local function start()
  ready = false
  client_id = compat.start_client({
    name = NAME,
    cmd = config.cmd,
    cmd_env = config.cmd_env,
    root_dir = compat.uv.cwd(),
    init_options = init_options(),
    handlers = config.handlers,
    on_init = function()
      ready = true
      vim.schedule(flush)
    end,
    on_exit = on_exit,
  })
  return client_id ~= nil
end

--- Run `run(client)` once the daemon is initialized (starting it if needed);
--- `fail(err)` if it never gets there.
function M.when_ready(run, fail)
  fail = fail or function() end
  if not client_id and not start() then
    local command = table.concat(config.cmd, ' ')
    vim.schedule(function() -- callbacks never run before their call returns
      fail({ code = -32099, message = string.format('could not start the daemon (%s)', command) })
    end)
    return
  end
  if ready and compat.get_client(client_id) then
    run(compat.get_client(client_id))
  else
    table.insert(pending, { run = run, fail = fail })
  end
end

--- Send a request once ready; `callback(err, result)`. Returns nothing: the
--- request id is passed to `on_sent(client, request_id)` when it is sent.
function M.request(method, params, callback, on_sent)
  if type(params) == 'table' and next(params) == nil then
    params = vim.empty_dict() -- `{}` would go out as `[]`
  end
  M.when_ready(function(client)
    local ok, request_id = compat.call(client, 'request', method, params, function(err, result)
      callback(err, result)
    end, 0)
    if not ok then
      callback({ code = -32099, message = 'pi-sessiond is not running' }, nil)
    elseif on_sent then
      on_sent(client, request_id)
    end
  end, function(err)
    callback(err, nil)
  end)
end

--- Send a notification once ready.
function M.notify(method, params)
  M.when_ready(function(client)
    compat.call(client, 'notify', method, params)
  end)
end

--- The running client, or nil (never starts the daemon).
function M.get()
  return ready and compat.get_client(client_id) or nil
end

function M.is_ready()
  return M.get() ~= nil
end

--- Stop the daemon (`shutdown` + `exit`); queued work fails.
function M.stop()
  local client = compat.get_client(client_id)
  if client then
    compat.call(client, 'stop')
  end
end

return M
