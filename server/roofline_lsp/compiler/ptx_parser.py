"""Parsing PTX (from nvcc or clang): every ``.entry`` (kernel) and ``.func`` with per-source-line
:class:`LineMix` counts, through the ``.loc``/``.file`` line info (direct line, and the
outermost ``inlined_at`` call site), its callees and its loops (backward branches)."""

from __future__ import annotations

import bisect
import functools
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from roofline_lsp.compiler.demangle import ptx_base_name
from roofline_lsp.compiler.instruction_mix import (
    EMPTY,
    NUM_FIELDS,
    LineMix,
    division_ints,
    opcode_mix,
)

__all__ = ["Key", "PtxFunction", "PtxLoop", "PtxModule", "parse_ptx", "parse_ptx_cached"]


Key = tuple[str, int]  # (source file, 1-based line); line 0 = compiler-generated


@dataclass(frozen=True)
class PtxLoop:
    """A loop found from a backward branch: its label, the source lines of its body (direct
    attribution) and the counts of one pass through the body.

    ``control_mix``/``inlined_mix``/``calls`` describe what one pass runs *on the loop
    statement's line* (call-site attribution, nested loops with another control line left
    out): the line's own instructions (the compare, the increments; in a one-line loop also
    the body), code inlined there from a callee, and the ``.func`` symbols called there. A
    one-line loop whose body is a device-function call has all its work in the last two."""

    label: str
    first_line: int  # smallest / largest line of the body in ``file``
    last_line: int
    file: str
    lines: frozenset[Key]
    depth: int  # 1 = outermost
    mix: LineMix
    control: Key = ("", 0)  # the line of the back edge: the loop statement (``for``/``while``)
    control_mix: LineMix = EMPTY
    inlined_mix: LineMix = EMPTY
    calls: tuple[str, ...] = ()
    span: tuple[int, int] = (0, 0)  # first and last instruction (indices into the function)


@dataclass(frozen=True)
class PtxRun:
    """Consecutive instructions of one call-site line, in program order: where inlined code
    without ``inlined_at`` (clang before LLVM 17) was put, between the lines of its caller."""

    key: Key
    mix: LineMix
    first: int  # instruction indices
    last: int


@dataclass(frozen=True)
class CfgLoop:
    """A natural loop of the control-flow graph (a back edge to a block dominating its source,
    with every block reaching it without passing the header), which need not be contiguous in
    the PTX text as clang lays out its blocks: the instruction ranges of its blocks and the
    source lines of their instructions (direct attribution)."""

    blocks: tuple[tuple[int, int], ...]  # first and last instruction of each block
    lines: frozenset[Key]
    # per line of the body, the integer instructions (``int_ops`` weights) a complete unroll
    # of the loop folds away (:func:`_unroll_folded`): (its control, its address arithmetic)
    folded: Mapping[Key, tuple[int, int]] = field(default_factory=dict, compare=False)

    def holds(self, index: int) -> bool:
        return any(a <= index <= b for a, b in self.blocks)


@dataclass(frozen=True)
class PtxFunction:
    name: str  # mangled symbol
    base_name: str  # demangled qualified name without parameters or template arguments
    is_kernel: bool
    lines: Mapping[Key, LineMix] = field(compare=False)  # direct attribution
    callsite_lines: Mapping[Key, LineMix] = field(compare=False)  # outermost inlined_at site
    calls: tuple[str, ...] = ()
    loops: tuple[PtxLoop, ...] = ()
    total: LineMix = EMPTY
    runs: tuple[PtxRun, ...] = field(default=(), compare=False)
    cfg_loops: tuple[CfgLoop, ...] = field(default=(), compare=False)
    # call-site lines whose inlined code branches on a condition: the files of that code
    # (a user's device function with an ``if`` or an unrolled guarded loop, a math function)
    steered: Mapping[Key, frozenset[str]] = field(default_factory=dict, compare=False)
    # call-site lines whose every instruction sits on an arm of conditional branches: the
    # call-site lines of those branches (the ``if`` whose condition skips the line's code;
    # code the compiler computes on both paths and selects, ``selp``, is on no arm)
    skipped_by: Mapping[Key, frozenset[Key]] = field(default_factory=dict, compare=False)

    @property
    def short_name(self) -> str:
        return self.base_name.rsplit("::", 1)[-1]


@dataclass(frozen=True)
class PtxModule:
    version: str
    target: str
    files: Mapping[int, str]
    functions: Mapping[str, PtxFunction] = field(compare=False)

    @property
    def kernels(self) -> tuple[PtxFunction, ...]:
        return tuple(f for f in self.functions.values() if f.is_kernel)


_FUNC_RE = re.compile(
    r"^\s*(?:\.(?:visible|weak|extern|entry_point)\s+)*\.(entry|func)\s+"
    r"(?:\([^)]*\)\s*)?([A-Za-z_$%][\w$.]*)"
)
_LOC_RE = re.compile(
    r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)"
    r"(?:\s*,\s*function_name\s+[\w$.]+)?"
    r"(?:\s*,\s*inlined_at\s+(\d+)\s+(\d+)\s+(\d+))?"
)
_FILE_RE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s*,?\s*"([^"]*)")?')
_LABEL_RE = re.compile(r"^\s*([\w$.]+):(?!:)")  # not "ld.shared::cta"
_CP_SIZE_RE = re.compile(r",\s*(\d+)\s*(?:,|;|$)")
_IDENT_RE = re.compile(r"[A-Za-z_$][\w$]*")


