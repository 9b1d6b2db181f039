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

; Launch APIs: hipLaunchKernelGGL(k, grid, block, shmem, stream, args...),
; cudaLaunchKernel(k, grid, block, args, shmem, stream).
(call_expression
  function: (identifier) @api.function
  arguments: (argument_list) @api.args
  (#any-of? @api.function "hipLaunchKernelGGL" "cudaLaunchKernel" "hipLaunchKernel")) @api
