; Translation-unit definitions used to evaluate expressions and follow headers.
(preproc_include path: [(string_literal) (system_lib_string)] @include.path) @include
(preproc_def name: (identifier) @define.name value: (preproc_arg)? @define.value) @define
(preproc_function_def
  name: (identifier) @macro.name
  parameters: (preproc_params) @macro.params
  value: (preproc_arg)? @macro.value) @macro
; file-scope and namespace-scope constants only (locals are read per launch site)
(translation_unit
  (declaration declarator: (init_declarator) @const.decl) @const)
(declaration_list
  (declaration declarator: (init_declarator) @const.decl) @const)
; ... and those given C linkage one by one (extern "C" const unsigned N = 4;)
(linkage_specification
  body: (declaration declarator: (init_declarator) @const.decl) @const)
; ... also on the branches of a file-scope #if/#ifdef (the detector takes the kept one first)
(translation_unit [(preproc_if) (preproc_ifdef)] @const.branch)
; enumerators are integer constants (enum { A, B = 4, C } -> 0, 4, 5)
(enum_specifier body: (enumerator_list) @enum)