@dataclass
class _Instr:
    opcode: str
    operands: str
    direct: tuple[int, int]
    callsite: tuple[int, int]
    guarded: bool = False  # predicated (``@%p bra``: a conditional branch)


def _strip_comment(line: str) -> str:
    i = line.find("//")
    return line if i < 0 else line[:i]


def parse_ptx(text: str) -> PtxModule:
    """Parse PTX text (from nvcc or clang) into per-function, per-line counts."""
    lines = text.splitlines()
    files: dict[int, str] = {}
    version = target = ""
    raw_funcs: list[tuple[str, bool, list[_Instr], dict[str, int]]] = []
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        s = line.strip()
        if s.startswith(".version"):
            version = s.split()[1] if len(s.split()) > 1 else ""
        elif s.startswith(".target"):
            target = s.split()[1].rstrip(",") if len(s.split()) > 1 else ""
        elif s.startswith(".file"):
            m = _FILE_RE.match(s)
            if m:
                p = os.path.join(m.group(2), m.group(3)) if m.group(3) else m.group(2)
                files[int(m.group(1))] = p
        m = _FUNC_RE.match(line)
        if m and not s.startswith("//"):
            kind, name = m.group(1), m.group(2)
            # find the body: "{" alone on a line, or a ";" ending a declaration
            depth = line.count("(") - line.count(")")
            j = i
            body_start = None
            while j < n:
                t = _strip_comment(lines[j]).strip()
                if j > i:
                    depth += t.count("(") - t.count(")")
                if t == "{" or (t.endswith("{") and depth <= 0 and j > i):
                    body_start = j
                    break
                if depth <= 0 and t.endswith(";"):
                    break
                j += 1
            if body_start is None:
                i = j + 1
                continue
            instrs, labels, end = _parse_body(lines, body_start + 1)
            raw_funcs.append((name, kind == "entry", instrs, labels))
            i = end + 1
            continue
        i += 1
    names = {r[0] for r in raw_funcs}
    functions: dict[str, PtxFunction] = {}
    for name, is_kernel, instrs, labels in raw_funcs:
        functions[name] = _build_function(name, is_kernel, instrs, labels, files, names)
    return PtxModule(version, target, files, functions)


def _parse_body(lines: list[str], start: int) -> tuple[list[_Instr], dict[str, int], int]:
    instrs: list[_Instr] = []
    labels: dict[str, int] = {}
    inl: dict[tuple[int, int, int], tuple[int, int, int] | None] = {}
    direct = (0, 0)
    callsite = (0, 0)
    depth = 1
    i = start
    n = len(lines)
    pending: list[str] = []  # the rest of a line holding several statements
    while i < n or pending:
        if pending:
            s = pending.pop()
        else:
            s = _strip_comment(lines[i]).strip()
            i += 1
        if not s:
            continue
        # inline-asm scopes on one line: "{ .reg .f32 r0; shfl.sync...; mov.f32 %f1, r0;}"
        # (braces inside operands, "{%f1, %f2}", sit before the statement's ";")
        head, sep, tail = s.partition(";")
        if sep and tail.strip():
            pending.append(tail.strip())
            s = head + ";"
        if s.startswith("{"):
            depth += 1
            s = s[1:].strip()
            if not s:
                continue
        if s.startswith("}"):
            depth -= 1
            if depth == 0:
                return instrs, labels, i - 1
            continue
        if s.startswith("."):
            if s.startswith(".loc"):
                m = _LOC_RE.match(s)
                if m:
                    f, ln, col = int(m.group(1)), int(m.group(2)), int(m.group(3))
                    direct = (f, ln)
                    if m.group(4):
                        at = (int(m.group(4)), int(m.group(5)), int(m.group(6)))
                        inl[(f, ln, col)] = at
                        cur = at
                        for _ in range(64):
                            nxt = inl.get(cur)
                            if nxt is None:
                                break
                            cur = nxt
                        callsite = (cur[0], cur[1])
                    else:
                        inl[(f, ln, col)] = None
                        callsite = direct
            continue
        m = _LABEL_RE.match(s)
        if m and not s.startswith("@"):
            labels[m.group(1)] = len(instrs)
            s = s[m.end() :].strip()
            if not s:
                continue
        # an instruction; it may span several lines (call sequences) up to ";"
        while ";" not in s and i < n:
            cont = _strip_comment(lines[i]).strip()
            i += 1
            s += " " + cont
        s = s.split(";", 1)[0].strip()
        guarded = s.startswith("@")
        if guarded:
            parts = s.split(None, 1)
            s = parts[1] if len(parts) > 1 else ""
        if not s:
            continue
        parts = s.split(None, 1)
        instrs.append(
            _Instr(parts[0], parts[1] if len(parts) > 1 else "", direct, callsite, guarded)
        )
    return instrs, labels, n - 1


def _callee(operands: str) -> str | None:
    """The direct call target; None for an indirect call (through a register)."""
    rest = re.sub(r"\([^()]*\)", " ", operands)
    toks = [t.strip() for t in rest.split(",") if t.strip()]
    if toks and _IDENT_RE.fullmatch(toks[0]):
        return toks[0]
    return None


@functools.lru_cache(maxsize=4096)
def _sparse(mix: LineMix) -> tuple[tuple[int, int], ...]:
    return tuple((i, getattr(mix, f)) for i, f in enumerate(NUM_FIELDS) if getattr(mix, f))


def _to_mix(acc: list[int], calls: list[str] | None = None) -> LineMix:
    return LineMix(**dict(zip(NUM_FIELDS, acc, strict=True)), calls=tuple(calls or ()))


