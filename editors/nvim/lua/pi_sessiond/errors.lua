--- Daemon errors as one sentence (by `data.reason`): the daemon's message with
--- its reason, or a sentence of our own where the reason alone would mislead.
local M = {}

local DRAFT_STATES = {
  expired = 'the draft expired before it was committed; nothing was written: :PiPreview again',
  committed = 'that draft was already committed',
  unknown = 'the daemon no longer has that draft (it restarted, or the session was closed): :PiPreview again',
}
local NOT_MASKABLE = {
  mask = 'that entry is not an unmasked tool result in the context of the leaf (the tree may be out of date);'
    .. ' nothing was written',
  unmask = 'that tool result is not masked in the context of the leaf (the tree may be out of date);'
    .. ' nothing was written',
}
local CONFLICT = {
  undo = 'that summary is no longer the leaf (the session moved on); nothing was undone: navigate with :PiTree',
  commit = 'the session changed since the preview, so the draft no longer fits; nothing was written: :PiPreview again',
}

--- One sentence for an error; `action` (`undo`, `commit`, `mask`, `unmask`) picks the wording of
--- a `conflict` or of an `invalidParams` naming an entry.
--- A live Pi's `liveWriter` keeps the daemon's message: it names the Pi command to use.
function M.describe(err, action)
  local text = tostring(err.message or err)
  local data = type(err.data) == 'table' and err.data or {}
  if data.reason == 'invalidParams' and DRAFT_STATES[data.draftState] then
    return DRAFT_STATES[data.draftState]
  elseif data.reason == 'invalidParams' and type(data.entryId) == 'string' and NOT_MASKABLE[action] then
    return NOT_MASKABLE[action]
  elseif data.reason == 'conflict' and CONFLICT[action] then
    return CONFLICT[action]
  elseif data.reason == 'liveWriter' and type(data.piCommand) ~= 'string' then
    return 'another program (Pi?) wrote to this session moments ago; nothing was written: try again when it is idle'
  end
  if data.reason then
    text = string.format('%s (%s)', text, data.reason)
  end
  return text
end

return M
