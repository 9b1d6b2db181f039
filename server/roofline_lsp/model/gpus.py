"""GPU profiles: peak rates, DRAM bandwidth and cache size of each target GPU, as data.

The bundled profiles live in ``data/gpus.toml`` (read through :mod:`importlib.resources`, so
they work from an installed wheel); a user TOML file of the same shape can add GPUs or override
fields of bundled ones. Every bundled number names its source in the ``sources`` sub-table:
a vendor datasheet or whitepaper, or ``derived: <formula>``.

Conventions, chosen so that ridge points compare like with like across GPUs:

- A fused multiply-add counts as 2 operations. Peaks are dense (no 2:4 sparsity).
- ``fp16`` (and ``bf16``) peaks are the vector (non-tensor) rates, with packed ``half2`` where
  the hardware gets its rate that way; tensor/matrix-core peaks are kept separately
  (``*_tensor_flops``, FP32 accumulate) and are not used for ridge points.
- INT32 ops/s = units (SMs/CUs/Xe-cores) x INT32 lanes per clock x 2 x clock. The x2 follows
  the rule of the eval set's RTX 3080 roofline (gpuFLOPBench), which counts integer
  instructions against a peak of 68 SMs x 64 INT32/clk x 2 x 1.44 GHz = 12.534 TINTOP/s.
- AMD FP32 peaks are the scalar-FMA rate; AMD's datasheets count packed FP32 for CDNA 3.
- Vector peaks are at ``clock_ghz``: the vendor's boost clock, except the RTX 3080 whose
  profile reproduces the eval labels exactly (base clock 1.44 GHz: FP32 25.068 TFLOP/s,
  FP64 391.68 GFLOP/s, INT 12.534 TOP/s, 760.3 GB/s; ridges 32.971 / 0.5152 / 16.485).
- ``l2_bytes`` is the last cache level in front of DRAM (``cache_kind`` says which: the L2 on
  NVIDIA, Intel and CDNA 1-2, the 256 MB Infinity Cache on the MI300X).
- Multi-die packages (MI250X, Max 1550, B200) are described as the whole package.

The bare alias ``a100`` means the A100-SXM4-80GB (the current A100 SKU); ``h100`` the SXM5
part; ``ga102`` the RTX 3080 (the eval GPU) and ``ad102`` the RTX 4090.

User TOML (``roofline.gpuProfiles`` / ``--gpu-profiles``)::

    [h100]                 # an existing name or alias: override only these fields
    dram_gbs = 3000

    [My-GPU]               # a new GPU: all required fields, or based_on = "<existing GPU>"
    based_on = "a100"
    aliases = ["mine"]
    clock_ghz = 1.2
"""

from __future__ import annotations

import difflib
import functools
import math
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType
from typing import Any

from roofline_lsp.model.numbers import fmt_fixed
from roofline_lsp.model.verdict import PRECISIONS

__all__ = [
    "GpuProfile",
    "GpuProfileError",
    "GpuRegistry",
    "UnknownGpuError",
    "gpu_json",
    "load_registry",
    "normalize_name",
]

MIB = 1 << 20