_ADD64 = frozenset({"add.s64", "add.u64"})
_REG_RE = re.compile(r"%[A-Za-z]+\d*")
_FUSED = ((NUM_FIELDS.index("instructions"), 1), (NUM_FIELDS.index("other"), 1))
_LD_GLOBAL_BYTES = NUM_FIELDS.index("ld_global_bytes")
_ST_SHARED_BYTES = NUM_FIELDS.index("st_shared_bytes")
_SIGN_FLOP = {"f32": NUM_FIELDS.index("flops_fp32"), "f64": NUM_FIELDS.index("flops_fp64")}
# instructions that take a negated or absolute operand as a modifier (FFMA R0, -R1, ...)
_MODIFIER_USERS = frozenset({"add", "sub", "mul", "fma", "mad", "setp", "min", "max", "neg", "abs"})
_NO_DEST = frozenset({"st", "red", "bra", "bar", "ret", "exit", "trap", "call", "prefetch"})


def _materialized_signs(instrs: list[_Instr]) -> set[int]:
    """The ``neg.f32/f64`` and ``abs.f32/f64`` whose result some instruction takes as it is
    (a store, a select, a conversion): ptxas makes them an FADD/DADD (``DADD R0, -RZ, -R2``,
    a complex conjugate's ``b.im = -a.im``), one FLOP as Nsight counts. Used only by
    arithmetic, they are operand modifiers (no instruction). A negated sum or product
    (``-(k * x)``) counts nothing: clang folds the sign into that operation (``(-k) * x``),
    as the evaluation set's builds show (nvcc keeps a DADD for a double one)."""
    defs: dict[str, int] = {}
    computed: set[str] = set()  # registers an FP add/sub/mul/fma wrote
    out: set[int] = set()
    for j, ins in enumerate(instrs):
        base = ins.opcode.split(".", 1)[0]
        kind = ins.opcode.rsplit(".", 1)[-1]
        regs = _REG_RE.findall(ins.operands)
        for r in regs if base in _NO_DEST else regs[1:]:
            k = defs.get(r)
            if k is not None and base not in _MODIFIER_USERS:
                out.add(k)
        if not regs or kind not in _SIGN_FLOP:
            continue
        if base in ("add", "sub", "mul", "fma", "mad"):
            computed.add(regs[0])
        elif base == "abs" or base == "neg" and not computed.intersection(regs[1:]):
            defs[regs[0]] = j
    return out


# a memory operand's immediate offset SASS holds (24 bits, signed): ptxas computes a new base
# for one farther away (``IADD3 R6, P0, R2, 0x1000000`` + ``IADD3.X``), shared by the
# accesses of the same register within 8 MiB of it
_OFFSET_REACH = 1 << 23
_ADDRESS_RE = re.compile(r"\[\s*(%rd\d+)\s*\+\s*(-?\d+)\s*\]")
_FAR_BASE = ((NUM_FIELDS.index("int_ops"), 2),)


def _far_offsets(instrs: list[_Instr]) -> set[int]:
    """The loads and stores whose address is a 64-bit register plus an immediate too far
    for SASS (``st.global.f64 [%rd11+134217728]``, an unrolled ``a[i + 16777216]``) that
    open a new 16 MiB window of that register: ptxas materialises the window's base with a
    64-bit add (two integer instructions), which later accesses in the window share until
    the register is written again."""
    windows: dict[str, set[int]] = {}
    out: set[int] = set()
    for j, ins in enumerate(instrs):
        base = ins.opcode.split(".", 1)[0]
        if base in ("ld", "ldu", "st", "atom", "red"):
            for reg, imm in _ADDRESS_RE.findall(ins.operands):
                offset = int(imm)
                if -_OFFSET_REACH <= offset < _OFFSET_REACH:
                    continue
                window = (offset + _OFFSET_REACH) >> 24
                seen = windows.setdefault(reg, set())
                if window not in seen:
                    seen.add(window)
                    out.add(j)
        if base not in _NO_DEST:
            regs = _REG_RE.findall(ins.operands.split(",", 1)[0])
            if regs:
                windows.pop(regs[0], None)
    return out


# 32-bit integer operations SASS merges with their single-use operand's producer into one
# three-input instruction: adds (``IADD3 R0, R1, R2, R3``: ``a + b + c``, a subtraction as a
# negated operand) and bitwise logic (``LOP3``: any function of three inputs)
_THREE_INPUT = {
    "add": "add", "sub": "add", "and": "logic", "or": "logic", "xor": "logic", "not": "logic",
}  # fmt: skip
_WORD_TYPES = frozenset({"s32", "u32", "b32"})


