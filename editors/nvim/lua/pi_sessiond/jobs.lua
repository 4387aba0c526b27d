--- Summarizer requests (`pi/compact`, `pi/navigateTree`) as cancellable jobs.
---
--- Invariant: a job's callback runs exactly once — with the daemon's answer,
--- or with a `-32800` error when it is cancelled: at once if it was not sent
--- yet, else as soon as the daemon ends the job's progress bar (Neovim's client
--- drops a `-32800` reply, so the answer itself never arrives), or after
--- `GRACE_MS` if neither comes.
local client = require('pi_sessiond.client')
local compat = require('pi_sessiond.compat')
local progress = require('pi_sessiond.progress')
local protocol = require('pi_sessiond.protocol')
local session = require('pi_sessiond.session')

local M = {}

local GRACE_MS = 3000
local running = {} -- token -> job

local function cancelled_error()
  return { code = protocol.errors.cancelled, message = 'cancelled', data = { reason = 'cancelled' } }
end

local function settle(job, err, result)
  if job.settled then
    return
  end
  job.settled = true
  running[job.token] = nil
  progress.finish(job.token)
  job.callback(err, result)
end

--- Send `method` with `params(session_id)` on the current session as a job;
--- `callback(err, result, session_id)` runs once.
function M.start(method, params, callback)
  local job = { token = progress.new_token() }
  job.callback = function(err, result)
    callback(err, result, job.session_id)
  end
  running[job.token] = job
  session.with_session(function(session_id)
    if job.settled then
      return
    end
    job.session_id = session_id
    local body = params(session_id)
    body.workDoneToken = job.token
    client.request(method, body, function(err, result)
      settle(job, err, result)
    end, function(lsp_client, request_id)
      job.client, job.request_id = lsp_client, request_id
    end)
  end, function(err)
    settle(job, err, nil)
  end)
  return job
end

local function cancel_job(job)
  if not job.client then
    settle(job, cancelled_error(), nil)
    return
  end
  progress.when_ended(job.token, function(value)
    if value.message == 'cancelled' then -- done/failed: the real answer is on its way
      settle(job, cancelled_error(), nil)
    end
  end)
  compat.call(job.client, 'notify', 'window/workDoneProgress/cancel', { token = job.token })
  vim.defer_fn(function()
    if not job.settled then
      pcall(compat.call, job.client, 'cancel_request', job.request_id)
      settle(job, cancelled_error(), nil)
    end
  end, GRACE_MS)
end

--- Cancel every running job; returns how many were running.
function M.cancel_all()
  local count = 0
  for _, job in pairs(running) do
    count = count + 1
    cancel_job(job)
  end
  return count
end

--- The number of jobs not yet answered.
function M.count()
  local count = 0
  for _ in pairs(running) do
    count = count + 1
  end
  return count
end

return M
