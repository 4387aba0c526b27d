--- Scratch buffers: the `:PiTree` view (one per session, kept in sync with the
--- daemon's notifications) and read-only markdown views such as `:PiContext`.
local compat = require('pi_sessiond.compat')
local render = require('pi_sessiond.render')

local M = {}

local trees = {} -- bufnr -> { session_id, ids, leaf_id, folds }
local split_cmd = 'botright vsplit'

--- Set the command that opens a view window (`setup({split = …})`).
function M.set_split(cmd)
  split_cmd = cmd
end

local function scratch(name, filetype)
  local buf = vim.fn.bufnr(name)
  if buf == -1 or not vim.api.nvim_buf_is_valid(buf) then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
  end
  compat.set_buf_options(buf, {
    buftype = 'nofile',
    bufhidden = 'hide',
    swapfile = false,
    filetype = filetype,
  })
  return buf
end

local function set_lines(buf, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
end

local function show(buf)
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    vim.cmd(split_cmd)
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
  else
    vim.api.nvim_set_current_win(win)
  end
  return win
end

--- Show `buf` in the view window (the split of `setup({split = …})`), or focus it.
function M.show_buffer(buf)
  return show(buf)
end

--- Show `lines` in a read-only scratch buffer named `name` (`filetype`, default markdown).
function M.show_text(name, lines, filetype)
  local buf = scratch(name, filetype or 'markdown')
  set_lines(buf, lines)
  show(buf)
  return buf
end

--- Show `lines` in a read-only markdown scratch buffer named `name`.
function M.show_markdown(name, lines)
  return M.show_text(name, lines, 'markdown')
end

local function tree_keymaps(buf)
  local function map(lhs, fn, desc)
    vim.keymap.set('n', lhs, fn, { buffer = buf, silent = true, nowait = true, desc = desc })
  end
  map('<CR>', function()
    require('pi_sessiond.commands').navigate_prompt(M.entry_at_cursor())
  end, 'pi-sessiond: navigate to this entry')
  map('R', function()
    M.refresh(trees[buf].session_id)
  end, 'pi-sessiond: refresh the tree')
  map('o', function()
    local id = M.entry_at_cursor()
    return id and require('pi_sessiond.masking').show_original(id)
  end, 'pi-sessiond: show the original tool output')
  map('u', function()
    local id = M.entry_at_cursor()
    if id then
      require('pi_sessiond.masking').unmask({ require('pi_sessiond.masking').target_of(trees[buf].result or {}, id) })
    end
  end, 'pi-sessiond: unmask this tool output')
  map('K', function()
    local id, result = M.entry_at_cursor(), trees[buf].result or {}
    for _, node in ipairs(id and result.nodes or {}) do
      if node.id == id then
        local lines = require('pi_sessiond.masking').detail_lines(node, (result.marks or {})[id])
        return vim.lsp.util.open_floating_preview(lines, 'text', { border = 'single', max_width = 100 })
      end
    end
  end, 'pi-sessiond: the entry in detail (a masked result: its placeholder)')
  map('m', function()
    local id = M.entry_at_cursor()
    return id and require('pi_sessiond.masking').mask({ entry_ids = { id } })
  end, 'pi-sessiond: mask this tool output')
  map('q', '<cmd>close<CR>', 'pi-sessiond: close')
end

--- The text width of the window showing `buf` (the split, not the whole editor).
local function window_width(buf)
  local win = vim.fn.bufwinid(buf)
  local width = win ~= -1 and vim.api.nvim_win_get_width(win) or vim.o.columns
  return math.max(20, width - 1) -- one column spare: nothing wraps at the edge
end

--- 'foldexpr' of a tree buffer: each turn (a user message and the assistant's work) is one fold.
function M.foldexpr(lnum)
  local info = trees[vim.api.nvim_get_current_buf()]
  return info and info.folds and info.folds[lnum] or '0'
end

--- 'foldtext' of a tree buffer: the user line itself (it already sums the turn up), marked ▸.
function M.foldtext()
  local line = vim.fn.getline(vim.v.foldstart)
  local indent = line:match('^%s*')
  for _, mark in ipairs({ '●', '•', '·' }) do -- multibyte: not a Lua character class
    if line:sub(#indent + 1, #indent + #mark) == mark then
      return indent .. '▸' .. line:sub(#indent + #mark + 1)
    end
  end
  return line
end

--- Turns folded, except the one holding the cursor (the leaf).
local function fold_window(win)
  local wo = vim.wo[win]
  wo.foldmethod = 'expr'
  wo.foldexpr = "v:lua.require'pi_sessiond.buffers'.foldexpr(v:lnum)"
  wo.foldtext = "v:lua.require'pi_sessiond.buffers'.foldtext()"
  wo.foldlevel = 0
  wo.foldenable = true
  wo.fillchars = 'fold: '
  -- A closed turn reads like a tree line, not like Vim's grey fold bar (PiSessiondTreeFolded).
  vim.cmd('highlight default link PiSessiondTreeFolded Identifier')
  wo.winhighlight = 'Folded:PiSessiondTreeFolded'
end

local function fill_tree(buf, result)
  local width = window_width(buf)
  local lines, ids, folds = render.tree_lines(result.nodes or {}, result.leafId, width, result.tokens, result.marks)
  if #lines == 0 then
    lines = { '(empty session)' }
  end
  local info = trees[buf]
  info.ids, info.leaf_id, info.folds, info.result = ids, result.leafId, folds, result
  set_lines(buf, lines)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    vim.api.nvim_win_call(win, function()
      vim.cmd('normal! zx')
    end)
  end
  return ids
end

local function open_fold_at_cursor(win)
  vim.api.nvim_win_call(win, function()
    vim.cmd('normal! zv')
  end)
end

local function line_of(ids, id)
  for i, value in ipairs(ids) do
    if value == id then
      return i
    end
  end
  return nil
end

--- Render a `pi/getTree` result for `session_id` and show it, cursor on the leaf.
function M.show_tree(session_id, result)
  local buf = scratch('pi-sessiond://tree/' .. session_id, 'pi-sessiond-tree')
  if not trees[buf] then
    trees[buf] = { session_id = session_id, ids = {} }
    tree_keymaps(buf)
    vim.api.nvim_create_autocmd('BufWipeout', {
      buffer = buf,
      callback = function()
        trees[buf] = nil
      end,
    })
  end
  local win = show(buf) -- first, so the lines fit the window they are drawn in
  fold_window(win)
  local ids = fill_tree(buf, result)
  vim.api.nvim_win_set_cursor(win, { line_of(ids, result.leafId) or 1, 0 })
  open_fold_at_cursor(win)
  return buf
end

--- The entry id under the cursor when the current buffer is a tree, else nil.
function M.entry_at_cursor()
  local info = trees[vim.api.nvim_get_current_buf()]
  if not info then
    return nil
  end
  return info.ids[vim.api.nvim_win_get_cursor(0)[1]]
end

--- Fetch and re-render every loaded tree buffer of `session_id`, keeping each
--- window's cursor on the entry it was on.
function M.refresh(session_id)
  for buf, info in pairs(trees) do
    if info.session_id == session_id and vim.api.nvim_buf_is_loaded(buf) then
      require('pi_sessiond').get_tree(function(err, result)
        if err then
          return
        end
        local wins = {}
        for _, win in ipairs(vim.fn.win_findbuf(buf)) do
          wins[win] = info.ids[vim.api.nvim_win_get_cursor(win)[1]]
        end
        local ids = fill_tree(buf, result)
        for win, id in pairs(wins) do
          vim.api.nvim_win_set_cursor(win, { line_of(ids, id) or line_of(ids, result.leafId) or 1, 0 })
          open_fold_at_cursor(win)
        end
      end, { session_id = session_id })
    end
  end
end

--- Buffer numbers of the loaded tree views (for scripts and tests).
function M.tree_buffers()
  local out = {}
  for buf in pairs(trees) do
    table.insert(out, buf)
  end
  return out
end

return M