def _three_input_merges(instrs: list[_Instr], leaders: frozenset[int]) -> set[int]:
    """The 32-bit adds and logic operations that SASS folds into the next one of their kind
    in the same basic block: the producer's result has no other use, and the merged operation
    takes at most three inputs (``s = a + b; t = s + c`` is one IADD3, ``x ^ y ^ z`` one
    LOP3; a chain of adds, a reduction's unrolled sum, merges in pairs). Also a left shift
    by a constant feeding an add (``LEA``). Those producers count no integer instruction."""
    defs: dict[str, int] = {}
    uses: dict[str, int] = {}
    operands: list[list[str]] = []
    block: list[int] = []  # the basic block of each instruction
    for j, ins in enumerate(instrs):
        block.append((block[-1] if block else 0) + (j in leaders and j > 0))
        base = ins.opcode.split(".", 1)[0]
        toks = _operands(ins.operands)
        if base in _NO_DEST or not toks or not toks[0]:
            operands.append([])
            srcs = toks
        else:
            operands.append(toks[1:])
            srcs = toks[1:]
            for r in _REG_RE.findall(toks[0]):
                defs[r] = -1 if r in defs else j
        for t in srcs:
            for r in _REG_RE.findall(t):
                uses[r] = uses.get(r, 0) + 1

    def family(ins: _Instr) -> str | None:
        parts = ins.opcode.split(".")
        if ins.guarded or len(parts) != 2 or parts[1] not in _WORD_TYPES:
            return None
        if parts[0] == "shl":
            return "shift"
        return _THREE_INPUT.get(parts[0])

    merged: set[int] = set()
    inputs = [len(ops) for ops in operands]
    for j, ins in enumerate(instrs):
        kind = family(ins)
        if kind not in ("add", "logic"):
            continue
        for t in operands[j]:
            i = defs.get(t, -1)
            if not (0 <= i < j) or uses.get(t) != 1 or i in merged or block[i] != block[j]:
                continue
            producer = family(instrs[i])
            if producer == "shift":
                lea = kind == "add" and inputs[j] == 2 and not _REG_RE.search(operands[i][-1])
                if lea and not instrs[j].opcode.startswith("sub"):
                    merged.add(i)
                    inputs[j] = 3
                continue
            if producer == kind and inputs[j] - 1 + inputs[i] <= 3:
                merged.add(i)
                inputs[j] += inputs[i] - 1
    return merged


def _build_function(
    name: str,
    is_kernel: bool,
    instrs: list[_Instr],
    labels: dict[str, int],
    files: Mapping[int, str],
    func_names: set[str],
) -> PtxFunction:
    nf = len(NUM_FIELDS)

    def key(loc: tuple[int, int]) -> Key:
        return (files.get(loc[0], f"<file {loc[0]}>") if loc[0] else "", loc[1])

    # a mul.wide feeding a 64-bit add is one IMAD.WIDE in SASS: count the pair once
    add64_operands: set[str] = set()
    for ins in instrs:
        if ins.opcode in _ADD64:
            add64_operands.update(_REG_RE.findall(ins.operands.split(",", 1)[-1]))
    sparse: list[tuple[tuple[int, int], ...]] = []
    targets: list[str | None] = []
    calls: list[str] = []
    signs = _materialized_signs(instrs)
    far = _far_offsets(instrs)
    cfg = _Cfg(instrs, labels)
    merged = _three_input_merges(instrs, cfg.leaders)
    bodies = cfg.natural_loops()
    hoisted = _hoisted_divisions(instrs, cfg, bodies)
    for j, ins in enumerate(instrs):
        sp = _sparse(opcode_mix(ins.opcode))
        if j in hoisted:
            sp = sp + ((_INT_OPS, hoisted[j]),)
        if j in signs:
            sp = sp + ((_SIGN_FLOP[ins.opcode.rsplit(".", 1)[-1]], 1),)
        if j in far:
            sp = sp + _FAR_BASE
        if j in merged:
            sp = _FUSED
        base = ins.opcode.split(".", 1)[0]
        target = None
        if ins.opcode.startswith("mul.wide.") and add64_operands:
            dest = ins.operands.split(",", 1)[0].strip()
            if dest in add64_operands:
                sp = _FUSED
        if base == "call":
            target = _callee(ins.operands)
        elif base == "mov" and func_names:
            for tok in _IDENT_RE.findall(ins.operands):
                if tok in func_names and tok != name:
                    target = tok
                    break
        elif base == "cp" and ins.opcode.startswith("cp.async") and "shared" in ins.opcode:
            m = _CP_SIZE_RE.search(ins.operands + ";")
            size = int(m.group(1)) if m else 0
            if size:
                sp = sp + ((_LD_GLOBAL_BYTES, size), (_ST_SHARED_BYTES, size))
        if target and target not in calls:
            calls.append(target)
        sparse.append(sp)
        targets.append(target)
    direct: dict[Key, list[int]] = {}
    site: dict[Key, list[int]] = {}
    direct_calls: dict[Key, list[str]] = {}
    site_calls: dict[Key, list[str]] = {}
    total = [0] * nf
    # consecutive instructions of one call-site line in one basic block:
    # [key, counts, calls, first index]
    leaders = cfg.leaders
    runs: list[tuple[Key, list[int], list[str], int]] = []
    for j, (ins, sp, target) in enumerate(zip(instrs, sparse, targets, strict=True)):
        k = key(ins.direct)
        k2 = key(ins.callsite)
        a = direct.get(k)
        if a is None:
            a = direct[k] = [0] * nf
        b = site.get(k2)
        if b is None:
            b = site[k2] = [0] * nf
        if not runs or instrs[runs[-1][3]].callsite != ins.callsite or j in leaders:
            runs.append((k2, [0] * nf, [], j))
        r = runs[-1][1]
        for idx, v in sp:
            a[idx] += v
            b[idx] += v
            r[idx] += v
            total[idx] += v
        if target:
            for lst in (direct_calls.setdefault(k, []), site_calls.setdefault(k2, []), runs[-1][2]):
                if target not in lst:
                    lst.append(target)
    loops = _loops(instrs, labels, sparse, targets, key)
    steered: dict[Key, set[str]] = {}
    for ins in instrs:
        if ins.guarded and ins.opcode.startswith("bra") and ins.direct != ins.callsite:
            steered.setdefault(key(ins.callsite), set()).add(key(ins.direct)[0])
    skipped_by: dict[Key, set[Key]] = {}
    arms = cfg.arms(instrs)
    for block, (start, end) in enumerate(cfg.blocks):
        conditions = {key(instrs[j].callsite) for j in arms.get(block, set())}
        for j in range(start, end + 1):
            line_key = key(instrs[j].callsite)
            held = skipped_by.get(line_key)
            skipped_by[line_key] = set(conditions) if held is None else held & conditions
    ends = [first - 1 for *_, first in runs[1:]] + [len(instrs) - 1] * bool(runs)
    return PtxFunction(
        name,
        ptx_base_name(name),
        is_kernel,
        {k: _to_mix(v, direct_calls.get(k)) for k, v in direct.items()},
        {k: _to_mix(v, site_calls.get(k)) for k, v in site.items()},
        tuple(calls),
        loops,
        _to_mix(total, calls),
        tuple(
            PtxRun(k, _to_mix(acc, called), first, last)
            for (k, acc, called, first), last in zip(runs, ends, strict=True)
        ),
        tuple(
            CfgLoop(
                tuple(cfg.blocks[b] for b in sorted(body)),
                frozenset(
                    k
                    for b in body
                    for j in range(cfg.blocks[b][0], cfg.blocks[b][1] + 1)
                    if (k := key(instrs[j].direct))[1] > 0
                ),
                _folded_lines(instrs, sparse, cfg, body, key),
            )
            for body in bodies
        ),
        {k: frozenset(v) for k, v in steered.items()},
        {k: frozenset(v) for k, v in skipped_by.items() if v and k[1] > 0},
    )