# TOML field -> (kind, scale to SI). Kinds: "int", "num" (positive finite), "str", "strs".
_NUMBER_FIELDS: dict[str, float] = {
    "sm_count": 1.0,
    "clock_ghz": 1.0,
    "boost_clock_ghz": 1.0,
    "fp64_tflops": 1e12,
    "fp64_tensor_tflops": 1e12,
    "fp32_tflops": 1e12,
    "fp16_tflops": 1e12,
    "bf16_tflops": 1e12,
    "fp16_tensor_tflops": 1e12,
    "bf16_tensor_tflops": 1e12,
    "int32_tops": 1e12,
    "dram_gbs": 1e9,
    "l2_mib": float(MIB),
    "display_frame_mb": 1e6,
    "display_hz": 1.0,
    "max_threads_per_sm": 1.0,
    "max_blocks_per_sm": 1.0,
    "compute_capability": 1.0,
}
_WHOLE_FIELDS = frozenset({"sm_count", "max_threads_per_sm", "max_blocks_per_sm"})
_STRING_FIELDS = ("vendor", "full_name", "unit_name", "cache_kind", "based_on")
_KNOWN_FIELDS = (*_NUMBER_FIELDS, *_STRING_FIELDS, "aliases", "sources")
#: Fields a new GPU must give (unless it is ``based_on`` another).
REQUIRED_FIELDS: tuple[str, ...] = (
    "vendor",
    "sm_count",
    "clock_ghz",
    "fp64_tflops",
    "fp32_tflops",
    "fp16_tflops",
    "int32_tops",
    "dram_gbs",
    "l2_mib",
)
#: Every numeric field; a bundled profile names a source for each (absent ones say why).
NUMBER_FIELDS: tuple[str, ...] = tuple(_NUMBER_FIELDS)

_PEAK_ATTR = {"fp64": "fp64_flops", "fp32": "fp32_flops", "fp16": "fp16_flops", "int": "int32_ops"}
_EXTRA_PEAKS = {
    "bf16": "bf16_flops",
    "fp64_tensor": "fp64_tensor_flops",
    "fp16_tensor": "fp16_tensor_flops",
    "bf16_tensor": "bf16_tensor_flops",
}


class GpuProfileError(ValueError):
    """A GPU profile file is unreadable or invalid (one-line message naming file and key)."""


class UnknownGpuError(ValueError):
    """No GPU profile has this name or alias; the message lists the closest ones."""

    def __init__(self, name: str, closest: tuple[str, ...] = ()) -> None:
        self.name = name
        self.closest = closest
        hint = f": closest: {', '.join(closest)}" if closest else ""
        shown = " ".join(name.split())  # keep the message on one line
        super().__init__(f"unknown GPU '{shown}'{hint} (roofline-lsp gpus lists all)")


def normalize_name(name: str) -> str:
    """The lookup key of a GPU name or alias: lower case, without '-', '_' and spaces."""
    return re.sub(r"[-_\s]+", "", name).lower()


# operand types of 8 bits or fewer a tensor core multiplies (PTX spelling)
NARROW_TENSOR_KINDS = frozenset({"s8", "u8", "s4", "u4", "b1", "e4m3", "e5m2"})

# per-vendor limits of ``cudaDeviceProp``/``hipDeviceProp_t`` every GPU of the vendor shares
_VENDOR_LIMITS: dict[str, dict[str, float]] = {
    "NVIDIA": {"warpSize": 32.0, "maxThreadsPerBlock": 1024.0, "sharedMemPerBlock": 49152.0},
    "AMD": {"warpSize": 64.0, "maxThreadsPerBlock": 1024.0, "sharedMemPerBlock": 65536.0},
}


