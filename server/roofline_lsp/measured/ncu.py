"""Measured verdicts from an Nsight Compute CSV export (``ncu --csv --page raw``).

The export has one header row of column names, a units row, then one row per profiled kernel
launch. Work per precision is the thread-level instruction count with an FMA counted twice
(``add + mul + 2 * fma``, the rule of Nsight Compute's roofline and of the eval set); DRAM
traffic is ``dram__bytes_read.sum + dram__bytes_write.sum`` (or ``dram__bytes.sum``, or its
rate times the duration). A kernel profiled several times uses its fastest launch.

Pure analysis: knows nothing of LSP.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from roofline_lsp.model.gpus import GpuProfile
from roofline_lsp.model.kernel import Kernel
from roofline_lsp.model.numbers import fmt_duration, fmt_sig
from roofline_lsp.model.verdict import PRECISIONS, Verdict, classify_bound

MAX_PROFILE_BYTES = 256 * 1024 * 1024

_INST = "smsp__sass_thread_inst_executed_op_{}_pred_on"
_OPS: dict[str, tuple[str, str, str]] = {
    "fp64": ("dadd", "dmul", "dfma"),
    "fp32": ("fadd", "fmul", "ffma"),
    "fp16": ("hadd", "hmul", "hfma"),
}
_INT = _INST.format("integer")
_TIME = "gpu__time_duration.sum"
_CYCLES_PER_S = "smsp__cycles_elapsed.avg.per_second"
_BYTE_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}
_BIN_PREFIX = {"ki": 1024.0, "mi": 1024.0**2, "gi": 1024.0**3, "ti": 1024.0**4}
_TIME_UNITS = {
    "ns": 1e-9,
    "nsecond": 1e-9,
    "us": 1e-6,
    "usecond": 1e-6,
    "ms": 1e-3,
    "msecond": 1e-3,
    "s": 1.0,
    "second": 1.0,
}


class ProfileError(ValueError):
    """The file is not a usable Nsight Compute CSV export (one-line message)."""


@dataclass(frozen=True)
class Launch:
    """One profiled kernel launch, in base units (operations, bytes, nanoseconds)."""

    name: str  # the "Kernel Name" column as exported
    base: str  # the bare function name (``saxpy``) or OpenMP/OpenACC enclosing function
    id: str
    row: int  # 1-based line in the CSV file
    block: str
    grid: str
    ops: dict[str, float | None]  # per precision of verdict.PRECISIONS
    dram_bytes: float
    bytes_read: float | None
    bytes_written: float | None
    time_ns: float | None
    device: str = ""
    offload_line: int | None = None  # OpenMP/OpenACC: the source line in the kernel symbol

    def ai(self) -> dict[str, float | None]:
        denom = max(self.dram_bytes, 1.0)
        return {p: (None if v is None else v / denom) for p, v in self.ops.items()}


@dataclass(frozen=True)
class MeasuredProfile:
    path: str
    launches: tuple[Launch, ...]
    by_base: Mapping[str, tuple[Launch, ...]] = field(default_factory=dict, repr=False)

    def launches_for(self, kernel: Kernel) -> tuple[Launch, ...]:
        """The launches of ``kernel``: CUDA/HIP by function name (template arguments and
        parameter lists ignored); OpenMP/OpenACC by enclosing function and pragma line."""
        name = _short(kernel.name)
        candidates = self.by_base.get(name, ())
        if kernel.is_offload:
            return tuple(
                c
                for c in candidates
                if c.offload_line is not None and c.offload_line in (kernel.line, kernel.line + 1)
            )
        return tuple(c for c in candidates if c.offload_line is None)

    def verdict_for(self, kernel: Kernel, gpu: GpuProfile) -> Verdict | None:
        """The measured verdict (source ``"profile"``) from the fastest launch of ``kernel``,
        or None when the profile does not cover it."""
        launches = self.launches_for(kernel)
        if not launches:
            return None
        timed = [x for x in launches if x.time_ns is not None]
        launch = min(timed, key=lambda x: x.time_ns or 0.0) if timed else launches[0]
        ridge = gpu.ridges()
        ai = launch.ai()
        bound, deciding = classify_bound(ai, ridge)
        return Verdict(
            kernel=kernel.name,
            gpu=gpu.name,
            bound=bound,
            source="profile",
            confidence=1.0,
            ai={p: ai.get(p) for p in ridge},
            ridge=ridge,
            deciding=deciding,
            rationale=_explain(launch, len(launches), ai, ridge, deciding),
            extra={
                "measured": {
                    "launch_id": launch.id,
                    "launches": len(launches),
                    "block": launch.block,
                    "grid": launch.grid,
                    "time_ns": launch.time_ns,
                    "dram_bytes": launch.dram_bytes,
                    **{f"{p}_ops": v for p, v in launch.ops.items() if v is not None},
                    **({"device": launch.device} if launch.device else {}),
                },
                "profile": os.path.basename(self.path),
            },
        )


def _explain(
    launch: Launch,
    n: int,
    ai: Mapping[str, float | None],
    ridge: Mapping[str, float],
    deciding: str | None,
) -> str:
    where = f"launch {launch.id}" if launch.id else "a launch"
    if n > 1:
        where = f"fastest of {n} launches ({where})"
    if launch.device:
        where += f" on {launch.device}"
    dims = f"grid {launch.grid}, block {launch.block}" if launch.grid or launch.block else ""
    time = fmt_duration(launch.time_ns) if launch.time_ns is not None else ""
    head = "Measured by Nsight Compute, " + ", ".join(x for x in (where, dims, time) if x)
    parts = []
    for p in PRECISIONS:
        a = ai.get(p)
        if a is None or (a == 0 and p != deciding):
            continue
        unit = "ops/B" if p == "int" else "FLOP/B"
        parts.append(f"{p} AI {fmt_sig(a)} {unit} (ridge {fmt_sig(ridge.get(p))})")
    body = "; ".join(parts) if parts else "no arithmetic counted"
    return f"{head}: {body}; DRAM {launch.dram_bytes / 1e6:.3g} MB."


# --------------------------------------------------------------------------------------------
# Kernel names
# --------------------------------------------------------------------------------------------

_OMP = re.compile(r"^__omp_offloading_[0-9a-fA-F]+_[0-9a-fA-F]+_(.+?)_l(\d+)(?:_\d+)?$")
_NVC_ACC = re.compile(r"^(.+?)_(\d+)_gpu(?:__red)?$")
_NVC_OMP = re.compile(r"^nvkernel_(.+?)_F\d+L(\d+)_\d+$")


_OPERATORS = {"cl": "operator()", "ix": "operator[]"}


def _short(name: str) -> str:
    return name.rsplit("::", 1)[-1].strip()


def _skip_template_args(s: str, i: int) -> int:
    """The index after the template argument list ``I ... E`` starting at ``s[i]``."""
    depth = 0
    while i < len(s):
        c = s[i]
        if c in "IN":
            depth += 1
            i += 1
        elif c == "E":
            depth -= 1
            i += 1
            if depth <= 0:
                return i
        elif c == "L":  # a literal: L <type> <value> E
            j = s.find("E", i)
            i = len(s) if j < 0 else j + 1
        elif c.isdigit():
            m = re.match(r"\d+", s[i:])
            assert m is not None
            i += len(m.group(0)) + int(m.group(0))
        elif c == "S" and i + 1 < len(s) and s[i + 1] in "tabsoid":
            i += 2
        elif c in "ST":  # substitution S_, S0_ / template parameter T_, T0_
            j = s.find("_", i)
            i = len(s) if j < 0 else j + 1
        else:
            i += 1
    return i


def ncu_base_name(mangled: str) -> str | None:
    """The unqualified function name of an Itanium-mangled symbol (``_Z5saxpyifPfS_`` ->
    ``saxpy``, ``_ZN2ns4kernIfEEvPT_`` -> ``kern``); None if it is not one."""
    if not mangled.startswith("_Z"):
        return None
    s, i = mangled, 2
    nested = i < len(s) and s[i] == "N"
    if nested:
        i += 1
        while i < len(s) and s[i] in "rVKRO":
            i += 1
    last = None
    while i < len(s):
        if s[i] == "L":  # internal linkage marker
            i += 1
            continue
        m = re.match(r"\d+", s[i:])
        if m:
            n = int(m.group(0))
            i += len(m.group(0))
            last = s[i : i + n]
            i += n
            if not nested:
                break
            continue
        if nested and s[i : i + 2] in _OPERATORS:
            last = _OPERATORS[s[i : i + 2]]
            i += 2
            continue
        if nested and s[i] == "I":  # template args of a nested component
            i = _skip_template_args(s, i)
            continue
        break
    if last is None or last.startswith("_GLOBAL__N"):
        return None
    return last


def base_name(name: str) -> tuple[str, int | None]:
    """``(function name, offload line)`` of an exported kernel name: demangled
    (``void ns::saxpy<float>(int, float*)``), bare (``saxpy``), mangled (``_Z5saxpy...``),
    OpenMP (``__omp_offloading_<dev>_<file>_<function>_l<line>``) or nvc OpenACC/OpenMP."""
    name = name.strip()
    for pattern in (_OMP, _NVC_OMP, _NVC_ACC):
        m = pattern.match(name)
        if m:
            func = m.group(1)
            func = ncu_base_name(func) or func
            return _short(func), int(m.group(2))
    mangled = ncu_base_name(name)
    if mangled:
        return mangled, None
    text = name.replace("(anonymous namespace)", "anonymous_namespace")
    depth = 0
    cut = len(text)
    for i, c in enumerate(text):
        if c == "<":
            depth += 1
        elif c == ">":
            depth = max(0, depth - 1)
        elif c == "(" and depth == 0:
            cut = i
            break
    head = text[:cut].rstrip()
    while head.endswith(">"):  # trailing template arguments
        depth, j = 0, len(head) - 1
        while j >= 0:
            if head[j] == ">":
                depth += 1
            elif head[j] == "<":
                depth -= 1
                if depth == 0:
                    break
            j -= 1
        head = head[:j].rstrip() if j > 0 else head.strip("<>")
    head = head.split()[-1] if head.split() else head
    return _short(head.lstrip("*&")), None


# --------------------------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------------------------


def _number(text: str) -> float | None:
    """A CSV cell as a number: thousands separators allowed; empty / n/a -> None."""
    t = text.strip().replace(",", "")
    if not t or t.lower() in ("n/a", "na", "nan", "-", "null"):
        return None
    return float(t)


def _prefixed(word: str) -> float | None:
    """The factor of an SI/binary-prefixed count unit: ``Mbyte`` -> 1e6, ``KiB`` -> 1024."""
    low = word.strip().lower()
    for base in ("byte", "inst", "cycle", "hz", "b"):
        if low.endswith(base):
            prefix = low[: -len(base)]
            if prefix in _BIN_PREFIX:
                return _BIN_PREFIX[prefix]
            return _BYTE_PREFIX.get(prefix)
    return None


def _scale(unit: str, column: str) -> float:
    """The factor to base units (bytes, nanoseconds, operations, per second) for a units-row
    cell."""
    u = unit.strip()
    if not u:
        return 1.0
    if column == _TIME or column.endswith("duration.sum"):
        factor = _TIME_UNITS.get(u.lower())
        return factor / 1e-9 if factor is not None else 1.0
    num, _, den = u.partition("/")
    factor = _prefixed(num) or 1.0
    if den:
        per = _TIME_UNITS.get(den.strip().lower())
        if per is not None:
            factor /= per
    return factor


def load_profile(path: str) -> MeasuredProfile:
    """Parse an ``ncu --csv --page raw`` export. Raises :class:`ProfileError` with a one-line
    message for anything unusable."""
    try:
        size = os.path.getsize(path)
        if size > MAX_PROFILE_BYTES:
            raise ProfileError(f"{path}: {size / 1e6:.0f} MB is too large for a profile CSV")
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ProfileError(f"{path}: cannot read ({e.strerror or e})") from None
    text = data.decode("utf-8-sig", "replace")
    return parse_profile(text, path)


def parse_profile(text: str, path: str = "<profile>") -> MeasuredProfile:
    lines = text.splitlines()
    start = next(
        (
            i
            for i, line in enumerate(lines)
            if '"Kernel Name"' in line or line.startswith("Kernel Name,") or ",Kernel Name," in line
        ),
        None,
    )
    if start is None:
        raise ProfileError(
            f'{path}: not an Nsight Compute CSV (no "Kernel Name" column; '
            "export with `ncu --csv --page raw`)"
        )
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    except csv.Error as e:
        raise ProfileError(f"{path}: malformed CSV ({e})") from None
    header = [h.strip() for h in rows[0]]
    col = {h: i for i, h in enumerate(header)}
    if "Metric Name" in col and "Metric Value" in col:
        raise ProfileError(
            f"{path}: this is the 'details' page; export with `ncu --csv --page raw`"
        )
    body = rows[1:]
    units: list[str] = [""] * len(header)
    first_data = start + 2
    if body and _is_units_row(body[0], col):
        units = [u.strip() for u in body[0]] + [""] * max(0, len(header) - len(body[0]))
        body = body[1:]
        first_data += 1
    traffic = _traffic_columns(col)
    if traffic is None:
        raise ProfileError(
            f"{path}: no DRAM traffic column (need dram__bytes_read.sum and "
            "dram__bytes_write.sum, or dram__bytes.sum)"
        )
    if not any(
        _INST.format(op) + suffix in col
        for ops in _OPS.values()
        for op in ops
        for suffix in (".sum", ".sum.per_cycle_elapsed")
    ) and not any(c in col for c in (_INT + ".sum", _INT + ".sum.per_cycle_elapsed")):
        raise ProfileError(
            f"{path}: no instruction counts (need smsp__sass_thread_inst_executed_op_*"
            "_pred_on.sum columns, e.g. from `--set roofline --metrics "
            "smsp__sass_thread_inst_executed_op_integer_pred_on`)"
        )
    launches: list[Launch] = []
    for offset, row in enumerate(body):
        lineno = first_data + offset
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) < len(header):
            raise ProfileError(
                f"{path}:{lineno}: {len(row)} columns where the header has {len(header)}"
            )
        launches.append(_launch(row, col, units, traffic, path, lineno))
    if not launches:
        raise ProfileError(f"{path}: no kernel launches in the file")
    by_base: dict[str, list[Launch]] = {}
    for x in launches:
        by_base.setdefault(x.base, []).append(x)
    return MeasuredProfile(path, tuple(launches), {k: tuple(v) for k, v in by_base.items()})


def _is_units_row(row: list[str], col: Mapping[str, int]) -> bool:
    i = col.get("Kernel Name")
    if i is not None and i < len(row) and row[i].strip():
        return False
    for cell in row:
        c = cell.strip()
        if not c:
            continue
        try:
            _number(c)
        except ValueError:
            return True
        return False
    return True


def _traffic_columns(col: Mapping[str, int]) -> tuple[str, ...] | None:
    if "dram__bytes_read.sum" in col and "dram__bytes_write.sum" in col:
        return ("dram__bytes_read.sum", "dram__bytes_write.sum")
    if "dram__bytes.sum" in col:
        return ("dram__bytes.sum",)
    if "dram__bytes.sum.per_second" in col and _TIME in col:
        return ("dram__bytes.sum.per_second",)
    return None


def _launch(
    row: list[str],
    col: Mapping[str, int],
    units: list[str],
    traffic: tuple[str, ...],
    path: str,
    lineno: int,
) -> Launch:
    def raw(name: str) -> str:
        i = col.get(name)
        return row[i].strip() if i is not None and i < len(row) else ""

    def value(name: str) -> float | None:
        i = col.get(name)
        if i is None or i >= len(row):
            return None
        try:
            v = _number(row[i])
        except ValueError:
            shown = row[i].strip()[:40]
            raise ProfileError(f"{path}:{lineno}: {name}: not a number ({shown!r})") from None
        if v is None:
            return None
        return v * _scale(units[i] if i < len(units) else "", name)

    name = raw("Kernel Name")
    if not name:
        raise ProfileError(f"{path}:{lineno}: empty Kernel Name")
    time_ns = value(_TIME)
    seconds = time_ns * 1e-9 if time_ns is not None else None
    cycles_per_s = value(_CYCLES_PER_S)

    def count(metric: str, fma: bool = False) -> float | None:
        total = value(metric + ".sum")
        if total is not None:
            return 2.0 * total if fma else total
        if fma:
            x2 = value("derived__" + metric + "_x2")
            if x2 is not None and cycles_per_s is not None and seconds is not None:
                return x2 * cycles_per_s * seconds
        rate = value(metric + ".sum.per_cycle_elapsed")
        if rate is not None and cycles_per_s is not None and seconds is not None:
            return rate * cycles_per_s * seconds * (2.0 if fma else 1.0)
        return None

    ops: dict[str, float | None] = {}
    for prec, (add, mul, fma) in _OPS.items():
        parts = [
            count(_INST.format(add)),
            count(_INST.format(mul)),
            count(_INST.format(fma), fma=True),
        ]
        known = [p for p in parts if p is not None]
        ops[prec] = sum(known) if known else None
    ops["int"] = count(_INT)
    read = written = None
    if traffic == ("dram__bytes.sum.per_second",):
        rate = value(traffic[0])
        if rate is None or seconds is None:
            raise ProfileError(f"{path}:{lineno}: no DRAM traffic value")
        dram = rate * seconds
    else:
        vals = [value(c) for c in traffic]
        if any(v is None for v in vals):
            raise ProfileError(f"{path}:{lineno}: no DRAM traffic value ({', '.join(traffic)})")
        dram = sum(v for v in vals if v is not None)
        if len(vals) == 2:
            read, written = vals
    base, offload_line = base_name(name)
    return Launch(
        name=name,
        base=base,
        id=raw("ID"),
        row=lineno,
        block=raw("Block Size"),
        grid=raw("Grid Size"),
        ops={p: ops.get(p) for p in PRECISIONS},
        dram_bytes=dram,
        bytes_read=read,
        bytes_written=written,
        time_ns=time_ns,
        device=raw("device__attribute_display_name") or raw("Device Name"),
        offload_line=offload_line,
    )
