--- Pure text rendering: `pi/getTree` nodes to tree lines, `pi/getContext`
--- messages to markdown. No Neovim state is read or written here.
local M = {}

local LEAF, ON_PATH, OFF_PATH = '●', '•', '·'

local function one_line(text, width)
  text = tostring(text or ''):gsub('%s+', ' ')
  text = vim.trim(text)
  if width and vim.fn.strchars(text) > width then
    text = vim.fn.strcharpart(text, 0, width - 1) .. '…'
  end
  return text
end

local function kind(node)
  if node.type == 'message' and node.role and node.role ~= vim.NIL then
    return node.role
  end
  return node.type
end

local function is_user(node)
  return node.type == 'message' and node.role == 'user'
end

local function is_summary(node)
  return node.type == 'compaction' or node.type == 'branch_summary'
end

--- The tool names in an assistant preview (`[read]`, `[bash]`, as the daemon writes them).
local function tool_names(node)
  local names = {}
  if node.type == 'message' and node.role == 'assistant' then
    for name in tostring(node.preview or ''):gmatch('%[([%a_][%w_-]*)%]') do
      table.insert(names, name)
    end
  end
  return names
end

--- The nodes from the root down to `leaf_id` (parent links; stops at a missing parent or a cycle).
function M.root_path(nodes, leaf_id)
  local by_id, path = {}, {}
  for _, node in ipairs(nodes or {}) do
    by_id[node.id] = node
  end
  local id = leaf_id
  while type(id) == 'string' and by_id[id] and #path <= #(nodes or {}) do
    table.insert(path, 1, by_id[id])
    id = by_id[id].parentId
  end
  return path
end

--- A token count as the editors show it: `850`, `1.2k`, `10k`, `84k` (anything not a number: `0`).
function M.short_count(n)
  n = math.max(0, math.floor((tonumber(n) or 0) + 0.5))
  if n < 1000 then
    return tostring(n)
  end
  local value = n < 10000 and string.format('%.1f', n / 1000) or string.format('%d', math.floor(n / 1000 + 0.5))
  return (value:gsub('%.0$', '')) .. 'k'
end
local short_count = M.short_count

