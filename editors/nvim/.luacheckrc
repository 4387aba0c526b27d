-- luacheck . (from editors/nvim)
std = 'luajit'
globals = { 'vim' }
max_line_length = 120
