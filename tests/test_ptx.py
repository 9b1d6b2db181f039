"""Tests of roofline_lsp.ptx: PTX parsing on checked-in PTX of our own fixtures (always), real
compiles when nvcc is found (the toolkit need not be on PATH), compiler discovery, flags,
caching, cancellation and timeouts with stand-in compilers written here."""

from __future__ import annotations

import asyncio
import os
import re
import stat
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from roofline_lsp.compiler import ptx
from roofline_lsp.store.cache import ResultCache

FIX = Path(__file__).parent / "fixtures" / "ptx"
NVCC = ptx.find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="no nvcc on this machine")
OMP_CLANG = ptx.find_offload_clang()


def load(name: str) -> ptx.PtxModule:
    return ptx.parse_ptx((FIX / name).read_text())


def line(counts: dict[ptx.Key, ptx.LineMix], file: str, n: int) -> dict[str, int]:
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
    "fp64": 8,
    "flops_fp64": 15,
    "int_ops": 3,
    "special": 1,
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
#   line 11 h ^= h >> 13      -> int 2;  line 12 h *= ... -> int 1;  line 13 -> int 2
#   line 14 out[i] = h % 1024u  the modulo by a power of two is an and.b32, + add.s64 (out+i)
#           st.global.u32                                              -> int 2, 1 store 4 B
#   whole kernel: lines 6 (mad) 1 + 7 (setp) 1 + 1+2+1+2+1+2+2           -> int 13
HASH_LINES = {
    8: {"instructions": 3, "int_ops": 1, "other": 1, "ld_global": 1, "ld_global_bytes": 4},
    9: {"instructions": 2, "int_ops": 2},
    10: {"instructions": 1, "int_ops": 1},
    11: {"instructions": 2, "int_ops": 2},
    12: {"instructions": 1, "int_ops": 1},
    13: {"instructions": 2, "int_ops": 2},
    14: {"instructions": 3, "int_ops": 2, "st_global": 1, "st_global_bytes": 4},
}


def check_saxpy(module: ptx.PtxModule) -> None:
    counts = ptx.counts_for_kernel(module, "saxpy")
    assert counts is not None
    assert line(counts, "saxpy.cu", 8) == SAXPY_LINE8
    assert line(counts, "saxpy.cu", 7) == {"instructions": 2, "int_ops": 1, "branches": 1}
    assert line(counts, "saxpy.cu", 6)["int_ops"] == 1
    assert line(counts, "saxpy.cu", 4) == {"instructions": 4, "ld_param": 4}


def check_dot(module: ptx.PtxModule) -> None:
    counts = ptx.counts_for_kernel(module, "rowdot")
    assert counts is not None
    assert line(counts, "dot_fp64.cu", 15) == DOT_LINE15
    assert line(counts, "dot_fp64.cu", 14) == DOT_LINE14
    assert line(counts, "dot_fp64.cu", 17) == DOT_LINE17
    (loop,) = module.functions["_Z6rowdotPKdS0_Pdii"].loops
    assert (loop.first_line, loop.last_line, loop.depth) == (14, 15, 1)
    assert os.path.basename(loop.file) == "dot_fp64.cu"
    assert loop.mix.nonzero() == DOT_LOOP
    assert os.path.basename(loop.control[0]) == "dot_fp64.cu" and loop.control[1] == 14


def check_hash(module: ptx.PtxModule) -> None:
    kc = ptx.kernel_counts(module, "hash_keys")
    assert kc is not None
    for n, expected in HASH_LINES.items():
        assert line(dict(kc.lines), "int_hash.cu", n) == expected, n
    total = kc.total
    assert total.int_ops == 13
    assert total.flops("fp32") == total.flops("fp64") == total.flops("fp16") == 0
    assert total.flops("int") == 13
    assert total.global_load_bytes == 4 and total.global_store_bytes == 4


# --- parsing the checked-in PTX (no compiler needed) -------------------------------------------


def test_saxpy_per_line_mix() -> None:
    m = load("saxpy.ptx")
    assert (m.version, m.target) == ("9.0", "sm_86")
    (k,) = m.kernels
    assert (k.name, k.base_name, k.is_kernel) == ("_Z5saxpyifPKfPf", "saxpy", True)
    check_saxpy(m)


def test_fp64_kernel_per_line_mix_and_loop() -> None:
    check_dot(load("dot_fp64.ptx"))


def test_integer_hash_per_line_mix() -> None:
    check_hash(load("int_hash.ptx"))


def test_kernel_lookup_by_mangled_and_base_name() -> None:
    m = load("saxpy.ptx")
    assert ptx.find_kernels(m, "_Z5saxpyifPKfPf") == ptx.find_kernels(m, "saxpy")
    assert ptx.counts_for_kernel(m, "not_there") is None


