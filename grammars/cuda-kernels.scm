; Top-level shapes kernel detection looks at (tree-sitter-cuda).
; Every function definition: kernels are those with a __global__ child, callees the rest.
(function_definition) @function

; Pragmas (OpenMP / OpenACC) are preproc_call nodes with raw argument text.
(preproc_call
  directive: (preproc_directive) @_directive
  argument: (preproc_arg) @pragma.arg
  (#eq? @_directive "#pragma")) @pragma

; Kernel launches with the triple-chevron syntax.
(call_expression
  function: (_) @launch.kernel
  (kernel_call_syntax) @launch.config
  arguments: (argument_list) @launch.args) @launch

; Other calls: hipLaunchKernelGGL(...), cudaLaunchKernel(...), and ordinary calls.
(call_expression
  function: (_) @call.function
  arguments: (argument_list) @call.args) @call

; Broken parses: __global__ tokens inside ERROR nodes are recovered separately.
(ERROR) @error