--- `→ 12 steps · bash ×3, read` for a turn's members.
local function turn_summary(members)
  local counts, order = {}, {}
  for _, node in ipairs(members) do
    for _, name in ipairs(tool_names(node)) do
      if not counts[name] then
        table.insert(order, name)
      end
      counts[name] = (counts[name] or 0) + 1
    end
  end
  local tools = {}
  for _, name in ipairs(order) do
    table.insert(tools, counts[name] > 1 and string.format('%s ×%d', name, counts[name]) or name)
  end
  local text = string.format('→ %d step%s', #members, #members == 1 and '' or 's')
  return #tools > 0 and text .. ' · ' .. table.concat(tools, ', ') or text
end

local function node_line(node, depth, leaf_id, width, extra, label_text)
  local mark = node.id == leaf_id and LEAF or (node.onActivePath and ON_PATH or OFF_PATH)
  local label = ''
  if node.label and node.label ~= vim.NIL then
    label = string.format(' [%s]', node.label)
  end
  -- A context edit reads as what it does (`masked bash npm test`) instead of its kind and preview.
  local text = string.format('%s%s %s%s', string.rep('  ', depth), mark, label_text or kind(node), label)
  if extra and extra ~= '' then
    -- The turn summary gets at most half the line; the preview keeps the rest.
    local half = width and math.max(8, math.floor(width / 2)) or nil
    text = string.format('%s (%s)', text, one_line(extra, half))
  end
  -- The whole line fits `width` (the window's): the preview gets what the prefix leaves.
  local room = width and math.max(8, width - vim.fn.strdisplaywidth(text) - 2) or nil
  local preview = label_text and '' or one_line(node.preview, room)
  if preview ~= '' then
    text = text .. ': ' .. preview
  end
  if width and vim.fn.strdisplaywidth(text) > width then
    text = vim.fn.strcharpart(text, 0, math.max(1, width - 1)) .. '…'
  end
  return text
end

local function children_of(node, by_id)
  local kids = {}
  for _, id in ipairs(node.childIds or {}) do
    if by_id[id] then
      table.insert(kids, by_id[id])
    end
  end
  return kids
end

--- For every user message that starts a turn: the nodes of its turn (the assistant's work up
--- to the next user message, compaction, branch summary or branch point).
local function turns_of(nodes, by_id)
  local turns = {}
  for _, node in ipairs(nodes) do
    local kids = children_of(node, by_id)
    if is_user(node) and #kids == 1 then
      local members, next_node = {}, kids[1]
      while next_node and not is_user(next_node) and not is_summary(next_node) do
        table.insert(members, next_node)
        local more = children_of(next_node, by_id)
        next_node = #more == 1 and more[1] or nil
      end
      if #members > 0 then
        turns[node.id] = members
      end
    end
  end
  return turns
end

--- Lines for a tree: a chain stays at one depth, each branch of a fork is
--- indented one step under it (Pi's `/tree` layout), and each user message
--- holds its turn (the assistant's work, one step deeper, summed up on the
--- user line). `tokens` (optional) maps compaction / branch-summary ids to
--- their token counts; `marks` (optional, `masking.marks`) id -> `{label?, note}`:
--- a masked tool result shows its note (`masked · ok; 4451 characters, 50 lines`),
--- a context edit its label then its note (`masked bash npm test (→ id · size)`).
--- Returns `lines, ids, folds` where `ids[i]` is the entry id on line `i` and
--- `folds[i]` is `'>1'` on a turn's user line, `1` inside a turn, `0` elsewhere
--- (a 'foldexpr').
function M.tree_lines(nodes, leaf_id, width, tokens, marks)
  local by_id, roots = {}, {}
  for _, node in ipairs(nodes) do
    by_id[node.id] = node
  end
  for _, node in ipairs(nodes) do
    local parent = node.parentId
    if parent == nil or parent == vim.NIL or not by_id[parent] then
      table.insert(roots, node)
    end
  end
  local turns, member_of = turns_of(nodes, by_id), {}
  for user_id, members in pairs(turns) do
    for _, member in ipairs(members) do
      member_of[member.id] = user_id
    end
  end
  local lines, ids, folds = {}, {}, {}
  local stack = {}
  local base = #roots > 1 and 1 or 0
  for i = #roots, 1, -1 do
    table.insert(stack, { roots[i], base })
  end
  while #stack > 0 do
    local node, depth = unpack(table.remove(stack))
    local shown = member_of[node.id] and depth + 1 or depth
    local extra = turns[node.id] and turn_summary(turns[node.id]) or nil
    if tokens and tokens[node.id] then
      extra = short_count(tokens[node.id]) .. ' tokens'
    end
    local mark = marks and marks[node.id]
    table.insert(lines, node_line(node, shown, leaf_id, width, mark and mark.note or extra, mark and mark.label))
    table.insert(ids, node.id)
    table.insert(folds, turns[node.id] and '>1' or (member_of[node.id] and '1' or '0'))
    local kids = children_of(node, by_id)
    local child_depth = #kids > 1 and shown + 1 or depth
    for i = #kids, 1, -1 do
      table.insert(stack, { kids[i], child_depth })
    end
  end
  return lines, ids, folds
end

local function block_text(block)
  if type(block) ~= 'table' then
    return { tostring(block) }
  end
  if block.type == 'text' then
    return vim.split(block.text or '', '\n', { plain = true })
  elseif block.type == 'thinking' then
    local out = {}
    for _, line in ipairs(vim.split(block.thinking or '', '\n', { plain = true })) do
      table.insert(out, '> ' .. line)
    end
    return out
  elseif block.type == 'toolCall' then
    local args = vim.fn.json_encode(block.arguments or vim.empty_dict())
    return { string.format('**tool call** `%s`', block.name or '?'), '```json', args, '```' }
  elseif block.type == 'image' then
    return { string.format('*[image %s]*', block.mimeType or '') }
  end
  return { string.format('*[%s]*', block.type or 'block') }
end

local function content_lines(content)
  if content == nil or content == vim.NIL then
    return {}
  end
  if type(content) == 'string' then
    return vim.split(content, '\n', { plain = true })
  end
  local out = {}
  for _, block in ipairs(content) do
    vim.list_extend(out, block_text(block))
  end
  return out
end

local function fenced(text)
  local out = { '```' }
  vim.list_extend(out, vim.split(tostring(text or ''), '\n', { plain = true }))
  table.insert(out, '```')
  return out
end

local function message_body(message)
  local role = message.role
  if role == 'compactionSummary' or role == 'branchSummary' then
    return vim.split(message.summary or '', '\n', { plain = true })
  elseif role == 'bashExecution' then
    local out = { '```sh', '$ ' .. tostring(message.command or ''), '```' }
    return vim.list_extend(out, fenced(message.output))
  elseif role == 'toolResult' then
    local lines = content_lines(message.content)
    return fenced(table.concat(lines, '\n'))
  end
  return content_lines(message.content)
end

local function heading(message)
  local role = message.role or '?'
  if role == 'toolResult' and message.toolName then
    return string.format('## toolResult `%s`', message.toolName)
  elseif role == 'assistant' and message.model then
    return string.format('## assistant (%s)', message.model)
  end
  return '## ' .. role
end

--- Markdown lines for a `pi/getContext` result.
function M.context_lines(context)
  local lines = {}
  local count = #(context.messages or {})
  table.insert(lines, string.format('# Context: %d messages, ~%s tokens', count, tostring(context.tokens or '?')))
  for _, message in ipairs(context.messages or {}) do
    table.insert(lines, '')
    table.insert(lines, heading(message))
    table.insert(lines, '')
    vim.list_extend(lines, message_body(message))
  end
  return lines
end

return M