# A hand-written PTX module in nvcc's format: a kernel calling a .func (not inlined), an
# inlined helper with a two-level inlined_at chain, a vector load, f16x2 and special functions,
# shared memory, atomics, cp.async and a multi-line call sequence.
SYNTHETIC = r"""
.version 8.0
.target sm_80
.address_size 64

.func  (.param .b32 func_retval0) _Z6helperi(
	.param .b32 _Z6helperi_param_0
)
;

.visible .entry _ZN2ns6kernelILi4EEEvPfS1_i(
	.param .u64 _ZN2ns6kernelILi4EEEvPfS1_i_param_0,
	.param .u64 _ZN2ns6kernelILi4EEEvPfS1_i_param_1,
	.param .u32 _ZN2ns6kernelILi4EEEvPfS1_i_param_2
)
.maxntid 256, 1, 1
{
	.reg .pred 	%p<3>;
	.reg .f32 	%f<9>;
	.reg .b32 	%r<9>;
	.reg .b64 	%rd<9>;
	.shared .align 4 .b8 _ZZ6kernelE4tile[1024];
	.loc	1 20 0
	ld.param.u64 	%rd1, [_ZN2ns6kernelILi4EEEvPfS1_i_param_0];
	.loc	1 21 3
	ld.global.nc.v4.f32 	{%f1, %f2, %f3, %f4}, [%rd1];
	.loc	1 22 3
	.loc	2 5 7, function_name $L__info_string0, inlined_at 1 22 3
	.loc	2 9 5, function_name $L__info_string1, inlined_at 2 5 7
	fma.rn.f32 	%f5, %f1, %f2, %f3;
	ex2.approx.ftz.f32 	%f6, %f5;
	.loc	2 6 7, function_name $L__info_string0, inlined_at 1 22 3
	add.rn.f16x2 	%r1, %r2, %r3;
	.loc	1 23 3
	st.shared.f32 	[_ZZ6kernelE4tile], %f6;
	bar.sync 	0;
	ld.shared::cta.v2.f32 	{%f7, %f8}, [_ZZ6kernelE4tile+8];
	atom.global.add.u32 	%r4, [%rd1], 1;
	red.shared.add.u32 	[_ZZ6kernelE4tile], 1;
	cp.async.ca.shared.global.L2::128B 	[%r5], [%rd1], 16;
	cp.async.wait_all;
	.loc	1 24 3
	{ // callseq 0, 0
	.reg .b32 temp_param_reg;
	.param .b32 param0;
	st.param.b32 	[param0+0], %r4;
	.param .b32 retval0;
	call.uni (retval0),
	_Z6helperi,
	(
	param0
	);
	ld.param.b32 	%r6, [retval0+0];
	} // callseq 0
	{ // callseq 1, 0
	call.uni (retval0), %rd4, (param0), prototype_1;
	} // callseq 1
	.loc	1 25 3
	sqrt.rn.f32 	%f8, %f7;
	div.rn.f32 	%f8, %f8, %f7;
	rem.s32 	%r7, %r6, %r4;
	setp.lt.s64 	%p1, %rd1, %rd2;
	and.pred  	%p2, %p1, %p1;
	@!%p2 bra 	$L__BB0_1;
	ret;
$L__BB0_1:
	ret;

}
.func  (.param .b32 func_retval0) _Z6helperi(
	.param .b32 _Z6helperi_param_0
)
{
	.reg .b32 	%r<4>;
	.loc	2 30 0
	ld.param.u32 	%r1, [_Z6helperi_param_0];
	.loc	2 31 3
	mul.lo.s64 	%rd1, %rd2, %rd3;
	shl.b32 	%r2, %r1, 3;
	st.param.b32 	[func_retval0+0], %r2;
	ret;

}
	.file	1 "/src/kernel.cu"
	.file	2 "/src/helpers.cuh", 1700000000, 512
"""


