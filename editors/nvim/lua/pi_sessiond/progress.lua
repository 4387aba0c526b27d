--- Work-done progress of summarizer runs: kept per token for `statusline()`
--- and passed on to Neovim's own `$/progress` handler, so whatever shows LSP
--- progress (`vim.lsp.status()`, fidget-like plugins) shows ours too.
local compat = require('pi_sessiond.compat')

local M = {}

local LOG_SIZE = 200

local jobs = {} -- token -> { title, message, percentage, done, started }
local on_end = {} -- token -> function(value): called once when that token's `end` arrives
local log = {} -- the last LOG_SIZE `$/progress` values, oldest first
local counter = 0

--- A fresh client-side `workDoneToken`.
function M.new_token()
  counter = counter + 1
  return string.format('pi-sessiond-%d-%d', compat.uv.getpid(), counter)
end

local function record(token, value)
  table.insert(log, { token = token, value = value })
  if #log > LOG_SIZE then
    table.remove(log, 1)
  end
  if value.kind == 'end' and on_end[token] then
    local listener = on_end[token]
    on_end[token] = nil
    listener(value)
  end
  if value.kind == 'end' and not jobs[token] then
    return -- its request has already answered
  end
  local job = jobs[token] or { started = compat.uv.now() }
  jobs[token] = job
  if value.kind == 'begin' then
    job.title = value.title
  end
  job.message = value.message or job.message
  job.percentage = value.percentage or job.percentage
  job.done = value.kind == 'end'
end

--- The `$/progress` handler installed on the pi-sessiond client.
function M.handler(err, result, ctx, config)
  if type(result) == 'table' and type(result.value) == 'table' then
    record(result.token, result.value)
  end
  local builtin = vim.lsp.handlers['$/progress']
  if builtin then
    pcall(builtin, err, result, ctx, config)
  end
  compat.fire_user_event('PiSessiondProgress')
  vim.cmd('redrawstatus')
  return vim.NIL
end

--- Call `listener(value)` once when the `end` of `token` arrives.
function M.when_ended(token, listener)
  on_end[token] = listener
end

--- Forget a token once its request has answered.
function M.finish(token)
  jobs[token] = nil
  on_end[token] = nil
  vim.cmd('redrawstatus')
end

--- The most recently started job that has not ended, or nil.
function M.active()
  local best
  for _, job in pairs(jobs) do
    if not job.done and (best == nil or job.started > best.started) then
      best = job
    end
  end
  return best
end

--- A copy of the recorded `$/progress` values: `{ {token, value}, … }`.
function M.log()
  return vim.deepcopy(log)
end

--- One line describing the active job, or nil.
function M.describe(job)
  job = job or M.active()
  if not job then
    return nil
  end
  local text = job.title or 'working'
  if job.percentage then
    text = string.format('%s %d%%', text, job.percentage)
  end
  if job.message and job.message ~= '' then
    text = text .. ': ' .. job.message
  end
  return text
end

return M