_INT_OPS = NUM_FIELDS.index("int_ops")
_INT_TYPE_RE = re.compile(r"\.[bsu](?:8|16|32|64)\b")
_IMMEDIATE_RE = re.compile(r"-?(?:0[xX][0-9a-fA-F]+|\d+)U?|[A-Za-z_$][\w$]*")
_AFFINE_OPS = frozenset({"add", "sub", "mul", "shl", "mad", "cvt", "mov"})
_STEP_OPS = frozenset({"add", "sub", "mul", "shl", "shr", "div"})
_DIVISION_RE = re.compile(r"(div|rem)\.([su]32)\b")
# arithmetic whose result is a constant when its operands are, or a loop leaves unchanged
# when it leaves them unchanged (no loads)
_INVARIANT_OPS = _AFFINE_OPS | frozenset(
    ("shr", "and", "or", "xor", "not", "min", "max", "cvta", "div", "rem")
)


def _steps(ins: _Instr, values: list[str], reg: str) -> bool:
    """Whether ``ins`` (its source operands: ``values``) steps ``reg`` in place by a constant:
    adds it, or scales by it (``offset >>= 1``, ``i *= 2``: a geometric induction variable,
    a constant in each copy of the unrolled loop as well)."""
    return (
        ins.opcode.split(".", 1)[0] in _STEP_OPS
        and bool(_INT_TYPE_RE.search(ins.opcode))
        and len(values) == 2
        and values[0] == reg
        and bool(_IMMEDIATE_RE.fullmatch(values[1]))
    )


def _steps_through(
    instrs: list[_Instr],
    parsed: Mapping[int, tuple[str, list[str], list[str]]],
    defs: Mapping[str, list[int]],
    j: int,
    reg: str,
) -> bool:
    """Whether ``instrs[j]`` steps ``reg`` by a constant through another register: ``mov reg,
    t`` where the loop's one definition of ``t`` steps ``reg`` (``t = iter - 1``, used in the
    body too, then ``iter = t``: how ``-O1`` PTX carries a counter whose next value the body
    reads)."""
    ins = instrs[j]
    values = parsed[j][1]
    if not ins.opcode.startswith("mov") or len(values) != 1:
        return False
    where = defs.get(values[0], [])
    if len(where) != 1:
        return False
    k = where[0]
    return _steps(instrs[k], parsed[k][1], reg)


def _local_address(
    instrs: list[_Instr],
    parsed: Mapping[int, tuple[str, list[str], list[str]]],
    users: Sequence[int],
    reg: str,
) -> bool:
    """Whether every use of ``reg`` is the address of a load or store of local memory."""
    return bool(users) and all(
        instrs[k].opcode.split(".", 2)[:2] in (["ld", "local"], ["st", "local"])
        and _only_address(parsed[k], reg)
        for k in users
    )


def _only_address(parsed: tuple[str, list[str], list[str]], reg: str) -> bool:
    """Whether an instruction (``parsed``: dest, value operands, address registers) takes
    ``reg`` as a memory operand's address and not as a value."""
    return reg in parsed[2] and reg not in parsed[1]


def _resets(ins: _Instr, values: list[str]) -> bool:
    """Whether ``ins`` (its source operands: ``values``) sets its register to a constant."""
    return (
        ins.opcode.startswith("mov")
        and len(values) == 1
        and bool(_IMMEDIATE_RE.fullmatch(values[0]))
    )