def test_synthetic_module_classes_calls_and_inlining() -> None:
    m = ptx.parse_ptx(SYNTHETIC)
    assert m.files == {1: "/src/kernel.cu", 2: "/src/helpers.cuh"}
    assert list(m.functions) == ["_ZN2ns6kernelILi4EEEvPfS1_i", "_Z6helperi"]  # decl skipped
    k = m.functions["_ZN2ns6kernelILi4EEEvPfS1_i"]
    assert k.base_name == "ns::kernel" and k.short_name == "kernel"
    assert k.calls == ("_Z6helperi",)
    # direct attribution: the inlined helper's lines are its own
    assert k.lines[("/src/kernel.cu", 21)].nonzero() == {
        "instructions": 1,
        "ld_global": 1,
        "ld_global_bytes": 16,
    }
    assert k.lines[("/src/helpers.cuh", 9)].nonzero() == {
        "instructions": 2,
        "fp32": 1,
        "flops_fp32": 2,
        "special": 1,
    }
    assert k.lines[("/src/helpers.cuh", 6)].nonzero() == {
        "instructions": 1,
        "fp16": 2,
        "flops_fp16": 2,
    }
    # call-site attribution: the chain 2:9 -> 2:5 -> 1:22 resolves to the kernel body line
    assert k.callsite_lines[("/src/kernel.cu", 22)].nonzero() == {
        "instructions": 3,
        "fp32": 1,
        "fp16": 2,
        "flops_fp32": 2,
        "flops_fp16": 2,
        "special": 1,
    }
    l23 = k.lines[("/src/kernel.cu", 23)].nonzero()
    assert l23 == {
        "instructions": 7,
        "st_shared": 2,  # st.shared + the shared half of cp.async
        "st_shared_bytes": 4 + 16,
        "ld_shared": 1,
        "ld_shared_bytes": 8,
        "barriers": 2,  # bar.sync, cp.async.wait_all
        "atom_global": 1,
        "atom_global_bytes": 4,
        "atom_shared": 1,
        "atom_shared_bytes": 4,
        "ld_global": 1,  # cp.async: 16 B from global
        "ld_global_bytes": 16,
    }
    l24 = k.lines[("/src/kernel.cu", 24)]
    assert l24.calls == ("_Z6helperi",) and l24.call_count == 2  # one direct, one indirect
    l25 = k.lines[("/src/kernel.cu", 25)].nonzero()
    # sqrt.rn.f32 (MUFU + 6 FLOP, 2 int, slow-path branch), div.rn.f32 (MUFU + 5 FFMA + FCHK,
    # branch), rem.s32 (15 int + MUFU + 2 conversions), 64-bit setp (2), predicate and (0),
    # the branch and two rets
    assert l25["special"] == 3
    assert l25["flops_fp32"] == 6 + 10
    assert l25["int_ops"] == 2 + 15 + 2
    assert l25["branches"] == 1 + 1 + 1
    # callees merged in once, keyed by their own lines
    counts = ptx.counts_for_kernel(m, "kernel")
    assert counts is not None
    assert counts[("/src/helpers.cuh", 31)].int_ops == 3 + 1  # 64-bit mul.lo, shl
    only_kernel = ptx.counts_for_kernel(m, "kernel", include_callees=False)
    assert only_kernel is not None and ("/src/helpers.cuh", 31) not in only_kernel
    site = ptx.counts_for_kernel(m, "ns::kernel", attribution="callsite")
    assert site is not None and site[("/src/kernel.cu", 22)].special == 1


def test_openmp_offload_ptx_regions_and_outlined_body() -> None:
    m = load("omp_saxpy.ptx")
    (entry,) = m.kernels
    assert ptx.omp_region(entry.name) == ("saxpy_omp", 6)
    assert ptx.omp_region("__omp_offloading_10302_abc__ZN2ns3runEv_l42") == ("ns::run", 42)
    assert ptx.omp_region("_Z5saxpyifPKfPf") is None
    assert "__omp_outlined__1" in entry.calls  # passed by address to __kmpc_parallel_51
    counts = ptx.counts_for_kernel(m, entry.name)
    assert counts is not None
    body = line(counts, "omp_saxpy.c", 8)  # y[i] = a * x[i] + y[i];
    assert body["flops_fp32"] == 2
    assert body["ld_generic_bytes"] == 8 and body["st_generic_bytes"] == 4


@pytest.mark.parametrize(
    ("symbol", "base"),
    [
        ("_Z5saxpyifPKfPf", "saxpy"),
        ("_ZN2ns6kernelIfEEvPT_i", "ns::kernel"),
        ("_ZN3foo3barIiE3bazEv", "foo::bar::baz"),
        ("_Z6kernelILi128EEvPfi", "kernel"),
        ("_Z4gemmIN3cub4PairIfiEELi16ES0_EvPT_", "gemm"),
        ("_ZL7staticKPf", "staticK"),
        ("_ZNSt6vectorIiE4sizeEv", "std::vector::size"),
        ("_ZNK3Foo3getEv", "Foo::get"),
        ("__omp_offloading_fe00_1a2b_main_l12", "__omp_offloading_fe00_1a2b_main_l12"),
        ("_Zbogus", "_Zbogus"),
    ],
)
def test_demangle_base(symbol: str, base: str) -> None:
    assert ptx.demangle_base(symbol) == base