@dataclass(frozen=True, kw_only=True)
class GpuProfile:
    """One GPU, in SI units: ops/s, bytes/s, bytes."""

    name: str  # canonical, e.g. "H100-SXM5-80GB"
    vendor: str
    fp64_flops: float  # vector FP64
    fp32_flops: float
    fp16_flops: float  # vector (non-tensor) FP16
    int32_ops: float  # INT32 lanes x 2 x clock
    dram_bandwidth: float  # bytes/s
    l2_bytes: int  # last cache level before DRAM, see cache_kind
    sm_count: int  # SMs / CUs / Xe-cores
    clock_ghz: float  # clock of the vector peaks
    aliases: tuple[str, ...] = ()
    full_name: str = ""
    unit_name: str = "SM"
    cache_kind: str = "L2"
    boost_clock_ghz: float | None = None
    bf16_flops: float | None = None  # vector BF16; None: not supported / not documented
    fp64_tensor_flops: float | None = None
    fp16_tensor_flops: float | None = None  # dense, FP32 accumulate
    bf16_tensor_flops: float | None = None
    # DRAM bytes a display engine reads per refresh, and the refresh rate: ncu counts them in
    # a kernel's DRAM traffic on a card that drives a display (None: no display)
    display_frame_bytes: float | None = None
    display_hz: float | None = None
    # resident threads and blocks an SM holds at most (None: not modelled for the vendor)
    max_threads_per_sm: int | None = None
    max_blocks_per_sm: int | None = None
    # the CUDA compute capability, (major, minor) (None: not an NVIDIA GPU, or not given)
    compute_capability: tuple[int, int] | None = None
    sources: dict[str, str] = field(default_factory=dict, hash=False, compare=False)

    @property
    def device_properties(self) -> dict[str, float]:
        """What host code querying this GPU reads (``cudaDeviceProp`` field names, with its
        units: ``clockRate`` in kHz, the maximum boost clock the driver reports; ``major``
        and ``minor``, the compute capability of an NVIDIA GPU). Warp size and
        per-block limits are the vendor's: 32 threads and 48 KiB of static shared memory on
        NVIDIA, 64 and 64 KiB on AMD Instinct (CDNA); Intel's sub-groups vary per kernel, so
        only what the profile itself gives is known there."""
        props = {
            "multiProcessorCount": float(self.sm_count),
            "clockRate": float(round((self.boost_clock_ghz or self.clock_ghz) * 1e6)),
            "l2CacheSize": float(self.l2_bytes),
        }
        limits = _VENDOR_LIMITS.get(self.vendor)
        if limits is not None:
            props.update(limits)
        if self.max_threads_per_sm is not None:
            props["maxThreadsPerMultiProcessor"] = float(self.max_threads_per_sm)
        if self.max_blocks_per_sm is not None:
            props["maxBlocksPerMultiProcessor"] = float(self.max_blocks_per_sm)
        if self.compute_capability is not None:
            props["major"], props["minor"] = map(float, self.compute_capability)
        return props

    def __post_init__(self) -> None:
        for attr in (*_PEAK_ATTR.values(), "dram_bandwidth", "l2_bytes", "sm_count", "clock_ghz"):
            value = getattr(self, attr)
            if not _positive(value):
                raise ValueError(f"GPU {self.name}: {attr} must be a positive number, got {value}")

    def peak(self, precision: str) -> float:
        """Peak rate in ops/s for a precision of ``verdict.PRECISIONS`` (or bf16/…_tensor)."""
        attr = _PEAK_ATTR.get(precision) or _EXTRA_PEAKS.get(precision)
        if attr is None:
            known = ", ".join((*PRECISIONS, *_EXTRA_PEAKS))
            raise ValueError(f"unknown precision '{precision}' (expected one of {known})")
        value = getattr(self, attr)
        if value is None:
            raise ValueError(f"{self.name} has no {precision} peak")
        return float(value)

    def tensor_peak(self, kind: str) -> float | None:
        """Peak dense tensor-core (matrix-unit) rate in FLOP/s for multiply-adds on operands of
        ``kind`` (a PTX type: ``f16``, ``bf16``, ``tf32``, ``f64``, ``s8``, ...), with FP32
        accumulation; None where the GPU has no such unit. TF32 runs at half the FP16 rate,
        8-bit (and narrower) operands at twice it: NVIDIA Ampere, Ada and Hopper; a lower
        bound for 8-bit operands where FP32 accumulation runs at half rate (GeForce)."""
        if kind == "f64":
            return self.fp64_tensor_flops
        base = (self.bf16_tensor_flops if kind == "bf16" else None) or self.fp16_tensor_flops
        if base is None:
            return None
        if kind == "tf32":
            return base / 2
        if kind in NARROW_TENSOR_KINDS:
            return base * 2
        return base

    def ridge(self, precision: str) -> float:
        """Ridge point: the arithmetic intensity (ops per DRAM byte) where compute = bandwidth."""
        return self.peak(precision) / self.dram_bandwidth

    def ridges(self) -> dict[str, float]:
        return {p: self.ridge(p) for p in PRECISIONS}

    def peaks(self) -> dict[str, float | None]:
        """Every peak in ops/s, None where the GPU has no such unit."""
        out: dict[str, float | None] = {p: self.peak(p) for p in PRECISIONS}
        for key, attr in _EXTRA_PEAKS.items():
            out[key] = getattr(self, attr)
        return out

    def describe(self) -> str:
        units = f"{self.sm_count} {self.unit_name}s @ {fmt_fixed(self.clock_ghz)} GHz"
        return (
            f"{self.name} ({self.vendor}, {units}): "
            f"FP64 {fmt_fixed(self.fp64_flops / 1e12)} / "
            f"FP32 {fmt_fixed(self.fp32_flops / 1e12)} / "
            f"FP16 {fmt_fixed(self.fp16_flops / 1e12)} TFLOP/s, "
            f"INT32 {fmt_fixed(self.int32_ops / 1e12)} "
            f"TOP/s, DRAM {fmt_fixed(self.dram_bandwidth / 1e9)} GB/s, "
            f"{_cache_label(self)} {fmt_fixed(self.l2_bytes / MIB)} MiB"
        )


