"""Shared by the compiler tests (test_ptx_parser.py, test_compile_jobs.py, ...): the PTX
fixtures, the per-line mixes expected from them, and stand-in compilers written as sh scripts."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from roofline_lsp.compiler.instruction_mix import LineMix
from roofline_lsp.compiler.ptx_kernels import counts_for_kernel, kernel_counts
from roofline_lsp.compiler.ptx_parser import Key, PtxModule, parse_ptx
from roofline_lsp.compiler.toolchain import find_nvcc, find_offload_clang
from roofline_lsp.detect.kernels import detect
from roofline_lsp.model.kernel import Detection, Kernel

FIX = Path(__file__).parent / "fixtures" / "ptx"
NVCC = find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="no nvcc on this machine")
OMP_CLANG = find_offload_clang()
posix_only = pytest.mark.skipif(os.name != "posix", reason="stand-in compilers are sh scripts")


def kernel_of(name: str, ext: str = ".cu") -> tuple[Kernel, Detection, PtxModule]:
    """The one kernel of fixture ``name`` with its detection and its checked-in PTX."""
    path = FIX / f"{name}{ext}"
    det = detect(path.read_bytes(), str(path))
    (k,) = det.kernels
    return k, det, parse_ptx((FIX / f"{name}.ptx").read_text())


def fake_tool(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return p


def load(name: str) -> PtxModule:
    return parse_ptx((FIX / name).read_text())


def line(counts: dict[Key, LineMix], file: str, n: int) -> dict[str, int]:
    """The non-zero counts of line ``n`` of ``file`` (matched by base name)."""
    for (f, ln), mix in counts.items():
        if os.path.basename(f) == file and ln == n:
            return mix.nonzero()
    return {}


# --- expected per-line mixes, derived by hand from the fixture sources -------------------------
#
# saxpy.cu (sm_86, counting mode):
#   line 6  int i = blockIdx.x * blockDim.x + threadIdx.x;
#           three special-register movs (no count) + one mad.lo.s32            -> int 1
#           (+ the two cvta.to.global of the pointers, hoisted here: folded, 0)
#   line 7  if (i < n)   one setp.ge.s32 + the branch around the body          -> int 1, bra 1
#   line 8  y[i] = a * x[i] + y[i];
#           address: mul.wide.s32 i*4 feeding add.s64 x+ and add.s64 y+ (the store reuses
#           y's): ptxas makes each add an IMAD.WIDE, so the mul.wide is free   -> int 2
#           ld.global.nc.f32 x[i] (restrict const) + ld.global.f32 y[i]       -> 2 loads, 8 B
#           a*x+y contracted to one fma.rn.f32                                -> fp32 1, 2 FLOP
#           st.global.f32 y[i]                                                -> 1 store, 4 B
SAXPY_LINE8 = {
    "instructions": 7,
    "fp32": 1,
    "flops_fp32": 2,
    "int_ops": 2,
    "other": 1,  # the fused mul.wide
    "ld_global": 2,
    "ld_global_bytes": 8,
    "st_global": 1,
    "st_global_bytes": 4,
}
# dot_fp64.cu:
#   line 15 s += a[r*m+k] * w[k];   two ld.global.f64 (16 B) + one fma.rn.f64 (2 FLOP); the
#           addresses are strength-reduced into pointer increments charged to line 14
#   line 14 for (k...)  preheader: setp m<1 + bra, mul.lo r*m, mul.wide fused into the add.s64
#           (int 3, bra 1);
#           per iteration: add.s64 x2 (pointers), add.s32 k++, setp k<m, bra (int 4, bra 1);
#           plus the loop-exit mul.f64 of scaled() (s*0.5) that the compiler tagged with the
#           last .loc (fp64 1, 1 FLOP)                          -> int 7, bra 2, fp64 1, 1 FLOP
#   line 17 out[r] = scaled(s, 0.5) / a[r];
#           mul.wide (fused) + add.s64 (a+r) + add.s64 (out+r)     -> int 2
#           ld.global.f64 a[r] (8 B), st.global.f64 out[r] (8 B)
#           div.rn.f64: MUFU.RCP64H + 7 DFMA + 1 DMUL (15 FLOP, 8 fp64 instr) + 3 fp32
#           (FSETP/FFMA range checks) + 1 int + the slow-path branch   -> int 3 in total
#           and one long division (what RL004 is confirmed on)
#   loop body ($L__BB0_3): line 15 + the per-iteration part of line 14
DOT_LINE15 = {
    "instructions": 3,
    "fp64": 1,
    "flops_fp64": 2,
    "ld_global": 2,
    "ld_global_bytes": 16,
}
DOT_LINE14 = {
    "instructions": 12,
    "fp64": 1,
    "flops_fp64": 1,
    "int_ops": 7,
    "branches": 2,
    "other": 2,
}
DOT_LINE17 = {
    "instructions": 6,
    "fp32": 3,
    "flops_fp32": 2,  # the fp64 division's FFMA range check
    "fp64": 8,
    "flops_fp64": 15,
    "int_ops": 8,  # 2 + the division's range check (1) and its slow path's share (5)
    "special": 1,
    "divisions": 1,
    "ld_global": 1,
    "ld_global_bytes": 8,
    "st_global": 1,
    "st_global_bytes": 8,
    "branches": 1,
    "other": 1,
}
DOT_LOOP = {
    "instructions": 8,
    "fp64": 1,
    "flops_fp64": 2,
    "int_ops": 4,
    "ld_global": 2,
    "ld_global_bytes": 16,
    "branches": 1,
}
# int_hash.cu: every line of the hash is integer work, no floating point at all
#   line 8  h = keys[i]       mul.wide fused into add.s64 (one IMAD.WIDE), ld.global.nc.u32
#                                                                    -> int 1, 1 load 4 B
#   line 9  h ^= h >> 16      shr.u32 + xor.b32                       -> int 2
#   line 10 h *= 0x85ebca6b   mul.lo.s32                              -> int 1
#   line 11 h ^= h >> 13      -> int 2;  line 12 h *= ... -> int 1
#   line 13 h ^= h >> 16      shr.u32 + xor.b32, whose only use is line 14's and.b32: SASS
#                             merges the two into one LOP3 (0x48)      -> int 1
#   line 14 out[i] = h % 1024u  the modulo by a power of two is an and.b32, + add.s64 (out+i)
#           st.global.u32                                              -> int 2, 1 store 4 B
#   whole kernel: lines 6 (mad) 1 + 7 (setp) 1 + 1+2+1+2+1+1+2           -> int 12
#   (nvdisasm of the sm_86 cubin: IMAD, ISETP, IMAD.WIDE, 3 SHF, 3 LOP3, 2 IMAD, IMAD.WIDE)
HASH_LINES = {
    8: {"instructions": 3, "int_ops": 1, "other": 1, "ld_global": 1, "ld_global_bytes": 4},
    9: {"instructions": 2, "int_ops": 2},
    10: {"instructions": 1, "int_ops": 1},
    11: {"instructions": 2, "int_ops": 2},
    12: {"instructions": 1, "int_ops": 1},
    13: {"instructions": 2, "int_ops": 1, "other": 1},
    14: {"instructions": 3, "int_ops": 2, "st_global": 1, "st_global_bytes": 4},
}


def check_saxpy(module: PtxModule) -> None:
    counts = counts_for_kernel(module, "saxpy")
    assert counts is not None
    assert line(counts, "saxpy.cu", 8) == SAXPY_LINE8
    assert line(counts, "saxpy.cu", 7) == {"instructions": 2, "int_ops": 1, "branches": 1}
    assert line(counts, "saxpy.cu", 6)["int_ops"] == 1
    assert line(counts, "saxpy.cu", 4) == {"instructions": 4, "ld_param": 4}


def check_dot(module: PtxModule) -> None:
    counts = counts_for_kernel(module, "rowdot")
    assert counts is not None
    assert line(counts, "dot_fp64.cu", 15) == DOT_LINE15
    assert line(counts, "dot_fp64.cu", 14) == DOT_LINE14
    assert line(counts, "dot_fp64.cu", 17) == DOT_LINE17
    (loop,) = module.functions["_Z6rowdotPKdS0_Pdii"].loops
    assert (loop.first_line, loop.last_line, loop.depth) == (14, 15, 1)
    assert os.path.basename(loop.file) == "dot_fp64.cu"
    assert loop.mix.nonzero() == DOT_LOOP
    assert os.path.basename(loop.control[0]) == "dot_fp64.cu" and loop.control[1] == 14


def check_hash(module: PtxModule) -> None:
    kc = kernel_counts(module, "hash_keys")
    assert kc is not None
    for n, expected in HASH_LINES.items():
        assert line(dict(kc.lines), "int_hash.cu", n) == expected, n
    total = kc.total
    assert total.int_ops == 12
    assert total.flops("fp32") == total.flops("fp64") == total.flops("fp16") == 0
    assert total.flops("int") == 12
    assert total.global_load_bytes == 4 and total.global_store_bytes == 4