def test_classify_widths_and_spaces() -> None:
    c = ptx.classify
    assert c("ld.global.nc.v2.f64").nonzero() == {
        "instructions": 1,
        "ld_global": 1,
        "ld_global_bytes": 16,
    }
    assert c("ld.u8").ld_generic_bytes == 1
    assert c("ld.local.u32").ld_local_bytes == 4
    assert c("ld.const.f32").ld_const == 1
    assert c("st.global.v4.b32").st_global_bytes == 16
    assert c("atom.add.f32").atom_generic == 1
    assert c("tex.2d.v4.f32.s32").ld_tex_bytes == 16
    assert c("fma.rn.f64").flops_fp64 == 2 and c("fma.rn.f64").fp64 == 1
    assert c("mul.f32").flops_fp32 == 1
    assert c("fma.rn.bf16x2").flops_fp16 == 4
    assert c("max.f32").nonzero() == {"instructions": 1, "fp32": 1}  # no FLOP
    assert c("setp.lt.f64").flops_fp64 == 0 and c("setp.lt.f64").fp64 == 1
    assert c("setp.lt.s32").int_ops == 1 and c("setp.ne.u64").int_ops == 2
    assert c("mul.wide.s32").int_ops == 1 and c("mul.lo.s64").int_ops == 3
    assert c("div.u32").int_ops == 20 and c("div.s64").int_ops == 70
    assert c("cvt.s64.s32").int_ops == 1 and c("cvt.u64.u32").int_ops == 0
    assert c("cvt.rn.f32.s32").conversions == 1 and c("cvt.f64.f32").conversions == 1
    assert c("mov.u32").int_ops == 0 and c("and.pred").int_ops == 0
    assert c("sin.approx.f32").special == 1 and c("rsqrt.approx.f32").flops_fp32 == 2
    assert c("rcp.rn.f64").flops_fp64 == 10 and c("sqrt.rn.f64").flops_fp64 == 13
    assert c("shfl.sync.bfly.b32").warp_ops == 1
    assert c("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32").flops_tensor == 128
    mix = c("add.s32") + c("fma.rn.f32")
    assert mix.int_ops == 1 and mix.flops_fp32 == 2 and mix.instructions == 2
    assert mix.scaled(3).flops_fp32 == 6


# --- finding nvcc ------------------------------------------------------------------------------


def fake_tool(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return p


posix_only = pytest.mark.skipif(os.name != "posix", reason="stand-in compilers are sh scripts")


def test_find_nvcc_nothing_in_an_empty_environment(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path / "empty")}
    assert ptx.find_nvcc(None, env, locations=()) is None
    assert ptx.find_nvcc(None, {}, locations=[str(tmp_path / "cuda-*/bin")]) is None
    path, why = ptx.locate_nvcc(None, env, locations=())
    assert path is None and "not found" in why


@posix_only
def test_find_nvcc_search_order(tmp_path: Path) -> None:
    a = fake_tool(tmp_path / "setting", "nvcc", "exit 0\n")
    b = fake_tool(tmp_path / "home" / "bin", "nvcc", "exit 0\n")
    c = fake_tool(tmp_path / "onpath", "nvcc", "exit 0\n")
    d = fake_tool(tmp_path / "cuda-12.4" / "bin", "nvcc", "exit 0\n")
    e = fake_tool(tmp_path / "cuda-12.10" / "bin", "nvcc", "exit 0\n")
    env = {"CUDA_HOME": str(tmp_path / "home"), "PATH": str(tmp_path / "onpath")}
    locs = [str(tmp_path / "cuda-*" / "bin")]
    assert ptx.find_nvcc(str(a), env, locs) == str(a)
    assert ptx.find_nvcc(str(tmp_path / "setting"), env, locs) == str(a)  # a folder
    assert ptx.find_nvcc(None, env, locs) == str(b)
    assert ptx.find_nvcc(None, {"CUDA_PATH": str(tmp_path / "home")}, locs) == str(b)
    assert ptx.find_nvcc(None, {"PATH": env["PATH"]}, locs) == str(c)
    assert ptx.find_nvcc(None, {"PATH": ""}, locs) == str(e)  # newest version first
    assert d.exists()
    path, why = ptx.locate_nvcc(str(tmp_path / "nope"), env, locs)
    assert path is None and "nope" in why  # an explicit setting is not silently replaced


@posix_only
def test_nvcc_version_and_archs_from_a_stand_in(tmp_path: Path) -> None:
    nv = fake_tool(
        tmp_path,
        "nvcc",
        'case "$1" in\n'
        "  --version) echo 'Cuda compilation tools, release 12.4, V12.4.131';;\n"
        "  --list-gpu-arch) printf 'compute_50\\ncompute_90\\ncompute_80\\n';;\n"
        "esac\n",
    )
    assert ptx.nvcc_version(str(nv)) == "12.4.131"
    assert ptx.supported_archs(str(nv)) == (50, 80, 90)
    assert ptx.nvcc_version(str(tmp_path / "missing")) is None