class GpuRegistry:
    """The known GPUs, in a stable order, looked up by name or alias."""

    def __init__(self, profiles: tuple[GpuProfile, ...]) -> None:
        index: dict[str, GpuProfile] = {}
        for p in profiles:
            for key in (p.name, *p.aliases):
                norm = normalize_name(key)
                other = index.get(norm)
                if other is not None and other.name != p.name:
                    raise ValueError(f"'{key}' names both {other.name} and {p.name}")
                index[norm] = p
        self._profiles = profiles
        self._index: Mapping[str, GpuProfile] = MappingProxyType(index)

    def get(self, name: str) -> GpuProfile:
        """The profile named ``name`` (case, '-', '_' and spaces ignored)."""
        found = self._index.get(normalize_name(name))
        if found is None:
            raise UnknownGpuError(name, self.closest(name))
        return found

    def closest(self, name: str, n: int = 3) -> tuple[str, ...]:
        """Up to ``n`` canonical names closest to ``name`` (difflib over names and aliases)."""
        query = normalize_name(name)
        if not query:
            return ()
        scored: list[tuple[int, float, int, str]] = []
        for order, p in enumerate(self._profiles):
            best: tuple[int, float] = (0, 0.0)
            for key in (p.name, *p.aliases):
                norm = normalize_name(key)
                prefix = len(os.path.commonprefix([query, norm]))
                ratio = difflib.SequenceMatcher(None, query, norm).ratio()
                best = max(best, (prefix, ratio))
            prefix, ratio = best
            if ratio >= 0.5 or prefix >= min(3, len(query)):
                scored.append((-prefix, -ratio, order, p.name))
        scored.sort()
        return tuple(s[3] for s in scored[:n])

    def all(self) -> tuple[GpuProfile, ...]:
        return self._profiles

    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self._profiles)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and normalize_name(name) in self._index

    def __iter__(self) -> Iterator[GpuProfile]:
        return iter(self._profiles)

    def __len__(self) -> int:
        return len(self._profiles)


# --------------------------------------------------------------------------------------------
# Loading


def load_registry(user_toml: str | None = None) -> GpuRegistry:
    """The bundled profiles, plus those of ``user_toml`` (added, or overriding fields).

    Raises :class:`GpuProfileError` with a one-line message for a missing or broken file.
    Results are cached (the user file by path, size and modification time).
    """
    if not user_toml:
        return _bundled_registry()
    path = os.path.abspath(os.path.expanduser(user_toml))
    try:
        st = os.stat(path)
    except OSError as e:
        raise GpuProfileError(f"{path}: cannot read GPU profiles: {e.strerror}") from None
    return _user_registry(path, st.st_mtime_ns, st.st_size)


_BUNDLED = "gpus.toml (bundled)"


