--- Every difference between Neovim versions (0.7 and later) lives here.
---
--- 0.7 has `vim.lsp.start_client` and dot-called client functions; 0.10 moved
--- progress to `client.progress` + the `LspProgress` event and renamed
--- `get_active_clients` and `vim.loop` (now `vim.uv`); 0.11 deprecated `start_client` (use `vim.lsp.start`
--- with `attach = false`) and made client functions methods (`client:request`).
local M = {}

local function has(version)
  return vim.fn.has('nvim-' .. version) == 1
end

M.nvim_0_10 = has('0.10')
M.nvim_0_11 = has('0.11')

--- libuv bindings: `vim.uv` from 0.10, `vim.loop` before.
M.uv = vim.uv or vim.loop

--- Start an LSP client that is attached to no buffer; returns its id or nil.
function M.start_client(config)
  if M.nvim_0_11 then
    return vim.lsp.start(config, { attach = false, silent = true })
  end
  return vim.lsp.start_client(config)
end

--- Call a client function (`request`, `notify`, `stop`, `cancel_request`),
--- as a method on 0.11+ and as a plain function before.
function M.call(client, name, ...)
  if M.nvim_0_11 then
    return client[name](client, ...)
  end
  return client[name](...)
end

function M.get_client(id)
  return id and vim.lsp.get_client_by_id(id) or nil
end

function M.is_stopped(client)
  if M.nvim_0_11 then
    return client:is_stopped()
  end
  return client.is_stopped()
end

--- The autocmd that Neovim's own `$/progress` handler fires.
function M.progress_event()
  if M.nvim_0_10 then
    return { event = 'LspProgress', pattern = '*' }
  end
  return { event = 'User', pattern = 'LspProgressUpdate' }
end

--- Neovim's built-in progress text (what statusline plugins show), or ''.
function M.builtin_progress_status()
  if M.nvim_0_10 then
    return vim.lsp.status()
  end
  local parts = {}
  for _, msg in ipairs(vim.lsp.util.get_progress_messages()) do
    local text = msg.title or ''
    if msg.message then
      text = text .. ': ' .. msg.message
    end
    if msg.percentage then
      text = text .. string.format(' (%d%%)', msg.percentage)
    end
    table.insert(parts, text)
  end
  return table.concat(parts, ', ')
end

--- Set a buffer option (`vim.bo` exists from 0.7 on; kept here for one place).
function M.set_buf_options(buf, options)
  for name, value in pairs(options) do
    vim.bo[buf][name] = value
  end
end

--- Fire `User <pattern>`; 0.7 lacks `data` in `nvim_exec_autocmds`.
function M.fire_user_event(pattern)
  if #vim.api.nvim_get_autocmds({ event = 'User', pattern = pattern }) > 0 then
    vim.api.nvim_exec_autocmds('User', { pattern = pattern, modeline = false })
  end
end

return M
