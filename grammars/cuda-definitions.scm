; Translation-unit definitions used to evaluate expressions and follow headers.
(preproc_include path: (string_literal) @include.path) @include
(preproc_def name: (identifier) @define.name value: (preproc_arg)? @define.value) @define
(preproc_function_def
  name: (identifier) @macro.name
  parameters: (preproc_params) @macro.params
  value: (preproc_arg)? @macro.value) @macro
(declaration
  declarator: (init_declarator
    declarator: (identifier) @const.name
    value: (_) @const.value)) @const