def _operands(text: str) -> list[str]:
    """The comma-separated operands of an instruction (braces and brackets kept whole)."""
    out: list[str] = []
    depth = 0
    cur = ""
    for ch in text:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _unroll_folded(
    instrs: list[_Instr], body: list[int]
) -> tuple[set[int], set[int], dict[int, int]]:
    """The instructions of a loop body (indices, in program order) that unrolling the loop
    completely leaves no trace of, as NVVM's and LLVM's full unroll of a constant-count loop
    does, in two groups, and what is left of divisions by a constant in each copy. Its control:
    the induction variables' updates (a register whose one update in the loop steps it by a
    constant: ``i += 1``, ``offset >>= 1``; an inner loop's counter, reset to a constant on each
    entry, too), values computed from them and constants alone (each copy's is a constant), the
    tests on those, and divisions by them, but for the few instructions of a division by a
    constant (``ty % i``: ``ty & 3`` in the copy where i is 4), and the address of a per-thread
    array's element (at a constant index in each copy, the array becomes registers); a counter
    may step through another register (``t = iter - 1; ...; iter = t``). Its address
    arithmetic: code the loop does not change (computed from values set before it), and
    affine arithmetic ``base + c * i`` whose every use is a memory operand's address or more
    such arithmetic (each copy's address is ``[base + imm]``). A value used otherwise (a bound
    check, a stored index) keeps its instruction."""
    defs: dict[str, list[int]] = {}
    parsed: dict[int, tuple[str, list[str], list[str]]] = {}  # dest, value operands, addresses
    for j in body:
        ins = instrs[j]
        ops = _operands(ins.operands)
        base = ins.opcode.split(".", 1)[0]
        dest = ""
        if ops and base not in _NO_DEST and _REG_RE.fullmatch(ops[0]):
            dest, ops = ops[0], ops[1:]
            defs.setdefault(dest, []).append(j)
        values = [o for o in ops if not o.startswith("[")]
        addresses = [r for o in ops if o.startswith("[") for r in _REG_RE.findall(o)]
        parsed[j] = (dest, values, addresses)
    pure: dict[str, bool] = {}  # affine registers: True when built from constants and IVs only
    control: set[int] = set()  # the induction variables' updates
    kept: dict[int, int] = {}  # divisions by them: what a division by a constant keeps
    for reg, where in defs.items():
        steps = [j for j in where if _steps(instrs[j], parsed[j][1], reg)]
        steps += [j for j in where if _steps_through(instrs, parsed, defs, j, reg)]
        resets = [j for j in where if _resets(instrs[j], parsed[j][1])]
        if len(steps) == 1 and len(steps) + len(resets) == len(where):
            pure[reg] = True
            control.update(where)
    hoisted: set[str] = set()  # computed in the loop from values that do not change in it

    def kind(op: str) -> str:
        if op in pure:
            return "pure" if pure[op] else "affine"
        if op.startswith("%"):  # a register, or a special one (``%tid.x``)
            return "invariant" if op not in defs or op in hoisted else "other"
        return "constant" if _IMMEDIATE_RE.fullmatch(op) else "other"

    affine: set[int] = set()
    for j in body:
        dest, values, _ = parsed[j]
        ins = instrs[j]
        base = ins.opcode.split(".", 1)[0]
        if not dest or j in control or len(defs[dest]) != 1:
            continue
        kinds = [kind(v) for v in values]
        if base in _INVARIANT_OPS and kinds and set(kinds) <= {"invariant", "constant"}:
            hoisted.add(dest)
            affine.add(j)
            continue
        if base in _INVARIANT_OPS and kinds and set(kinds) <= {"pure", "constant"}:
            pure[dest] = True  # a constant in each copy (``(i << 4) | 1``)
            affine.add(j)
            continue
        if (
            base not in _AFFINE_OPS
            or not _INT_TYPE_RE.search(ins.opcode)
            or "other" in kinds
            or not ({"pure", "affine"} & set(kinds))
        ):
            continue
        if base in ("mul", "shl"):
            ok = sorted(kinds) in (["constant", "pure"], ["affine", "constant"])
            if base == "shl":
                ok = kinds[1] == "constant"
        elif base == "mad":
            scaled = kinds[:2]
            ok = len(kinds) == 3 and (
                "constant" in scaled or not ({"pure", "affine"} & set(scaled))
            )
        else:
            ok = base in ("add", "sub") or len(kinds) == 1
        if ok:
            pure[dest] = all(k in ("pure", "constant") for k in kinds)
            affine.add(j)
    addressing: set[int] = set()
    uses: dict[str, list[int]] = {}
    for j in body:
        _, values, addresses = parsed[j]
        for r in {*values, *addresses}:
            uses.setdefault(r, []).append(j)
    for j in body:
        dest, values, _ = parsed[j]
        if j in affine:
            if pure.get(dest):
                control.add(j)
            elif dest not in hoisted and _local_address(instrs, parsed, uses.get(dest, ()), dest):
                # an element of a per-thread array at a constant index in each copy: the
                # array becomes registers (SROA), its addresses go with it
                control.add(j)
            elif dest in hoisted or all(
                k in affine or _only_address(parsed[k], dest) for k in uses.get(dest, ())
            ):
                addressing.add(j)
        elif (
            instrs[j].opcode.startswith("setp")
            and values
            and all(kind(v) in ("pure", "constant") for v in values[-2:])
        ):
            control.add(j)  # the exit test
        elif (m := _DIVISION_RE.match(instrs[j].opcode)) and values and kind(values[-1]) == "pure":
            control.add(j)  # ... all but a division by a constant
            kept[j] = division_ints(m[1], m[2], constant=True)
    return control, addressing, kept


