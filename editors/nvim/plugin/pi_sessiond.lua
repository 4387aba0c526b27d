-- pi-sessiond: the :Pi* commands. Nothing starts until one is used.
if vim.g.loaded_pi_sessiond then
  return
end
vim.g.loaded_pi_sessiond = true

if vim.fn.has('nvim-0.7') == 0 then
  vim.api.nvim_echo({ { 'pi-sessiond needs Neovim 0.7 or later', 'WarningMsg' } }, true, {})
  return
end

local function cmd(name, fn, opts)
  opts = vim.tbl_extend('force', { force = true }, opts or {})
  vim.api.nvim_create_user_command(name, function(args)
    fn(require('pi_sessiond.commands'), args)
  end, opts)
end

cmd('PiSessions', function(c, args)
  c.sessions(args.bang)
end, { bang = true, desc = 'Pick a Pi session (! for all directories)' })

cmd('PiOpen', function(_, args)
  require('pi_sessiond').open_session(args.args)
end, { nargs = 1, complete = 'file', desc = 'Open a Pi session file' })

cmd('PiCompact', function(c, args)
  c.compact(args.args)
end, { nargs = '?', desc = 'Compact the Pi session [instructions]' })

cmd('PiPreview', function(c, args)
  c.preview(args.args)
end, { nargs = '?', desc = 'Preview a compaction of the Pi session as an editable draft [instructions]' })

cmd('PiCommit', function(c)
  c.commit()
end, { desc = 'Commit the draft in the current buffer (like :w)' })

cmd('PiDiscard', function(c)
  c.discard()
end, { desc = 'Discard the draft in the current buffer' })

cmd('PiUndo', function(c)
  c.undo()
end, { desc = 'Undo the compaction or branch summary at the leaf' })

cmd('PiMask', function(c)
  c.mask()
end, { desc = 'Mask old tool output in the Pi session (asks first)' })

cmd('PiUnmask', function(c, args)
  c.unmask(args.args, args.bang)
end, { nargs = '?', bang = true, desc = 'Restore the masked tool output under the cursor [id] (! for all)' })

cmd('PiOriginal', function(c, args)
  c.original(args.args)
end, { nargs = '?', desc = 'Show the original tool output under the cursor [id]' })

cmd('PiTree', function(c)
  c.tree()
end, { desc = 'Show the Pi session tree' })

cmd('PiContext', function(c)
  c.context()
end, { desc = 'Show the LLM context of the Pi session' })

cmd('PiLabel', function(c, args)
  c.label(args.args, args.bang)
end, { nargs = '?', bang = true, desc = 'Label the entry under the cursor or the leaf (! clears)' })

cmd('PiFork', function(c)
  c.fork()
end, { desc = 'Fork the Pi session at a user message' })

cmd('PiStats', function(c)
  c.stats()
end, { desc = 'Show Pi session statistics' })

cmd('PiCancel', function(c)
  c.cancel()
end, { desc = 'Cancel running Pi summaries' })