@functools.lru_cache(maxsize=1)
def _bundled_fields() -> dict[str, dict[str, Any]]:
    text = resources.files("roofline_lsp.model").joinpath("data", "gpus.toml").read_text("utf-8")
    return _merge({}, _parse(text, _BUNDLED), text, _BUNDLED, fill_sources=False)


@functools.lru_cache(maxsize=1)
def _bundled_registry() -> GpuRegistry:
    return _registry(_bundled_fields(), _BUNDLED)


@functools.lru_cache(maxsize=8)
def _user_registry(path: str, mtime_ns: int, size: int) -> GpuRegistry:
    try:
        with open(path, "rb") as f:
            raw = f.read()
        text = raw.decode("utf-8")
    except OSError as e:
        raise GpuProfileError(f"{path}: cannot read GPU profiles: {e.strerror}") from None
    except UnicodeDecodeError:
        raise GpuProfileError(f"{path}: not UTF-8 text") from None
    return _registry(_merge(_bundled_fields(), _parse(text, path), text, path), path)


def _parse(text: str, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+)", str(e))
        loc = f"{where}:{m[1]}" if m else where
        raise GpuProfileError(f"{loc}: TOML syntax error: {_one_line(str(e))}") from None


def _merge(
    base: dict[str, dict[str, Any]],
    entries: dict[str, Any],
    text: str,
    where: str,
    *,
    fill_sources: bool = True,
) -> dict[str, dict[str, Any]]:
    """Merge ``entries`` (one TOML file) into ``base`` (canonical name -> TOML-unit fields).

    A table naming an existing GPU (by name or alias) overrides the fields it gives; any other
    table adds a GPU. With ``fill_sources``, numbers without a source get "user profile/override
    (<file>)" so that every number of every profile says where it comes from.
    """
    merged = {name: dict(fields) for name, fields in base.items()}
    lookup = {normalize_name(k): name for name, f in base.items() for k in (name, *f["aliases"])}
    table_of: dict[str, str] = {}  # canonical name -> the table of this file that touched it
    for table, entry in entries.items():
        err = _Err(where, text, table)
        if not isinstance(entry, dict):
            m = re.search(rf"^\s*\"?{re.escape(table)}\"?\s*=", text, re.M)
            loc = f"{where}:{text.count(chr(10), 0, m.start()) + 1}" if m else where
            raise GpuProfileError(
                f"{loc}: {table}: expected a table per GPU, e.g. [My-GPU] with dram_gbs = 900"
            )
        if not normalize_name(table):
            raise err("", "empty GPU name")
        values = _check_entry(entry, err)
        given: dict[str, str] = values.pop("sources", {})
        based_on = values.pop("based_on", None)
        target = lookup.get(normalize_name(table))
        if target is not None:
            if based_on is not None:
                raise err("based_on", f"'{table}' already names {target}: override its fields")
            fields = merged[target]
            fields["sources"] = dict(fields["sources"])
            default = f"user override ({where})"
        else:
            target = table
            if based_on is not None:
                parent = lookup.get(normalize_name(based_on))
                if parent is None:
                    raise err("based_on", f"unknown GPU '{based_on}'")
                fields = {k: v for k, v in merged[parent].items() if k != "aliases"}
                fields["full_name"] = ""
                fields["sources"] = {
                    k: f"{s} (from {parent}, based_on in {where})"
                    for k, s in merged[parent]["sources"].items()
                }
            else:
                missing = [k for k in REQUIRED_FIELDS if k not in values]
                if missing:
                    raise err(
                        "",
                        f"new GPU lacks required fields: {', '.join(missing)} "
                        '(or set based_on = "<existing GPU>")',
                    )
                fields = {"sources": {}}
            fields["aliases"] = ()
            default = f"user profile ({where})"
            merged[target] = fields
        fields.update(values)
        if fill_sources:
            for key in values:
                if key in _NUMBER_FIELDS:
                    fields["sources"][key] = given.get(key, default)
        fields["sources"].update(given)
        table_of[target] = table
        for key in (target, *fields["aliases"]):
            lookup.setdefault(normalize_name(key), target)
    # Every name and alias must name one GPU.
    owners: dict[str, str] = {}
    for name, fields in merged.items():
        for key in (name, *fields["aliases"]):
            owner = owners.setdefault(normalize_name(key), name)
            if owner != name:
                culprit = name if name in table_of else owner
                other = owner if culprit == name else name
                field_name = "aliases" if normalize_name(key) != normalize_name(culprit) else ""
                raise _Err(where, text, table_of.get(culprit, culprit))(
                    field_name, f"'{key}' already names {other}"
                )
    return merged


