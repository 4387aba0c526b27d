" Highlighting for the :PiTree buffer of pi-sessiond.
if exists('b:current_syntax')
  finish
endif
syntax match piTreeLeaf /^\s*●.*$/ contains=piTreeLabel
syntax match piTreeOffPath /^\s*·\s\S\+/
syntax match piTreeKind /^\s*[•]\s\S\+/
syntax match piTreeLabel /\[[^\]]*\]/ contained containedin=ALL
" A turn's summary on its user line, e.g. (→ 12 steps · bash ×3), and a summary's size.
syntax match piTreeTurn /(→[^)]*)/ contained containedin=ALL
syntax match piTreeTokens /([0-9.]\+k\? tokens)/ contained containedin=ALL
syntax match piTreeSummary /^\s*[●•·]\s\(compaction\|branch_summary\)\>/ contains=piTreeLeafMark
syntax match piTreeLeafMark /●/ contained
highlight default link piTreeLeaf CursorLineNr
highlight default link piTreeOffPath Comment
highlight default link piTreeKind Identifier
highlight default link piTreeLabel Title
highlight default link piTreeTurn Comment
highlight default link piTreeTokens Number
highlight default link piTreeSummary Special
highlight default link piTreeLeafMark CursorLineNr
let b:current_syntax = 'pi-sessiond-tree'