# --- arch selection ----------------------------------------------------------------------------


def test_arch_for_registry_gpus() -> None:
    from roofline_lsp.model.gpus import load_registry

    reg = load_registry()
    want = {
        "rtx3080": "sm_86",
        "h100": "sm_90",
        "a100": "sm_80",
        "l4": "sm_89",
        "l40s": "sm_89",
        "4090": "sm_89",
        "b200": "sm_100",
        "v100": "sm_70",
    }
    for name, arch in want.items():
        assert ptx.arch_for(reg.get(name)) == arch, name
    nvcc13 = (75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121)
    v100 = ptx.arch_choice(reg.get("v100"), nvcc13)
    assert v100.arch == "sm_75" and v100.wanted == 70 and "sm_70 not supported" in v100.note
    mi = ptx.arch_choice(reg.get("mi300x"), nvcc13)
    assert mi.arch == "sm_80" and mi.wanted is None and "proxy" in mi.note
    assert ptx.arch_for(reg.get("max-1550")) == "sm_80"


def test_arch_for_any_named_object() -> None:
    assert ptx.arch_for(SimpleNamespace(name="My H100 box")) == "sm_90"
    assert ptx.arch_for(SimpleNamespace(name="x", compute_capability="8.9")) == "sm_89"
    unknown = ptx.arch_choice(SimpleNamespace(name="Mystery", vendor="NVIDIA"))
    assert unknown.arch == "sm_80" and "unknown" in unknown.note
    assert ptx.arch_for(SimpleNamespace(name="rtx3080"), supported=(90, 100)) == "sm_90"


# --- flags and translation units ---------------------------------------------------------------


def test_project_flags_from_compile_commands(tmp_path: Path) -> None:
    src = tmp_path / "proj" / "src" / "k.cu"
    src.parent.mkdir(parents=True)
    src.write_text("")
    (tmp_path / "proj" / "compile_commands.json").write_text(
        '[{"directory": "%s", "file": "src/k.cu", "command": '
        '"nvcc -O2 -Iinclude -I /abs/inc -DN=4 -D M=2 -UFOO -isystem sys -std=gnu++20 '
        '-arch=sm_90 -o k.o -c src/k.cu"}]' % (tmp_path / "proj")
    )
    flags = ptx.project_flags(str(src))
    base = str(tmp_path / "proj")
    assert flags == (
        "-I", f"{base}/include", "-I", "/abs/inc", "-DN=4", "-D", "M=2", "-UFOO",
        "-isystem", f"{base}/sys", "-std=c++20",
    )  # fmt: skip


def test_project_flags_from_compile_flags_txt(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "compile_flags.txt").write_text("-Iinc\n-DUSE_X\n-Wall\n-xcuda\n")
    flags = ptx.project_flags(str(tmp_path / "a" / "b" / "k.cu"))
    assert flags == ("-I", str(tmp_path / "a" / "inc"), "-DUSE_X")
    assert ptx.project_flags(str(tmp_path / "k.cu"), stop=str(tmp_path)) == ()


def test_translation_unit_for_headers_and_included_sources(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "kern.cuh").write_text("__global__ void k(float* p) { p[0] = 1; }\n")
    (tmp_path / "kernels.cu").write_text('#include "inc/kern.cuh"\n')
    (tmp_path / "main.cu").write_text('#include <cstdio>\n#include "kernels.cu"\nint main(){}\n')
    (tmp_path / "other.cu").write_text("int x;\n")
    (tmp_path / "lonely.h").write_text("int y;\n")
    main = str(tmp_path / "main.cu")
    assert ptx.translation_unit_for(str(tmp_path / "inc" / "kern.cuh")) == main
    assert ptx.translation_unit_for(str(tmp_path / "kernels.cu")) == main
    assert ptx.translation_unit_for(str(tmp_path / "other.cu")) == str(tmp_path / "other.cu")
    assert ptx.translation_unit_for(str(tmp_path / "lonely.h")) is None
    assert ptx.includers_of(str(tmp_path / "inc" / "kern.cuh")) == [
        main,
        str(tmp_path / "kernels.cu"),
    ]


# --- compiling with stand-in compilers (no toolkit needed) -------------------------------------

# copies the checked-in saxpy PTX to the -o argument, and logs each run
STANDIN = """
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
case "$1" in --version) echo 'release 99.0, V99.0.1'; exit 0;; esac
echo run >> "{log}"
cp "{ptx}" "$out"
"""


