; Top-level shapes kernel detection looks at (tree-sitter-cuda).
; Every function definition: kernels are those with a __global__ child, callees the rest.
(function_definition) @function

; Preprocessor calls: `#pragma omp|acc ...` among them (filtered in kernels.py, which is
; faster than a text predicate here).
(preproc_call
  directive: (preproc_directive)
  argument: (preproc_arg)) @pragma

; Kernel launches with the triple-chevron syntax.
(call_expression
  function: (_)
  (kernel_call_syntax)
  arguments: (argument_list)) @launch