def _registry(merged: dict[str, dict[str, Any]], where: str) -> GpuRegistry:
    profiles = []
    for name, fields in merged.items():
        try:
            profiles.append(_profile(name, fields))
        except ValueError as e:  # e.g. an L2 size that rounds to 0 bytes
            raise GpuProfileError(f"{where}: [{name}] {_one_line(str(e))}") from None
    return GpuRegistry(tuple(profiles))


def _check_entry(entry: dict[str, Any], err: _Err) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in entry.items():
        if key in _NUMBER_FIELDS:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise err(key, f"expected a number, got {_show(value)}")
            if not _positive(value):
                raise err(key, f"must be a positive number, got {_show(value)}")
            whole = key in _WHOLE_FIELDS
            if whole and value != int(value):
                raise err(key, f"expected a whole number, got {_show(value)}")
            if key == "compute_capability" and abs(value * 10 - round(value * 10)) > 1e-6:
                raise err(key, f"expected major.minor, e.g. 8.6, got {_show(value)}")
            out[key] = int(value) if whole else float(value)
        elif key in _STRING_FIELDS:
            if not isinstance(value, str) or not value.strip():
                raise err(key, f"expected a non-empty string, got {_show(value)}")
            out[key] = value.strip()
        elif key == "aliases":
            if not isinstance(value, list) or not all(
                isinstance(a, str) and normalize_name(a) for a in value
            ):
                raise err(key, f'expected a list of names, e.g. ["mygpu"], got {_show(value)}')
            out[key] = tuple(a.strip() for a in value)
        elif key == "sources":
            if not isinstance(value, dict):
                raise err(key, 'expected a table of field = "where the number comes from"')
            for k, v in value.items():
                if k not in _NUMBER_FIELDS:
                    raise err(f"sources.{k}", f"not a numeric field{_did_you_mean(k)}")
                if not isinstance(v, str) or not v.strip():
                    raise err(f"sources.{k}", f"expected a non-empty string, got {_show(v)}")
            out[key] = {k: v.strip() for k, v in value.items()}
        else:
            raise err(key, f"unknown field{_did_you_mean(key)}")
    return out


def _profile(name: str, f: dict[str, Any]) -> GpuProfile:
    def opt(key: str) -> float | None:
        v = f.get(key)
        return None if v is None else float(v) * _NUMBER_FIELDS[key]

    return GpuProfile(
        name=name,
        vendor=f["vendor"],
        aliases=tuple(f.get("aliases", ())),
        full_name=f.get("full_name", ""),
        unit_name=f.get("unit_name", "SM"),
        cache_kind=f.get("cache_kind", "L2"),
        sm_count=int(f["sm_count"]),
        clock_ghz=float(f["clock_ghz"]),
        boost_clock_ghz=f.get("boost_clock_ghz"),
        fp64_flops=f["fp64_tflops"] * 1e12,
        fp32_flops=f["fp32_tflops"] * 1e12,
        fp16_flops=f["fp16_tflops"] * 1e12,
        int32_ops=f["int32_tops"] * 1e12,
        bf16_flops=opt("bf16_tflops"),
        fp64_tensor_flops=opt("fp64_tensor_tflops"),
        fp16_tensor_flops=opt("fp16_tensor_tflops"),
        bf16_tensor_flops=opt("bf16_tensor_tflops"),
        display_frame_bytes=opt("display_frame_mb"),
        display_hz=opt("display_hz"),
        max_threads_per_sm=_whole(opt("max_threads_per_sm")),
        max_blocks_per_sm=_whole(opt("max_blocks_per_sm")),
        compute_capability=_major_minor(f.get("compute_capability")),
        dram_bandwidth=f["dram_gbs"] * 1e9,
        l2_bytes=round(f["l2_mib"] * MIB),
        sources=dict(f.get("sources", {})),
    )


