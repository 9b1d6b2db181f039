"""Compiler-assisted instruction counts: compile a translation unit to PTX and count per line.

Pure analysis (no LSP). The modules, in the order a caller uses them:

- ``toolchain``: find nvcc (:func:`~roofline_lsp.compiler.toolchain.locate_nvcc`) and an
  offloading clang, their versions and supported archs, and the ``sm_XY`` for a GPU profile
  (:func:`~roofline_lsp.compiler.toolchain.arch_choice`).
- ``compile_units``: the project's include/define flags, the local includes of a source and
  the translation unit to compile for a header.
- ``compile_jobs``: the compiler commands, the result cache key, one bounded, cancellable
  compile (:func:`~roofline_lsp.compiler.compile_jobs.compile_ptx_async`, and its blocking
  form ``compile_ptx``; ``compile_omp_ptx_async`` for OpenMP offload through clang).
- ``ptx_parser``: every ``.entry`` and ``.func`` of the PTX with per-source-line counts, its
  callees and its loops; ``instruction_mix`` the counts of one line (``LineMix``) and of one
  opcode; ``demangle`` the base names of mangled symbols and OpenMP offload entries.
- ``ptx_kernels``: the per-line counts of one kernel (and the device functions it calls).
- ``compiled_file``: all of the above in one awaitable call (``compile_file``) returning a
  ``CompiledFile`` with a reason instead of raising.
- ``compiled``: a kernel's PTX counts put in place of the source-level counts of the
  estimator, and the compiles of many files at once (CLI, eval, server).
"""
