"""GPU profiles: bundled data, lookup, user TOML files and output."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from roofline_lsp.compiler.toolchain import arch_for
from roofline_lsp.model.gpus import (
    MIB,
    NUMBER_FIELDS,
    REQUIRED_FIELDS,
    GpuProfile,
    GpuProfileError,
    UnknownGpuError,
    gpu_json,
    load_registry,
    normalize_name,
)
from roofline_lsp.model.verdict import PRECISIONS

FIXTURES = Path(__file__).parent / "fixtures" / "gpus"

EXPECTED_GPUS = (
    "V100-SXM2-32GB",
    "A100-SXM4-40GB",
    "A100-SXM4-80GB",
    "H100-SXM5-80GB",
    "H100-PCIe-80GB",
    "H200",
    "B200",
    "L4",
    "L40S",
    "RTX-3080",
    "RTX-4090",
    "MI100",
    "MI250X",
    "MI300X",
    "Max-1550",
)


def bundled_toml() -> dict:
    text = resources.files("roofline_lsp.model").joinpath("data", "gpus.toml").read_text("utf-8")
    return tomllib.loads(text)


# --------------------------------------------------------------------------------------------
# The RTX 3080 of the eval set


def test_rtx3080_reproduces_the_eval_readme_roofline() -> None:
    gpu = load_registry().get("rtx3080")
    assert gpu.name == "RTX-3080"
    assert gpu.sm_count == 68 and gpu.clock_ghz == 1.44
    # 68 SMs x 128 FP32/clk x 2 x 1.44e9 = 25.06752e12; x 2 FP64/clk -> 391.68e9;
    # x 64 INT32/clk -> 12.53376e12 (counted x2 like an FMA).
    assert gpu.peak("fp32") == pytest.approx(25.06752e12, rel=1e-9)
    assert gpu.peak("fp64") == pytest.approx(391.68e9, rel=1e-9)
    assert gpu.peak("int") == pytest.approx(12.53376e12, rel=1e-9)
    assert gpu.dram_bandwidth == pytest.approx(760.3e9, rel=1e-12)
    assert gpu.l2_bytes == 5 * MIB
    r = gpu.ridges()
    # README: SP 32.971, DP 0.5152, INT 16.485 FLOP (INTOP) per byte.
    assert round(r["fp32"], 3) == 32.971
    assert round(r["fp64"], 4) == 0.5152
    assert round(r["int"], 3) == 16.485
    # Non-tensor FP16 runs at the FP32 rate on GA102.
    assert r["fp16"] == pytest.approx(r["fp32"])


def test_ridges_are_keyed_by_the_verdict_precisions() -> None:
    for gpu in load_registry().all():
        ridges = gpu.ridges()
        assert tuple(ridges) == PRECISIONS
        for p in PRECISIONS:
            assert ridges[p] == pytest.approx(gpu.peak(p) / gpu.dram_bandwidth)
            assert ridges[p] > 0


def test_ridges_are_sane_across_gpus() -> None:
    reg = load_registry()
    h100, rtx = reg.get("h100"), reg.get("rtx3080")
    # H100 SXM5: 132 SMs x 64 FP64/clk x 2 x 1.98 GHz = 33.454 TFLOP/s over 3.35 TB/s
    # -> 9.986 FLOP/B, about 19x the RTX 3080's 0.5152 (a GeForce has 1/64-rate FP64).
    assert h100.ridge("fp64") == pytest.approx(132 * 64 * 2 * 1.98e9 / 3.35e12, rel=1e-3)
    assert h100.ridge("fp64") == pytest.approx(9.986, rel=1e-3)
    assert h100.ridge("fp64") > 15 * rtx.ridge("fp64")
    # H100 FP32: 132 x 128 x 2 x 1.98 GHz / 3.35 TB/s = 19.97 FLOP/B.
    assert h100.ridge("fp32") == pytest.approx(19.97, rel=1e-3)
    # A100 80GB: 19.5 TFLOP/s / 2.039 TB/s = 9.564; the 40GB part (1.555 TB/s) sits at 12.54.
    assert reg.get("a100").ridge("fp32") == pytest.approx(9.564, rel=1e-3)
    assert reg.get("a100-40gb").ridge("fp32") == pytest.approx(12.54, rel=1e-3)
    # Same H100 chip with 4.8 TB/s of HBM3e: a lower ridge, 66.908 / 4.8 = 13.94.
    assert reg.get("h200").ridge("fp32") == pytest.approx(13.94, rel=1e-3)
    # L4: 30.29 TFLOP/s over only 300 GB/s -> 101 FLOP/B, the highest FP32 ridge here.
    assert reg.get("l4").ridge("fp32") == pytest.approx(100.97, rel=1e-3)
    # MI300X FP64 at full rate: 304 CUs x 64 x 2 x 2.1 GHz / 5.3 TB/s = 15.42 FLOP/B.
    assert reg.get("mi300x").ridge("fp64") == pytest.approx(15.42, rel=1e-3)
    # Data-centre parts have FP64 at half (or full) the FP32 rate, consumer parts at 1/64.
    for g in reg.all():
        ratio = g.peak("fp64") / g.peak("fp32")
        consumer = g.name in ("RTX-3080", "RTX-4090", "L4", "L40S")
        assert (ratio < 0.05) if consumer else (0.45 < ratio <= 1.0), g.name


def test_peak_rejects_unknown_precisions_and_absent_units() -> None:
    reg = load_registry()
    with pytest.raises(ValueError, match="unknown precision 'fp8'"):
        reg.get("h100").peak("fp8")
    with pytest.raises(ValueError, match="V100-SXM2-32GB has no bf16 peak"):
        reg.get("v100").peak("bf16")
    assert reg.get("a100").peak("fp64_tensor") == pytest.approx(19.5e12)


# --------------------------------------------------------------------------------------------
# The bundled data


def test_every_expected_gpu_is_bundled_in_a_stable_order() -> None:
    reg = load_registry()
    assert reg.names() == EXPECTED_GPUS
    assert [p.name for p in reg.all()] == list(EXPECTED_GPUS)
    assert {p.vendor for p in reg.all()} == {"NVIDIA", "AMD", "Intel"}


def test_every_bundled_number_has_a_source() -> None:
    data = bundled_toml()
    assert tuple(data) == EXPECTED_GPUS
    for name, entry in data.items():
        for key in REQUIRED_FIELDS:
            assert key in entry, f"{name}: {key}"
        sources = entry["sources"]
        # Every numeric field, present or not (absent ones say why), names its source.
        assert set(sources) == set(NUMBER_FIELDS), name
        for key, text in sources.items():
            assert isinstance(text, str) and len(text) > 10, f"{name}.{key}"
            if key not in entry:
                # a unit the GPU lacks, a number nobody published, or no display attached
                why = ("not supported", "not documented", "none")
                assert text.startswith(why), f"{name}.{key}"
        for key in NUMBER_FIELDS:
            if key in entry:
                assert entry[key] > 0, f"{name}.{key}"
    # ... and the loaded profiles carry them.
    for gpu in load_registry().all():
        assert set(gpu.sources) == set(NUMBER_FIELDS)
        assert gpu.boost_clock_ghz is not None and gpu.boost_clock_ghz >= gpu.clock_ghz


_DERIVED = re.compile(r"^derived: (?P<lhs>.+?) = (?P<val>[\d.]+) (?P<unit>[TG](?:FL)?OP/s|MiB)")


def test_derived_sources_recompute_to_the_stored_numbers() -> None:
    """Each "derived: a x b x ... = v unit" formula multiplies out to v, and v is the value."""
    checked = 0
    for name, entry in bundled_toml().items():
        for key, text in entry["sources"].items():
            if not text.startswith("derived:"):
                continue
            m = _DERIVED.match(text)
            assert m, f"{name}.{key}: unparsable formula {text!r}"
            factors = m["lhs"].split(" x ")
            product = 1.0
            for factor in factors:
                leading = re.search(r"\d+(?:\.\d+)?", factor)
                assert leading, f"{name}.{key}: factor without a number: {factor!r}"
                product *= float(leading[0])
            stated, unit = float(m["val"]), m["unit"]
            if unit != "MiB":
                assert "GHz" in factors[-1], f"{name}.{key}: clock must be the last factor"
                product = product / 1000 if unit.startswith("T") else product  # G -> T
            assert product == pytest.approx(stated, rel=2e-4), f"{name}.{key}"
            stored = entry[key] * (1000 if unit.startswith("G") else 1)  # TOML is in T / MiB
            assert stored == pytest.approx(stated, rel=2e-4), f"{name}.{key}"
            checked += 1
    assert checked >= 60


def test_tensor_peaks_exceed_vector_peaks() -> None:
    for gpu in load_registry().all():
        if gpu.fp16_tensor_flops is not None:
            assert gpu.fp16_tensor_flops > gpu.fp16_flops, gpu.name
        if gpu.bf16_tensor_flops is not None and gpu.bf16_flops is not None:
            assert gpu.bf16_tensor_flops > gpu.bf16_flops, gpu.name


def test_aliases_are_useful_and_unambiguous() -> None:
    seen: dict[str, str] = {}
    for gpu in load_registry().all():
        keys = [normalize_name(k) for k in (gpu.name, *gpu.aliases)]
        assert len(keys) == len(set(keys)), f"{gpu.name}: an alias repeats a name"
        for k in keys:
            assert seen.setdefault(k, gpu.name) == gpu.name, k


# --------------------------------------------------------------------------------------------
# Lookup


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("H100", "H100-SXM5-80GB"),
        ("h100-sxm", "H100-SXM5-80GB"),
        ("h100_sxm5", "H100-SXM5-80GB"),
        ("H100 PCIe", "H100-PCIe-80GB"),
        ("h100-pcie-80gb", "H100-PCIe-80GB"),
        ("rtx 3080", "RTX-3080"),
        ("RTX_3080", "RTX-3080"),
        ("3080", "RTX-3080"),
        ("GA102", "RTX-3080"),
        ("a100", "A100-SXM4-80GB"),
        ("A100 40GB", "A100-SXM4-40GB"),
        ("a100-sxm4-40gb", "A100-SXM4-40GB"),
        ("v100", "V100-SXM2-32GB"),
        ("h200", "H200"),
        ("b200", "B200"),
        ("L4", "L4"),
        ("l40s", "L40S"),
        ("rtx4090", "RTX-4090"),
        ("MI-100", "MI100"),
        ("mi250x", "MI250X"),
        ("MI 300X", "MI300X"),
        ("gfx942", "MI300X"),
        ("Max 1550", "Max-1550"),
        ("Data Center GPU Max 1550", "Max-1550"),
        ("pvc", "Max-1550"),
    ],
)
def test_lookup_by_name_or_alias_ignores_case_dashes_and_spaces(query: str, expected: str) -> None:
    reg = load_registry()
    assert reg.get(query).name == expected
    assert query in reg


def test_unknown_gpu_lists_the_closest_names_on_one_line() -> None:
    reg = load_registry()
    with pytest.raises(UnknownGpuError) as info:
        reg.get("h10")
    assert str(info.value) == (
        "unknown GPU 'h10': closest: H100-SXM5-80GB, H100-PCIe-80GB, H200 "
        "(roofline-lsp gpus lists all)"
    )
    assert info.value.closest == ("H100-SXM5-80GB", "H100-PCIe-80GB", "H200")
    assert issubclass(UnknownGpuError, ValueError)

    with pytest.raises(UnknownGpuError) as info:
        reg.get("mi250")
    assert info.value.closest[0] == "MI250X"
    with pytest.raises(UnknownGpuError) as info:
        reg.get("rtx 3090")
    assert info.value.closest[:2] == ("RTX-3080", "RTX-4090")

    with pytest.raises(UnknownGpuError) as info:
        reg.get("quantum\ntoaster")
    assert str(info.value) == "unknown GPU 'quantum toaster' (roofline-lsp gpus lists all)"
    assert "\n" not in str(info.value)
    assert "zzz" not in reg


# --------------------------------------------------------------------------------------------
# User TOML


def test_user_toml_adds_a_gpu_after_the_bundled_ones() -> None:
    reg = load_registry(str(FIXTURES / "add_gpu.toml"))
    lab = reg.get("lab gpu one")
    assert lab.name == "Lab-GPU-1" and lab is reg.get("LAB1")
    assert reg.names() == (*EXPECTED_GPUS, "Lab-GPU-1")
    assert lab.vendor == "Example" and lab.unit_name == "CU" and lab.sm_count == 40
    assert lab.fp64_tensor_flops is None and lab.cache_kind == "L2"
    assert lab.l2_bytes == 4 * MIB
    # 7.68 TFLOP/s over 480 GB/s = 16 FLOP/B; 3.84 / 480 = 8.
    assert lab.ridges() == pytest.approx({"fp64": 8.0, "fp32": 16.0, "fp16": 32.0, "int": 16.0})
    assert lab.sources["dram_gbs"] == "lab measurement, STREAM triad"
    assert lab.sources["fp32_tflops"].startswith("user profile (")
    # The bundled registry is untouched.
    assert "lab1" not in load_registry()


def test_user_toml_overrides_some_fields_and_keeps_the_others() -> None:
    bundled = load_registry()
    reg = load_registry(str(FIXTURES / "override.toml"))
    h100 = reg.get("h100")
    assert h100.dram_bandwidth == pytest.approx(3000e9)
    # Untouched fields keep their bundled values (and sources).
    assert h100.fp32_flops == bundled.get("h100").fp32_flops
    assert h100.aliases == bundled.get("h100").aliases
    assert h100.sources["fp32_tflops"] == bundled.get("h100").sources["fp32_tflops"]
    assert "user override" in h100.sources["dram_gbs"]
    # 66.908 TFLOP/s / 3.0 TB/s = 22.30 FLOP/B.
    assert h100.ridge("fp32") == pytest.approx(22.3027, rel=1e-4)

    rtx = reg.get("my desk gpu")
    assert rtx.name == "RTX-3080" and rtx.l2_bytes == 6 * MIB
    assert rtx.sources["l2_mib"] == "what my card reports"
    assert rtx.ridge("fp32") == pytest.approx(32.971, rel=1e-4)
    assert "ga102" not in reg  # the override replaced the alias list
    assert reg.names() == EXPECTED_GPUS  # nothing added, order kept
    assert bundled.get("h100").dram_bandwidth == pytest.approx(3350e9)


def test_user_toml_based_on_copies_an_existing_profile() -> None:
    reg = load_registry(str(FIXTURES / "based_on.toml"))
    capped, a100 = reg.get("a100-capped"), reg.get("a100")
    assert capped.name == "A100-Capped"
    assert capped.clock_ghz == 1.2 and capped.fp32_flops == pytest.approx(16.589e12)
    assert capped.dram_bandwidth == a100.dram_bandwidth
    assert capped.fp64_tensor_flops == a100.fp64_tensor_flops
    assert capped.aliases == ("a100-capped",)
    assert "A100-SXM4-80GB" in capped.sources["dram_gbs"]


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("broken_syntax.toml", r"broken_syntax\.toml:3: TOML syntax error: Expected '='"),
        ("broken_type.toml", r"broken_type\.toml:2: \[h100\] dram_gbs: expected a number"),
        (
            "broken_negative.toml",
            r"broken_negative\.toml:6: \[My-GPU\] fp32_tflops: must be a positive number, got -2",
        ),
        (
            "broken_missing.toml",
            r"broken_missing\.toml:1: \[My-GPU\]: new GPU lacks required fields: sm_count, "
            r"clock_ghz, fp64_tflops, fp16_tflops, int32_tops, l2_mib",
        ),
        (
            "broken_unknown_field.toml",
            r"\[a100\] fp32_tflop: unknown field \(did you mean fp32_tflops\?\)",
        ),
        ("broken_alias_clash.toml", r":3: \[My-GPU\] aliases: 'H100' already names H100-SXM5"),
        ("broken_not_table.toml", r"\.toml:1: gpu: expected a table per GPU, e\.g\. \[My-GPU\]"),
        ("broken_bool.toml", r":2: \[l4\] sm_count: expected a number, got True"),
        ("broken_fractional_units.toml", r"\[l4\] sm_count: expected a whole number, got 58\.5"),
        ("broken_aliases.toml", r"\[l4\] aliases: expected a list of names"),
        (
            "broken_source.toml",
            r":5: \[l4\] sources\.dram_gb: not a numeric field \(did you mean dram_gbs\?\)",
        ),
        ("broken_base.toml", r"\[My-GPU\] based_on: unknown GPU 'h300'"),
        ("broken_zero.toml", r"\[mi300x\] dram_gbs: must be a positive number, got 0"),
    ],
)
def test_broken_user_toml_gives_a_one_line_error(fixture: str, expected: str) -> None:
    with pytest.raises(GpuProfileError) as info:
        load_registry(str(FIXTURES / fixture))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(FIXTURES / fixture))
    assert re.search(expected, message), message
    assert issubclass(GpuProfileError, ValueError)


def test_missing_user_toml_is_a_profile_error() -> None:
    with pytest.raises(GpuProfileError, match=r"nope\.toml: cannot read GPU profiles"):
        load_registry(str(FIXTURES / "nope.toml"))


def test_registries_are_cached_and_a_changed_file_is_reread(tmp_path: Path) -> None:
    assert load_registry() is load_registry(None) is load_registry("")
    user = tmp_path / "gpus.toml"
    user.write_text("[l4]\ndram_gbs = 250\n")
    first = load_registry(str(user))
    assert first is load_registry(str(user))
    assert first.get("l4").dram_bandwidth == pytest.approx(250e9)
    user.write_text("[l4]\ndram_gbs = 275.5\n")
    os.utime(user, ns=(1, 2_000_000_000))  # a different mtime even on coarse clocks
    second = load_registry(str(user))
    assert second.get("l4").dram_bandwidth == pytest.approx(275.5e9)


# --------------------------------------------------------------------------------------------
# The profile object and output


def test_profiles_are_frozen_hashable_and_validated() -> None:
    gpu = load_registry().get("a100")
    with pytest.raises(dataclasses.FrozenInstanceError):
        gpu.sm_count = 1  # type: ignore[misc]
    assert {gpu: 1}[load_registry().get("A100-SXM4-80GB")] == 1
    with pytest.raises(ValueError, match="dram_bandwidth must be a positive number"):
        dataclasses.replace(gpu, dram_bandwidth=-1.0)
    hand = GpuProfile(
        name="Toy",
        vendor="Example",
        fp64_flops=1e12,
        fp32_flops=2e12,
        fp16_flops=4e12,
        int32_ops=1e12,
        dram_bandwidth=1e11,
        l2_bytes=MIB,
        sm_count=4,
        clock_ghz=1.0,
    )
    assert hand.ridges() == pytest.approx({"fp64": 10.0, "fp32": 20.0, "fp16": 40.0, "int": 10.0})


def test_describe_is_one_short_line() -> None:
    text = load_registry().get("rtx 3080").describe()
    assert "\n" not in text and len(text) < 160
    assert text.startswith("RTX-3080 (NVIDIA, 68 SMs @ 1.44 GHz)")
    assert "FP32 25.07" in text and "DRAM 760.3 GB/s" in text and "L2 5 MiB" in text
    assert "LLC 256 MiB" in load_registry().get("mi300x").describe()


def test_to_json_describes_a_profile() -> None:
    gpu = load_registry().get("h100")
    data = gpu_json(gpu)
    assert json.loads(json.dumps(data)) == data
    assert data["name"] == "H100-SXM5-80GB" and data["vendor"] == "NVIDIA"
    assert "h100" in data["aliases"]
    assert list(data["ridges"]) == list(PRECISIONS)
    assert data["ridges"]["fp64"] == pytest.approx(9.986, rel=1e-3)
    assert data["peaks"]["fp32"] == pytest.approx(66.908e12)
    assert data["peaks"]["fp16_tensor"] == pytest.approx(989.5e12)
    assert data["bandwidth"] == pytest.approx(3.35e12)
    assert data["l2"] == 50 * MIB
    assert gpu_json(load_registry().get("v100"))["peaks"]["bf16"] is None
    # only the eval labels' RTX 3080 drives a display: 20 MB a refresh at 60 Hz
    assert data["display"] is None
    assert gpu_json(load_registry().get("rtx3080"))["display"] == {"frameBytes": 20e6, "hz": 60.0}


def test_resident_limits_are_the_device_properties_of_nvidia_gpus(tmp_path: Path) -> None:
    # the CUDA guide's per-SM limits: 1536 threads and 16 blocks at compute capability 8.6
    # (RTX 3080), 2048 and 32 at 8.0 (A100); not modelled on AMD, whose occupancy counts
    # wavefronts per SIMD
    reg = load_registry()
    props = reg.get("rtx3080").device_properties
    assert (props["maxThreadsPerMultiProcessor"], props["maxBlocksPerMultiProcessor"]) == (
        1536.0,
        16.0,
    )
    assert reg.get("a100").device_properties["maxThreadsPerMultiProcessor"] == 2048.0
    assert "maxThreadsPerMultiProcessor" not in reg.get("mi250x").device_properties
    # a user profile gives them as whole numbers
    path = tmp_path / "mine.toml"
    path.write_text('[mine]\nbased_on = "rtx3080"\nmax_threads_per_sm = 1024\n')
    assert load_registry(str(path)).get("mine").max_threads_per_sm == 1024
    path.write_text('[mine]\nbased_on = "rtx3080"\nmax_blocks_per_sm = 2.5\n')
    with pytest.raises(GpuProfileError, match=r"max_blocks_per_sm: expected a whole number"):
        load_registry(str(path))


def test_compute_capability_is_reported_and_chooses_the_arch(tmp_path: Path) -> None:
    # NVIDIA profiles give major.minor (cudaDeviceProp major/minor); AMD and Intel none
    reg = load_registry()
    props = reg.get("rtx3080").device_properties
    assert (props["major"], props["minor"]) == (8.0, 6.0)
    assert reg.get("b200").compute_capability == (10, 0)
    assert "major" not in reg.get("mi300x").device_properties
    assert reg.get("max-1550").compute_capability is None
    # a user profile's compute capability picks the counting build's arch, whatever its name
    path = tmp_path / "mine.toml"
    path.write_text('[mine]\nbased_on = "rtx4090"\ncompute_capability = 12.0\n')
    mine = load_registry(str(path)).get("mine")
    assert mine.compute_capability == (12, 0) and arch_for(mine) == "sm_120"
    path.write_text('[mine]\nbased_on = "rtx4090"\ncompute_capability = 8.65\n')
    with pytest.raises(GpuProfileError, match=r"compute_capability: expected major\.minor"):
        load_registry(str(path))