def _whole(v: float | None) -> int | None:
    return None if v is None else int(v)


def _major_minor(v: float | None) -> tuple[int, int] | None:
    """8.6 -> (8, 6), 10.0 -> (10, 0)."""
    return None if v is None else divmod(round(v * 10), 10)


class _Err:
    """Builds one-line GpuProfileErrors for one table of one file, with the line when found."""

    def __init__(self, where: str, text: str, table: str) -> None:
        self.where, self.text, self.table = where, text, table

    def __call__(self, key: str, message: str) -> GpuProfileError:
        line = _find_line(self.text, self.table, key)
        loc = f"{self.where}:{line}" if line else self.where
        field_part = f" {key}" if key else ""
        return GpuProfileError(f"{loc}: [{self.table}]{field_part}: {_one_line(message)}")


def _find_line(text: str, table: str, key: str) -> int | None:
    """Best effort: the line of ``key`` in ``[table]`` (or of the table header)."""
    lines = text.splitlines()
    header = re.compile(r"^\s*\[\s*(\"?)" + re.escape(table) + r"\1\s*(\.[^\]]*)?\]")
    start = next((i for i, ln in enumerate(lines) if header.match(ln)), None)
    if start is None:
        return None
    if not key:
        return start + 1
    leaf = key.split(".")[-1]
    pat = re.compile(r"^\s*\"?" + re.escape(leaf) + r"\"?\s*=")
    for i in range(start + 1, len(lines)):
        if re.match(r"^\s*\[", lines[i]) and not re.match(
            r"^\s*\[\s*\"?" + re.escape(table) + r"\"?\s*\.", lines[i]
        ):
            break
        if pat.match(lines[i]):
            return i + 1
    return start + 1


def _did_you_mean(key: str) -> str:
    close = difflib.get_close_matches(key, _KNOWN_FIELDS, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _positive(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def _show(value: Any) -> str:
    text = repr(value)
    return _one_line(text if len(text) <= 40 else text[:37] + "...")


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------------------------
# Output


def _cache_label(p: GpuProfile) -> str:
    return "L2" if p.cache_kind.startswith("L2") else "LLC"


def gpu_json(profile: GpuProfile) -> dict[str, Any]:
    """A JSON-ready description (``roofline.listGpus``, ``roofline-lsp gpus --json``)."""
    return {
        "name": profile.name,
        "vendor": profile.vendor,
        "fullName": profile.full_name,
        "aliases": list(profile.aliases),
        "description": profile.describe(),
        "units": profile.sm_count,
        "unitName": profile.unit_name,
        "clockGhz": profile.clock_ghz,
        "peaks": profile.peaks(),  # ops/s
        "bandwidth": profile.dram_bandwidth,  # bytes/s
        "l2": profile.l2_bytes,  # bytes
        "cacheKind": profile.cache_kind,
        # DRAM bytes a display engine reads per refresh, and refreshes a second (None: none)
        "display": None
        if profile.display_frame_bytes is None or profile.display_hz is None
        else {"frameBytes": profile.display_frame_bytes, "hz": profile.display_hz},
        "ridges": profile.ridges(),  # ops per DRAM byte
        # the CUDA compute capability, [major, minor] (None: not an NVIDIA GPU)
        "computeCapability": list(profile.compute_capability)
        if profile.compute_capability is not None
        else None,
        "sources": dict(profile.sources),
    }