def _folded_lines(
    instrs: list[_Instr],
    sparse: list[tuple[tuple[int, int], ...]],
    cfg: _Cfg,
    body: set[int],
    key: Callable[[tuple[int, int]], Key],
) -> dict[Key, tuple[int, int]]:
    """The integer instructions (``int_ops`` weights) per line of a natural loop (``body``:
    its blocks) that unrolling it completely folds (:func:`_unroll_folded`)."""
    order = [j for b in sorted(body) for j in range(cfg.blocks[b][0], cfg.blocks[b][1] + 1)]
    control, addressing, kept = _unroll_folded(instrs, order)
    out: dict[Key, tuple[int, int]] = {}
    for part, group in enumerate((control, addressing)):
        for j in group:
            n = sum(v for i, v in sparse[j] if i == _INT_OPS) - kept.get(j, 0)
            if n:
                k = key(instrs[j].direct)
                old = out.get(k, (0, 0))
                out[k] = (old[0] + n, old[1]) if part == 0 else (old[0], old[1] + n)
    return out


def _hoisted_divisions(instrs: list[_Instr], cfg: _Cfg, bodies: list[set[int]]) -> dict[int, int]:
    """Integer instructions to move between instructions (negative: off it) for the 32-bit
    divisions in a loop (``bodies``: the natural loops' blocks) by a register the innermost
    loop around them does not write (a kernel argument, a value computed before the loop):
    ptxas computes the divisor's reciprocal where the divisor is computed, once for all the
    divisions by it, not on every trip."""
    innermost: dict[int, set[int]] = {}  # division -> the instructions of its innermost loop
    for body in bodies:
        order = {j for b in body for j in range(cfg.blocks[b][0], cfg.blocks[b][1] + 1)}
        for j in order:
            held = innermost.get(j)
            if _DIVISION_RE.match(instrs[j].opcode) and (held is None or len(order) < len(held)):
                innermost[j] = order
    if not innermost:
        return {}  # (most functions: no operand is parsed for this)
    writers: dict[str, list[int]] = {}
    for j, ins in enumerate(instrs):
        ops = _operands(ins.operands)
        if ops and ops[0].startswith("%"):
            writers.setdefault(ops[0], []).append(j)
    out: dict[int, int] = {}
    charged: set[str] = set()
    for j, loop in sorted(innermost.items()):
        m = _DIVISION_RE.match(instrs[j].opcode)
        ops = _operands(instrs[j].operands)
        if m is None or len(ops) != 3:
            continue
        defs = writers.get(ops[2], [])
        if len(defs) != 1 or defs[0] in loop:
            continue
        reciprocal = division_ints(m[1], m[2]) - division_ints(m[1], m[2], hoisted=True)
        out[j] = out.get(j, 0) - reciprocal
        if ops[2] not in charged:
            charged.add(ops[2])
            out[defs[0]] = out.get(defs[0], 0) + reciprocal
    return out


_ARM_BUDGET = 200_000  # block memberships ``_Cfg.arms`` records in one function, at most


class _Cfg:
    """Basic blocks of a function (a label or the instruction after a branch, ``ret`` or
    ``exit`` starts one) and their successors."""

    def __init__(self, instrs: list[_Instr], labels: Mapping[str, int]) -> None:
        n = len(instrs)
        starts = {0} if n else set()
        starts.update(i for i in labels.values() if i < n)
        for j, ins in enumerate(instrs):
            if ins.opcode.startswith(("bra", "ret", "exit", "trap")) and j + 1 < n:
                starts.add(j + 1)
        first = sorted(starts)
        ends = [*first[1:], n] if first else []
        self.blocks = [(a, b - 1) for a, b in zip(first, ends, strict=True)]
        self.leaders = frozenset(first)
        index = {a: k for k, (a, _) in enumerate(self.blocks)}
        self.succ: list[list[int]] = []
        for k, (_, last) in enumerate(self.blocks):
            ins = instrs[last]
            out: list[int] = []
            if ins.opcode.startswith("bra"):
                t = labels.get(ins.operands.strip().split(",")[0].strip())
                if t is not None and t in index:
                    out.append(index[t])
                falls = ins.guarded
            else:
                falls = not (ins.opcode.startswith(("ret", "exit", "trap")) and not ins.guarded)
            if falls and k + 1 < len(self.blocks):
                out.append(k + 1)
            self.succ.append(out)

    def natural_loops(self) -> list[set[int]]:
        """The blocks of each natural loop (loops sharing a header merged), from the
        dominator tree (Cooper, Harvey and Kennedy's iterative algorithm)."""
        if not self.blocks:
            return []
        order, preds, dominates, _subtree = self._dominators
        bodies: dict[int, set[int]] = {}
        for b in order:
            for h in self.succ[b]:
                if not dominates(h, b):
                    continue
                body = bodies.setdefault(h, {h})
                todo = [b]
                while todo:
                    x = todo.pop()
                    if x not in body:
                        body.add(x)
                        todo.extend(preds[x])
        return [bodies[h] for h in sorted(bodies, key=lambda h: self.blocks[h][0])]

    def arms(self, instrs: list[_Instr]) -> dict[int, set[int]]:
        """For each block, the conditional branches (instruction indices) it sits on an arm
        of: blocks dominated by a successor of the branch that has no other predecessor
        (the ``then`` of an ``if``, the rest of a kernel after an early exit; not the join
        where the paths meet again)."""
        if not self.blocks:
            return {}
        order, preds, _dominates, subtree = self._dominators
        out: dict[int, set[int]] = {}
        budget = _ARM_BUDGET  # (a long chain of early exits: each arm holds the rest)
        for p in order:
            last = self.blocks[p][1]
            if not (instrs[last].guarded and instrs[last].opcode.startswith("bra")):
                continue
            for s in self.succ[p]:
                if preds[s] == [p]:
                    arm = subtree(s)
                    budget -= len(arm)
                    if budget < 0:
                        return {}  # too large to tell: no line counts as skipped
                    for b in arm:
                        out.setdefault(b, set()).add(last)
        return out

    @functools.cached_property
    def _dominators(
        self,
    ) -> tuple[list[int], list[list[int]], Callable[[int, int], bool], Callable[[int], list[int]]]:
        """Reverse postorder from the entry, each block's predecessors, the dominance test
        and the blocks a block dominates."""
        nb = len(self.blocks)
        order: list[int] = []  # reverse postorder from the entry block
        seen = [False] * nb
        stack: list[tuple[int, int]] = [(0, 0)]
        seen[0] = True
        while stack:
            b, i = stack.pop()
            if i < len(self.succ[b]):
                stack.append((b, i + 1))
                c = self.succ[b][i]
                if not seen[c]:
                    seen[c] = True
                    stack.append((c, 0))
            else:
                order.append(b)
        order.reverse()
        rpo = {b: i for i, b in enumerate(order)}
        preds: list[list[int]] = [[] for _ in range(nb)]
        for b in order:
            for c in self.succ[b]:
                preds[c].append(b)
        idom: dict[int, int] = {0: 0}

        def meet(a: int, b: int) -> int:
            while a != b:
                while rpo[a] > rpo[b]:
                    a = idom[a]
                while rpo[b] > rpo[a]:
                    b = idom[b]
            return a

        changed = True
        while changed:
            changed = False
            for b in order[1:]:
                done = [p for p in preds[b] if p in idom]
                if not done:
                    continue
                new = done[0]
                for p in done[1:]:
                    new = meet(new, p)
                if idom.get(b) != new:
                    idom[b] = new
                    changed = True

        # h dominates b iff b lies in h's subtree of the dominator tree: numbered in one
        # depth-first pass, each test is two comparisons (no walk up a deep tree)
        children: dict[int, list[int]] = {}
        for b in order[1:]:
            children.setdefault(idom[b], []).append(b)
        enter: dict[int, int] = {}
        leave: dict[int, int] = {}
        clock = 0
        walk: list[tuple[int, bool]] = [(0, False)]
        while walk:
            b, closing = walk.pop()
            clock += 1
            if closing:
                leave[b] = clock
                continue
            enter[b] = clock
            walk.append((b, True))
            walk.extend((c, False) for c in children.get(b, ()))

        def dominates(h: int, b: int) -> bool:
            return h in enter and b in enter and enter[h] <= enter[b] and leave[b] <= leave[h]

        by_entry = sorted(enter, key=enter.__getitem__)
        entries = [enter[b] for b in by_entry]

        def subtree(h: int) -> list[int]:
            if h not in enter:
                return []
            lo = bisect.bisect_left(entries, enter[h])
            hi = bisect.bisect_right(entries, leave[h])
            return by_entry[lo:hi]

        return order, preds, dominates, subtree


