"""roofline-lsp: is each GPU kernel compute-bound or bandwidth-bound on the GPU you target?"""

__version__ = "0.1.0"
