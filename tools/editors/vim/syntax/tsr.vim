" Vim syntax file for Torsor model files (.tsr).
" Install: copy tools/editors/vim/{syntax,ftdetect} into ~/.vim/ (or add
" tools/editors/vim to 'runtimepath'). Keep the lists in step with
" frontend/TokenKinds.def, frontend/Builtins.def and frontend/Groups.def;
" test/Tools/editor-grammars.py checks them.
if exists("b:current_syntax")
  finish
endif

syn keyword tsrKeyword model dim input param output let block return repeat as
syn keyword tsrKeyword group matrix generator norm
syn keyword tsrBoolean true false
syn keyword tsrType f16 bf16 f32 f64 i32 i64
syn keyword tsrGroup SO2 SE2 SO3 SE3 Aff2 Sim3
syn keyword tsrBuiltin relu gelu sigmoid tanh exp softmax layer_norm rms_norm
syn keyword tsrBuiltin concat heads merge_heads transpose
syn keyword tsrBuiltin embedding cross_entropy mse
syn keyword tsrBuiltin compose inverse log act dist2 membership_residual
syn keyword tsrBuiltin lie_attention lie_attention_grad grassmann_mix relational_attention
syn keyword tsrBuiltin relational_norm
syn match tsrNumber "\<\d\+\(\.\d*\)\=\([eE][+-]\=\d\+\)\=\>"
syn match tsrNumber "\.\d\+\([eE][+-]\=\d\+\)\=\>"
syn match tsrOperator "->\|[-+*/@=<>]"
syn match tsrComment "//.*$" contains=tsrTodo
syn keyword tsrTodo TODO FIXME XXX contained

hi def link tsrKeyword Keyword
hi def link tsrBoolean Boolean
hi def link tsrType Type
hi def link tsrGroup Type
hi def link tsrBuiltin Function
hi def link tsrNumber Number
hi def link tsrOperator Operator
hi def link tsrComment Comment
hi def link tsrTodo Todo

let b:current_syntax = "tsr"