def _loops(
    instrs: list[_Instr],
    labels: dict[str, int],
    sparse: list[tuple[tuple[int, int], ...]],
    targets: list[str | None],
    key: Callable[[tuple[int, int]], Key],
) -> tuple[PtxLoop, ...]:
    best: dict[str, tuple[int, int]] = {}  # header label -> widest back edge
    for idx, ins in enumerate(instrs):
        if not ins.opcode.startswith("bra"):
            continue
        target = ins.operands.strip().split(",")[0].strip()
        start = labels.get(target)
        if start is not None and start <= idx and (target not in best or idx > best[target][1]):
            best[target] = (start, idx)
    out: list[PtxLoop] = []
    items = sorted(best.items(), key=lambda kv: (kv[1][0], -kv[1][1]))
    nf = len(NUM_FIELDS)
    for label, (start, end) in items:
        depth = 1 + sum(
            1 for _, (s2, e2) in items if (s2, e2) != (start, end) and s2 <= start and end <= e2
        )
        body_keys: set[Key] = set()
        acc = [0] * nf
        for j in range(start, end + 1):
            k = key(instrs[j].direct)
            if k[1] > 0:
                body_keys.add(k)
            for idx, v in sparse[j]:
                acc[idx] += v
        by_file: dict[str, list[int]] = {}
        for f, ln in body_keys:
            by_file.setdefault(f, []).append(ln)
        main = max(sorted(by_file), key=lambda f: len(by_file[f])) if by_file else ""
        lns = by_file.get(main, [0])
        control = key(instrs[end].direct)
        # one pass on the control line: skip the ranges of nested loops with their own line
        inner = [
            (s2, e2)
            for _, (s2, e2) in items
            if start <= s2 and e2 <= end and (s2, e2) != (start, end)
            and key(instrs[e2].direct) != control
        ]  # fmt: skip
        own = [0] * nf
        inl = [0] * nf
        called: list[str] = []
        for j in range(start, end + 1):
            if key(instrs[j].callsite) != control or any(a <= j <= b for a, b in inner):
                continue
            into = own if key(instrs[j].direct) == control else inl
            for idx, v in sparse[j]:
                into[idx] += v
            t = targets[j]
            if t and t not in called:
                called.append(t)
        out.append(
            PtxLoop(
                label,
                min(lns),
                max(lns),
                main,
                frozenset(body_keys),
                depth,
                _to_mix(acc),
                control,
                _to_mix(own),
                _to_mix(inl),
                tuple(called),
                (start, end),
            )  # fmt: skip
        )
    return tuple(out)


@functools.lru_cache(maxsize=32)
def parse_ptx_cached(text: str) -> PtxModule:
    """:func:`parse_ptx` remembered for the last few PTX texts (one file's kernels are looked
    up one by one)."""
    return parse_ptx(text)