@posix_only
def test_compile_cache_hits_and_invalidation(tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    nv = fake_tool(tmp_path / "bin", "nvcc", STANDIN.format(log=log, ptx=FIX / "saxpy.ptx"))
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "defs.h").write_text("#define N 1\n")
    src = proj / "k.cu"
    src.write_text('#include "defs.h"\n__global__ void saxpy() {}\n')
    cache = ResultCache(str(tmp_path / "cache"), namespace=ptx.CACHE_NAMESPACE)

    def run(source: bytes | None = None) -> ptx.PtxResult | ptx.PtxFailure:
        return ptx.compile_ptx(str(src), source, str(nv), "sm_86", cache=cache)

    first = run()
    assert isinstance(first, ptx.PtxResult) and not first.cached
    assert first.compiler_version == "99.0.1"
    check_saxpy(ptx.parse_ptx(first.ptx))
    second = run()
    assert isinstance(second, ptx.PtxResult) and second.cached and second.ptx == first.ptx
    assert log.read_text().count("run") == 1
    (proj / "defs.h").write_text("#define N 2\n")  # a local include changed: recompile
    assert not run().cached
    assert not run(b'#include "defs.h"\n// edited buffer\n').cached  # unsaved edits: recompile
    assert log.read_text().count("run") == 3
    cache.close()


@posix_only
def test_buffer_compile_resolves_local_includes_and_names_the_original(tmp_path: Path) -> None:
    # the stand-in fails unless the original folder is on the include path, then writes a PTX
    # whose .file points at the temp copy it was given
    body = """
out=""; prev=""; src=""; inc=0
for a in "$@"; do
  [ "$prev" = "-o" ] && out="$a"
  [ "$prev" = "-I" ] && [ "$a" = "{proj}" ] && inc=1
  prev="$a"
done
for a in "$@"; do case "$a" in *.cu) src="$a";; esac; done
[ $inc = 1 ] || {{ echo "$src(1): error: cannot open source file \\"defs.h\\"" >&2; exit 2; }}
sed "s#saxpy.cu#$src#" "{ptx}" > "$out"
"""
    proj = tmp_path / "proj"
    proj.mkdir()
    nv = fake_tool(tmp_path / "bin", "nvcc", body.format(proj=proj, ptx=FIX / "saxpy.ptx"))
    src = proj / "saxpy.cu"
    src.write_text("// on disk\n")
    res = ptx.compile_ptx(str(src), b"// unsaved buffer\n", str(nv), "sm_86")
    assert isinstance(res, ptx.PtxResult), res
    m = ptx.parse_ptx(res.ptx)
    assert m.files[1] == str(src)  # not the temp copy
    assert not any("roofline-ptx-" in a for a in res.command if a.endswith(".cu"))


@posix_only
def test_compile_failure_keeps_the_first_error_line(tmp_path: Path) -> None:
    nv = fake_tool(
        tmp_path / "bin",
        "nvcc",
        'echo "warning: something harmless" >&2\n'
        'echo "$PWD/k.cu(3): error: identifier \\"q\\" is undefined" >&2\n'
        'echo "1 error detected" >&2\nexit 1\n',
    )
    src = tmp_path / "k.cu"
    src.write_text("x\n")
    res = ptx.compile_ptx(str(src), None, str(nv), "sm_86")
    assert isinstance(res, ptx.PtxFailure) and not res.ok
    assert res.reason.endswith('k.cu(3): error: identifier "q" is undefined')
    assert "\n" not in res.reason
    missing = ptx.compile_ptx(str(tmp_path / "gone.cu"), None, str(nv), "sm_86")
    assert isinstance(missing, ptx.PtxFailure) and "cannot read" in missing.reason
    no_nvcc = ptx.compile_ptx(str(src), None, str(tmp_path / "no-nvcc"), "sm_86")
    assert isinstance(no_nvcc, ptx.PtxFailure) and "cannot run" in no_nvcc.reason


VERSION = "case \"$1\" in --version) echo 'release 1.0, V1.0.0'; exit 0;; esac\n"


