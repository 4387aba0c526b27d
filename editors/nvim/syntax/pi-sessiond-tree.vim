" Highlighting for the :PiTree buffer of pi-sessiond.
if exists('b:current_syntax')
  finish
endif
syntax match piTreeLeaf /^\s*●.*$/ contains=piTreeLabel
syntax match piTreeOffPath /^\s*·\s\S\+/
syntax match piTreeKind /^\s*[•]\s\S\+/
syntax match piTreeLabel /\[[^\]]*\]/ contained containedin=ALL
highlight default link piTreeLeaf CursorLineNr
highlight default link piTreeOffPath Comment
highlight default link piTreeKind Identifier
highlight default link piTreeLabel Title
let b:current_syntax = 'pi-sessiond-tree'
