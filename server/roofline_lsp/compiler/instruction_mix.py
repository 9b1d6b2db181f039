"""The instruction mix of a PTX source line (:class:`LineMix`) and the counts of one
instruction from its opcode (:func:`opcode_mix`).

What is counted (static, per line, per thread): see :class:`LineMix`. Weights follow the SASS
that ``ptxas`` emits for sm_86 (checked with ``nvdisasm`` on small kernels):

- Floating point: ``add/sub/mul`` 1 FLOP, ``fma/mad`` 2 FLOP, as Nsight Compute counts FLOPs
  (``fadd + fmul + 2 * ffma``); packed ``f16x2/bf16x2`` count twice. ``min/max/abs/neg/setp/
  selp/copysign/testp`` are floating-point instructions with no FLOP (a ``neg``/``abs`` whose
  result is stored or selected as it is becomes an FADD/DADD: ``ptx_parser`` adds its FLOP).
  IEEE ``div``/``sqrt``/``rcp`` expand (fast path): ``div.rn.f32`` MUFU + 5 FFMA (10 FLOP)
  + FCHK; ``div.rn.f64`` MUFU + 7 DFMA + 1 DMUL (15 FLOP) and an FFMA range check (2 FP32
  FLOP); ``rcp.rn.f64`` 5 DFMA (10); ``sqrt.rn.f32`` 2 FMUL + 2 FFMA (6); ``sqrt.rn.f64``
  3 DMUL + 5 DFMA (13); ``rcp.rn.f32`` 2 FFMA (4). The fast paths also test the input's
  exponent with integer instructions: ``sqrt.rn.f32`` IADD3 + ISETP (2), ``rcp.rn.f32``
  IADD3 + LOP3 + ISETP (3), ``sqrt.rn.f64`` 3, ``rcp.rn.f64`` 1. An IEEE division also
  calls its slow path (a subroutine of ~15-50 integer instructions) when its operands or
  quotient are zero, denormal or extreme, which data often are (a difference of equal
  neighbours, an array initialised to zero): it is charged its expected share,
  :data:`SLOW_DIVISION_INTS_F32` and :data:`SLOW_DIVISION_INTS_F64`. ``sin/cos/ex2/lg2/
  rsqrt/rcp/sqrt/tanh .approx`` are one special-function (MUFU) instruction each; the
  range-scaling FMULs of the non-``.ftz`` forms are predicated on a denormal or huge input, so
  they count no FLOP (Nsight counts threads whose predicate is on).
- Integer (``int_ops``, meant to track ncu's ``smsp__sass_thread_inst_executed_op_integer``):
  integer ``add/sub/mul/mad/mul24/mad24/sad/abs/neg/min/max/popc/clz/bfind/brev/bfe/bfi/fns/
  prmt/lop3/shf/shl/shr/and/or/xor/not/cnot/dp4a/dp2a/setp/set/selp/slct`` on integer types
  1 each; 64-bit ``mul``/``mad`` 3 (IMAD.WIDE.U32 + 2 IMAD), 64-bit compares 2 (ISETP +
  ISETP.EX), ``clz`` 2 (FLO + IADD); 32-bit ``div`` 18 signed and 14 unsigned, ``rem`` 17
  and 11 (the reciprocal sequence; by a constant, as each copy of a completely unrolled loop
  divides by its counter, 3, 2, 4 and 2), 64-bit ``div/rem`` 16 and 13 (a test of the high
  words, then the unsigned 32-bit sequence: the subroutine of ~70 runs for operands over 32
  bits only); sign-extending
  ``cvt`` 1, zero-extending or truncating ``cvt`` and ``cvta`` 0 (folded), predicate logic
  (``and.pred`` ...) 0 (folded into ISETP), ``mov`` 0. 64-bit ``add`` counts 1 (ptxas
  splits a lone one in two, IADD3 + IADD3.X, but folds constant offsets into the address),
  and a ``mul.wide`` whose result feeds a 64-bit ``add`` counts 0: the pair is one IMAD.WIDE.
  A vector of bytes (``ld.v4.u8``, a ``uchar4``) is one 32-bit load whose bytes SASS takes
  apart with a PRMT each (4; ``v2`` 2), and a stored one is put together with 3 PRMT (``v2``
  1). A 32-bit add or bitwise operation whose result only feeds another of its kind in the
  same block merges with it into one three-input IADD3 or LOP3, and a shift by a constant
  feeding an add into a LEA (``ptx_parser``: those producers count 0).
  Check on the eval set's loop-free CUDA kernels (static PTX count vs ncu's per-thread count):
  integer median ratio 1.00 (quartiles 0.75-1.10), FP32 FLOPs 1.00, FP64 FLOPs 1.00.
- Memory: loads/stores by state space (``global``, ``shared``, ``local``, ``const``,
  ``generic`` = no space given, ``tex`` = texture/surface) with their bytes (type width x
  vector length), ``ld.param`` counted apart (kernel arguments, no traffic), ``cp.async``
  as a global load plus a shared store of its size, atomics (``atom``/``red``) by space.
- Control: branches, calls, barriers, warp shuffles/votes; tensor-core ``mma``/``wmma`` as
  ``tensor`` instructions with ``2*m*n*k/32`` FLOP per thread in ``flops_tensor``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

__all__ = ["EMPTY", "NUM_FIELDS", "LineMix", "asm_mix", "opcode_mix"]


@dataclass(frozen=True)
class LineMix:
    """Static instruction counts of one source line (per thread, per execution of the line).

    ``fp32/fp64/fp16`` count floating-point instructions (packed x2 as 2), ``flops_*`` their
    FLOPs (FMA = 2); ``int_ops`` integer instructions with SASS-like weights; memory counts are
    instructions and ``*_bytes`` the bytes they move per thread. ``calls`` names the ``.func``
    symbols called (or whose address is taken, as OpenMP outlined bodies are) on the line.
    """

    instructions: int = 0  # PTX instructions on the line (directives excluded)
    fp32: int = 0
    fp64: int = 0
    fp16: int = 0
    flops_fp32: int = 0
    flops_fp64: int = 0
    flops_fp16: int = 0
    int_ops: int = 0
    special: int = 0  # MUFU: sin/cos/ex2/lg2/rcp/rsqrt/sqrt/tanh approximations
    conversions: int = 0  # int<->float and float<->float cvt
    # what advice confirms its rules on: divisions and remainders that run the long sequence
    # (integer div/rem, IEEE float div; not div.approx/div.full, nor a division by a constant,
    # which is compiled to a multiply), and float values promoted to double (cvt.f64.f32)
    divisions: int = 0
    to_fp64: int = 0
    tensor: int = 0  # mma/wmma instructions
    flops_tensor: int = 0
    ld_global: int = 0
    ld_global_bytes: int = 0
    st_global: int = 0
    st_global_bytes: int = 0
    ld_generic: int = 0
    ld_generic_bytes: int = 0
    st_generic: int = 0
    st_generic_bytes: int = 0
    ld_shared: int = 0
    ld_shared_bytes: int = 0
    st_shared: int = 0
    st_shared_bytes: int = 0
    ld_local: int = 0
    ld_local_bytes: int = 0
    st_local: int = 0
    st_local_bytes: int = 0
    ld_const: int = 0
    ld_const_bytes: int = 0
    ld_tex: int = 0
    ld_tex_bytes: int = 0
    st_tex: int = 0
    st_tex_bytes: int = 0
    ld_param: int = 0
    atom_global: int = 0
    atom_global_bytes: int = 0
    atom_shared: int = 0
    atom_shared_bytes: int = 0
    atom_generic: int = 0
    atom_generic_bytes: int = 0
    branches: int = 0
    call_count: int = 0
    barriers: int = 0
    warp_ops: int = 0  # shfl/vote/match/redux
    other: int = 0  # mov, cvta, ret/exit, ...
    calls: tuple[str, ...] = ()

    def __add__(self, other: LineMix) -> LineMix:
        vals: dict[str, Any] = {}
        for f in NUM_FIELDS:
            vals[f] = getattr(self, f) + getattr(other, f)
        calls = self.calls + tuple(c for c in other.calls if c not in self.calls)
        return LineMix(**vals, calls=calls)

    def scaled(self, k: int) -> LineMix:
        vals = {f: getattr(self, f) * k for f in NUM_FIELDS}
        return LineMix(**vals, calls=self.calls)

    def flops(self, precision: str) -> int:
        """FLOPs of ``"fp32"``, ``"fp64"`` or ``"fp16"``; ``"int"`` gives ``int_ops``."""
        if precision == "int":
            return self.int_ops
        return int(getattr(self, f"flops_{precision}", 0))

    def loads(self, space: str) -> tuple[int, int]:
        """``(instructions, bytes)`` loaded from ``space`` (global, generic, shared, local,
        const, tex)."""
        return getattr(self, f"ld_{space}", 0), getattr(self, f"ld_{space}_bytes", 0)

    def stores(self, space: str) -> tuple[int, int]:
        return getattr(self, f"st_{space}", 0), getattr(self, f"st_{space}_bytes", 0)

    @property
    def global_load_bytes(self) -> int:
        """Bytes loaded from global memory, generic pointers and textures."""
        return self.ld_global_bytes + self.ld_generic_bytes + self.ld_tex_bytes

    @property
    def global_store_bytes(self) -> int:
        return self.st_global_bytes + self.st_generic_bytes + self.st_tex_bytes

    @property
    def global_atomic_bytes(self) -> int:
        return self.atom_global_bytes + self.atom_generic_bytes

    def nonzero(self) -> dict[str, int]:
        """The non-zero counts, for display and tests."""
        return {f: getattr(self, f) for f in NUM_FIELDS if getattr(self, f)}


NUM_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(LineMix) if f.name != "calls")
EMPTY = LineMix()

_TYPE_BYTES = {
    "b8": 1, "u8": 1, "s8": 1,
    "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
    "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4, "tf32": 4,
    "b64": 8, "u64": 8, "s64": 8, "f64": 8,
    "b128": 16, "pred": 1, "e4m3x2": 2, "e5m2x2": 2,
}  # fmt: skip
_FLOAT_PREC = {
    "f32": ("fp32", 1), "f64": ("fp64", 1), "f16": ("fp16", 1), "bf16": ("fp16", 1),
    "f16x2": ("fp16", 2), "bf16x2": ("fp16", 2), "tf32": ("fp32", 1),
}  # fmt: skip
_INT_TYPES = {"b8", "u8", "s8", "b16", "u16", "s16", "b32", "u32", "s32", "b64", "u64", "s64"}
_INT_SIMPLE = {
    "add", "sub", "mul24", "mad24", "sad", "abs", "neg", "min", "max", "popc", "bfind",
    "brev", "bfe", "bfi", "fns", "prmt", "lop3", "shf", "shl", "shr", "and", "or", "xor",
    "not", "cnot", "dp4a", "dp2a", "addc", "subc", "madc", "set", "selp", "slct", "bmsk",
    "szext", "mul", "mad",
}  # fmt: skip
# expected integer instructions of an IEEE division's slow path, per division: the dev set's
# loop-free CUDA kernels whose FLOPs are right run 0-28 integer instructions more per fp64
# division than its fast path (ace's finite differences of flat fields; median ~5); a sweep
# on the dev set over 2-8 (fp32) and 3-16 (fp64) is flat around these, its best
SLOW_DIVISION_INTS_F32 = 2
SLOW_DIVISION_INTS_F64 = 5
# integer instructions of a 32-bit division by a run-time value in sm_86 SASS (the reciprocal
# sequence: IMAD.HI estimates, ISETP/IADD3 corrections; signed adds IABS and the sign fix)
_DIVISION_INTS = {("div", True): 18, ("div", False): 14, ("rem", True): 17, ("rem", False): 11}
# ... and by a constant (a multiply-high and a shift; a power of two: shifts or a mask, signed
# adds the rounding fix): ``t / 3`` IMAD.HI + LEA.HI, ``t % 4`` SHF + LEA.HI + LOP3 + IADD,
# ``u % 4`` LOP3, ``u / 3`` IMAD.WIDE + SHF
_CONSTANT_DIVISION_INTS = {("div", True): 3, ("div", False): 2, ("rem", True): 4, ("rem", False): 2}
# ... and each trip of a loop dividing by a value the loop does not change: ptxas computes the
# reciprocal before the loop (``x[i] = i % m`` in a grid-stride loop: IABS, the IMAD.HI
# estimate and its ISETP/IADD3 corrections, the sign fix)
_HOISTED_DIVISION_INTS = {
    ("div", True): 13,
    ("div", False): 8,
    ("rem", True): 11,
    ("rem", False): 7,
}
_FP_NOFLOP = {"neg", "abs", "min", "max", "setp", "set", "selp", "copysign", "testp", "slct"}


def division_ints(base: str, t: str, constant: bool = False, hoisted: bool = False) -> int:
    """Integer instructions of a 32-bit ``div``/``rem`` of PTX type ``t`` (``s32``, ``u32``)
    by a run-time value, or by a ``constant`` one (as each copy of a completely unrolled loop
    divides by its induction variable), or per trip of a loop that does not change the
    divisor (``hoisted``: its reciprocal computed before the loop)."""
    if constant:
        table = _CONSTANT_DIVISION_INTS
    else:
        table = _HOISTED_DIVISION_INTS if hoisted else _DIVISION_INTS
    return table[base, t.startswith("s")]


_LD = {"ld", "ldu"}
_SPACES = ("global", "shared", "local", "const", "param")
_WARP = {"shfl", "vote", "match", "redux", "activemask", "elect"}
_BARRIER = {"bar", "barrier", "membar", "fence", "mbarrier", "cp"}  # cp.async.wait_* etc.


def _types(tokens: Sequence[str]) -> list[str]:
    return [t for t in tokens if t in _TYPE_BYTES]


def _space(tokens: Sequence[str]) -> str:
    for t in tokens:
        for s in _SPACES:
            if t == s or t.startswith(s + "::"):
                return s
        if t in ("tex", "surf"):
            return "tex"
    return "generic"


def _vec(tokens: Sequence[str]) -> int:
    for t in tokens:
        if t in ("v2", "v4", "v8"):
            return int(t[1])
    return 1


def _byte_lanes(tokens: Sequence[str], t: str) -> int:
    """The bytes of a vector of bytes (``v4.u8``: 4) that SASS moves as one word and takes
    apart (or puts together) in integer instructions; 0 for any other access."""
    vec = _vec(tokens)
    return vec if vec > 1 and _TYPE_BYTES.get(t, 4) == 1 else 0


@functools.lru_cache(maxsize=4096)
def opcode_mix(opcode: str) -> LineMix:
    """The counts of one instruction, from its opcode with modifiers (``"fma.rn.f32"``).
    Operand-dependent parts (``cp.async`` size, call targets) are added by the parser."""
    tokens = opcode.split(".")
    base, mods = tokens[0], tokens[1:]
    types = _types(mods)
    t = types[-1] if types else ""
    c: dict[str, Any] = {"instructions": 1}

    def add(**kw: int) -> LineMix:
        for k, v in kw.items():
            c[k] = c.get(k, 0) + v
        return replace(EMPTY, **c)

    # memory
    if base in _LD:
        space = _space(mods)
        if space == "param":
            return add(ld_param=1)
        size = _TYPE_BYTES.get(t, 4) * _vec(mods)
        return add(int_ops=_byte_lanes(mods, t), **{f"ld_{space}": 1, f"ld_{space}_bytes": size})
    if base == "st":
        space = _space(mods)
        if space == "param":
            return add(other=1)
        if space == "const":
            space = "global"
        size = _TYPE_BYTES.get(t, 4) * _vec(mods)
        packs = max(_byte_lanes(mods, t) - 1, 0)
        return add(int_ops=packs, **{f"st_{space}": 1, f"st_{space}_bytes": size})
    if base in ("atom", "red"):
        space = _space(mods)
        space = space if space in ("global", "shared") else "generic"
        size = _TYPE_BYTES.get(t, 4) * _vec(mods)
        if space != "global" and "add" in mods and t in ("f32", "f64"):
            # a float add on shared memory (or a generic address, which clang's OpenMP
            # team-local variables have) runs as a compare-and-swap loop around an FADD/DADD
            # in the SM; on global memory it runs in L2 (no FLOP, as ncu counts)
            prec = _FLOAT_PREC[t][0]
            add(**{prec: 1, f"flops_{prec}": 1})
        return add(**{f"atom_{space}": 1, f"atom_{space}_bytes": size})
    if base in ("tex", "tld4", "suld"):
        size = _TYPE_BYTES.get(types[0] if types else "f32", 4) * _vec(mods)
        return add(ld_tex=1, ld_tex_bytes=size)
    if base in ("sust", "sured"):
        size = _TYPE_BYTES.get(t or "b32", 4) * _vec(mods)
        return add(st_tex=1, st_tex_bytes=size)
    if base == "cp" and mods[:1] == ["async"] and "shared" in "".join(mods):
        if any(m.startswith(("wait", "commit", "mbarrier")) for m in mods):
            return add(barriers=1)
        return add(ld_global=1, st_shared=1)  # sizes from the operand, added by the parser
    if base in ("prefetch", "prefetchu", "applypriority", "discard", "createpolicy"):
        return add(other=1)
    # control
    if base in ("bra", "brx"):
        return add(branches=1)
    if base == "call":
        return add(call_count=1)
    if base in ("ret", "exit", "trap", "brkpt", "nanosleep", "pmevent"):
        return add(other=1)
    if base in _BARRIER:
        return add(barriers=1)
    if base in _WARP:
        return add(warp_ops=1)
    if base in ("mma", "wmma", "wgmma"):
        if "load" in mods or "store" in mods:
            kind = "ld" if "load" in mods else "st"
            space = _space(mods)
            space = space if space in ("global", "shared", "local") else "generic"
            return add(**{f"{kind}_{space}": 1})
        shape = next((m for m in mods if re.fullmatch(r"m\d+n\d+k\d+", m)), "")
        dims = [int(x) for x in re.findall(r"\d+", shape)]
        flops = 2 * dims[0] * dims[1] * dims[2] // 32 if len(dims) == 3 else 0
        return add(tensor=1, flops_tensor=flops)
    if base in ("mov", "cvta", "isspacep", "alloca", "stacksave", "stackrestore", "getctarank"):
        return add(other=1)
    # conversions
    if base in ("cvt", "cvt.pack"):
        if len(types) >= 2 and types[0] in _INT_TYPES and types[1] in _INT_TYPES:
            dst, src = types[0], types[1]
            widen = _TYPE_BYTES[dst] > _TYPE_BYTES[src]
            if (widen and src.startswith("s")) or "sat" in mods:
                return add(int_ops=1)
            return add(other=1)
        if types[:2] == ["f64", "f32"]:
            return add(conversions=1, to_fp64=1)
        return add(conversions=1)
    # floating point
    if t in _FLOAT_PREC and base not in ("cvt",):
        prec, width = _FLOAT_PREC[t]
        approx = "approx" in mods
        if base in ("add", "sub", "mul"):
            return add(**{prec: width, f"flops_{prec}": width})
        if base in ("fma", "mad"):
            return add(**{prec: width, f"flops_{prec}": 2 * width})
        if base in _FP_NOFLOP:
            return add(**{prec: width})
        if base == "div":
            if prec == "fp64":
                return add(
                    special=1,
                    fp64=8,
                    flops_fp64=15,
                    fp32=3,
                    flops_fp32=2,
                    int_ops=1 + SLOW_DIVISION_INTS_F64,
                    branches=1,
                    divisions=1,
                )
            if approx:
                return add(special=1, fp32=1, flops_fp32=1)
            if "full" in mods:
                return add(special=1, fp32=3, flops_fp32=2)
            if prec == "fp32":
                return add(
                    special=1,
                    fp32=6,
                    flops_fp32=10,
                    int_ops=SLOW_DIVISION_INTS_F32,
                    branches=1,
                    divisions=1,
                )
            return add(special=width, fp16=2 * width, flops_fp16=2 * width, divisions=1)
        if base == "rcp":
            if approx:
                return add(special=width)
            if prec == "fp64":
                return add(special=1, fp64=5, flops_fp64=10, fp32=1, int_ops=1)
            return add(special=1, fp32=3, flops_fp32=4, int_ops=3, branches=1)
        if base == "sqrt":
            if prec == "fp64":
                return add(special=1, fp64=9, flops_fp64=13, int_ops=3, branches=1)
            if approx:
                return add(special=width)
            return add(special=1, fp32=4, flops_fp32=6, int_ops=2, branches=1)
        if base in ("rsqrt", "ex2", "lg2"):
            return add(special=width)
        if base in ("sin", "cos"):
            return add(special=width, fp32=1, flops_fp32=1)
        if base == "tanh":
            return add(special=width)
        if base in ("cvt", "frnd"):
            return add(conversions=1)
        return add(**{prec: width})
    # integer
    if base == "setp" or base == "set":
        return add(int_ops=2 if _TYPE_BYTES.get(t, 4) == 8 else 1)
    if t == "pred" and base in ("and", "or", "xor", "not", "mov"):
        return add(other=1)
    if base in ("div", "rem"):
        if _TYPE_BYTES.get(t, 4) == 8:
            # operands that fit in 32 bits (their high words tested) divide as unsigned 32-bit
            # ones; larger ones call the slow path (~70), which indices and sizes never take
            ints = 2 + division_ints(base, "u32")
            return add(int_ops=ints, special=1, conversions=2, branches=2, divisions=1)
        ints = division_ints(base, t)
        return add(int_ops=ints, special=1, conversions=2, divisions=1)
    if base == "clz":
        return add(int_ops=2)
    if base in ("mul", "mad") and _TYPE_BYTES.get(t, 4) == 8 and "wide" not in mods:
        return add(int_ops=3 if "lo" in mods or not ({"hi"} & set(mods)) else 4)
    if base in _INT_SIMPLE:
        return add(int_ops=1)
    return add(other=1)


_ASM_OPCODE = re.compile(r"^(?:@!?%?\w+\s+)?([a-z][\w.:]*)")


def asm_mix(template: str) -> LineMix:
    """The counts of an inline PTX ``asm`` statement from its template
    (``"fma.rn.f32 %0, %1, %2, %0;"``): its instructions (separated by ``;`` or new lines;
    braces, labels and ``.reg`` directives skipped), each as :func:`opcode_mix` counts it."""
    total = EMPTY
    for part in re.split(r"[;\n]", template):
        ins = re.sub(r"^\s*(?:[\w$]+:\s*)?", "", part.replace("{", " ").replace("}", " "))
        m = _ASM_OPCODE.match(ins.strip())
        if m is not None:
            total = total + opcode_mix(m.group(1))
    return total