@posix_only
def test_timeout_kills_the_compiler(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    nv = fake_tool(tmp_path / "bin", "nvcc", VERSION + f'echo $$ > "{pidfile}"\nexec sleep 30\n')
    src = tmp_path / "k.cu"
    src.write_text("x\n")
    cache = ResultCache(str(tmp_path / "cache"), namespace=ptx.CACHE_NAMESPACE)
    t0 = time.monotonic()
    res = ptx.compile_ptx(str(src), None, str(nv), "sm_86", timeout=0.5, cache=cache)
    assert isinstance(res, ptx.PtxFailure) and "timed out" in res.reason
    assert time.monotonic() - t0 < 10
    assert not _alive(int(pidfile.read_text()))
    # a timeout is not cached: the next call runs the compiler again
    pidfile.unlink()
    ptx.compile_ptx(str(src), None, str(nv), "sm_86", timeout=0.3, cache=cache)
    assert pidfile.exists()
    cache.close()


def _alive(pid: int) -> bool:
    # a killed child may linger as a zombie until reaped; treat zombies as dead
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


@posix_only
async def test_async_compile_is_bounded_and_cancel_kills(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    body = VERSION + f'echo $$ > "{runs}/$$"\nexec sleep 30\n'
    nv = fake_tool(tmp_path / "bin", "nvcc", body)
    srcs = []
    for i in range(3):
        s = tmp_path / f"k{i}.cu"
        s.write_text(f"// {i}\n")
        srcs.append(s)
    sem = asyncio.Semaphore(2)
    tasks = [
        asyncio.create_task(
            ptx.compile_ptx_async(str(s), None, str(nv), "sm_86", semaphore=sem, timeout=60)
        )
        for s in srcs
    ]
    for _ in range(100):
        await asyncio.sleep(0.05)
        if len(list(runs.iterdir())) >= 2:
            break
    await asyncio.sleep(0.3)
    started = [int(p.name) for p in runs.iterdir()]
    assert len(started) == 2  # the pool is bounded
    for t in tasks:
        t.cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(r, asyncio.CancelledError) for r in results)
    await asyncio.sleep(0.2)
    assert not any(_alive(pid) for pid in started)
    assert len(list(runs.iterdir())) == 2  # the queued one never started


@posix_only
async def test_async_compile_result_and_cache(tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    nv = fake_tool(tmp_path / "bin", "nvcc", STANDIN.format(log=log, ptx=FIX / "int_hash.ptx"))
    src = tmp_path / "h.cu"
    src.write_text("// h\n")
    cache = ResultCache(str(tmp_path / "cache"), namespace=ptx.CACHE_NAMESPACE)
    res = await ptx.compile_ptx_async(str(src), None, str(nv), "sm_86", cache=cache)
    assert isinstance(res, ptx.PtxResult)
    check_hash(ptx.parse_ptx(res.ptx))
    again = await ptx.compile_ptx_async(str(src), None, str(nv), "sm_86", cache=cache)
    assert isinstance(again, ptx.PtxResult) and again.cached
    cache.close()


# --- real compiles (when the CUDA toolkit is installed) ----------------------------------------


@needs_nvcc
@pytest.mark.parametrize(
    ("fixture", "check"),
    [("saxpy.cu", check_saxpy), ("dot_fp64.cu", check_dot), ("int_hash.cu", check_hash)],
)
def test_real_nvcc_compiles_fixture(fixture: str, check: object, tmp_path: Path) -> None:
    assert NVCC is not None
    archs = ptx.supported_archs(NVCC)
    arch = "sm_86" if not archs or 86 in archs else f"sm_{archs[0]}"
    res = ptx.compile_ptx(str(FIX / fixture), None, NVCC, arch)
    assert isinstance(res, ptx.PtxResult), getattr(res, "reason", "")
    module = ptx.parse_ptx(res.ptx)
    assert module.files[1] == str(FIX / fixture)
    assert callable(check)
    check(module)


@needs_nvcc
def test_real_nvcc_buffer_with_local_include(tmp_path: Path) -> None:
    assert NVCC is not None
    (tmp_path / "scale.h").write_text("#define SCALE 2.0f\n")
    src = tmp_path / "k.cu"
    src.write_text("// saved version does not compile\n#error stale\n")
    buf = b'#include "scale.h"\n__global__ void k(float* y) {\n    y[threadIdx.x] *= SCALE;\n}\n'
    res = ptx.compile_ptx(str(src), buf, NVCC, "sm_86")
    assert isinstance(res, ptx.PtxResult), getattr(res, "reason", "")
    counts = ptx.counts_for_kernel(ptx.parse_ptx(res.ptx), "k")
    assert counts is not None
    l3 = counts[(str(src), 3)]
    assert l3.flops_fp32 == 1 and l3.ld_global_bytes == 4 and l3.st_global_bytes == 4


@needs_nvcc
def test_real_nvcc_failure_is_clean() -> None:
    assert NVCC is not None
    res = ptx.compile_ptx(str(FIX / "broken.cu"), None, NVCC, "sm_86")
    assert isinstance(res, ptx.PtxFailure)
    expected = r'broken\.cu\(5\): error: identifier "undeclared_offset" is undefined'
    assert re.search(expected, res.reason)


STANDARD_NVCC = [p for p in ("/usr/local/cuda/bin/nvcc",) if os.access(p, os.X_OK)]


@pytest.mark.skipif(not STANDARD_NVCC, reason="no toolkit in /usr/local/cuda")
def test_nvcc_hidden_from_path_is_found_in_the_standard_folders(tmp_path: Path) -> None:
    found = ptx.find_nvcc(None, {"PATH": str(tmp_path)})
    assert found is not None and found.startswith("/usr/local/cuda")


@pytest.mark.skipif(OMP_CLANG is None, reason="no clang with the OpenMP NVPTX runtime")
def test_real_clang_openmp_offload(tmp_path: Path) -> None:
    assert OMP_CLANG is not None
    res = ptx.compile_omp_ptx(str(FIX / "omp_saxpy.c"), None, OMP_CLANG, "sm_86", nvcc=NVCC)
    assert isinstance(res, ptx.PtxResult), getattr(res, "reason", "")
    m = ptx.parse_ptx(res.ptx)
    regions = [ptx.omp_region(k.name) for k in m.kernels]
    assert ("saxpy_omp", 6) in regions


# --- compile_file: the one call the CLI and the server make ------------------------------------

# answers --version, lists no archs, and writes the saxpy PTX for files named main*, the hash
# PTX for anything else
PICKY = """
case "$1" in --version) echo 'release 1.0, V1.0.0'; exit 0;; --list-gpu-arch) exit 0;; esac
out=""; prev=""; src=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
for a in "$@"; do case "$a" in *.cu) src="$a";; esac; done
case "$(basename "$src")" in main*) cp "{saxpy}" "$out";; *) cp "{hash}" "$out";; esac
"""


@posix_only
async def test_compile_file_through_includers_and_wanted_kernels(tmp_path: Path) -> None:
    nv = fake_tool(
        tmp_path / "bin",
        "nvcc",
        PICKY.format(saxpy=FIX / "saxpy.ptx", hash=FIX / "int_hash.ptx"),
    )
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "k.cuh").write_text("// kernels\n")
    (proj / "main.cu").write_text('#include "k.cuh"\n')
    (proj / "other.cu").write_text('#include "k.cuh"\n')
    from roofline_lsp.model.gpus import load_registry

    gpu = load_registry().get("rtx3080")
    res = await ptx.compile_file(str(proj / "k.cuh"), b"// unsaved", gpu=gpu, nvcc_setting=str(nv))
    assert res.ok and res.unit == str(proj / "main.cu") and res.arch == "sm_86"
    assert "compiled through main.cu" in res.note
    assert res.module is not None and ptx.find_kernels(res.module, "saxpy")
    # the kernel wanted is only in the other includer's PTX: that one is tried next
    res2 = await ptx.compile_file(
        str(proj / "k.cuh"), None, gpu=gpu, nvcc_setting=str(nv), want=("hash_keys",)
    )
    assert res2.ok and res2.unit == str(proj / "other.cu")
    # a wanted kernel nowhere: the first successful unit is returned
    res3 = await asyncio.to_thread(  # the blocking form, from a thread without a loop
        ptx.compile_file_sync,
        str(proj / "k.cuh"),
        None,
        gpu=gpu,
        nvcc_setting=str(nv),
        want=("nowhere",),
    )
    assert res3.ok and res3.unit == str(proj / "main.cu")


async def test_compile_file_without_a_compiler_gives_a_reason(tmp_path: Path) -> None:
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k() {}\n")
    res = await ptx.compile_file(str(src), None, nvcc_setting=str(tmp_path / "no-nvcc"))
    assert not res.ok and res.module is None and "not an executable nvcc" in res.reason
    lonely = tmp_path / "lonely.cuh"
    lonely.write_text("// nobody includes me\n")
    if NVCC is not None:
        res2 = await ptx.compile_file(str(lonely), None, nvcc_setting=NVCC)
        assert not res2.ok and "no file includes it" in res2.reason


@needs_nvcc
async def test_compile_file_real_nvcc_with_unsaved_buffer(tmp_path: Path) -> None:
    src = tmp_path / "saxpy.cu"
    src.write_text("#error the saved file is stale\n")
    from roofline_lsp.model.gpus import load_registry

    res = await ptx.compile_file(
        str(src), (FIX / "saxpy.cu").read_bytes(), gpu=load_registry().get("h100"),
        nvcc_setting=NVCC, want=("saxpy",),
    )  # fmt: skip
    assert res.ok, res.reason
    assert res.arch == "sm_90" and res.unit == str(src) and res.compiler == "nvcc"
    assert res.module is not None
    check_saxpy(res.module)
