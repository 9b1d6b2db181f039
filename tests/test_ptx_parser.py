"""Tests of roofline_lsp.compiler.ptx_parser: PTX parsing on checked-in PTX of our own fixtures
(no compiler needed) and on synthetic PTX."""

from __future__ import annotations

from ptx_helpers import check_dot, check_hash, check_saxpy, line, load

from roofline_lsp.compiler import ptx_parser
from roofline_lsp.compiler.demangle import omp_region
from roofline_lsp.compiler.ptx_kernels import counts_for_kernel
from roofline_lsp.compiler.ptx_parser import parse_ptx


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


# call_loop.cu: the inner loop `for (j...) acc += step(xi, (float)j);` on line 15 runs per
# pass, on its own line: cvt.rn.f32.s32 (a conversion), the call sequence (3 st/ld.param,
# the call), add.f32 acc (1 FLOP), add.s32 j + setp.ne (int 2) and the back branch; the
# call's work is step()'s, named in ``calls``. The outer loop (line 13, back edge there)
# runs add.s32 t + setp.lt per pass on line 13, the inner loop's lines left out.
def test_loop_control_line_mix_and_calls() -> None:
    m = load("call_loop.ptx")
    inner, outer = sorted(m.functions["_Z5pairsPKfPfi"].loops, key=lambda lp: -lp.depth)
    assert inner.control[1] == 15 and outer.control[1] == 13
    assert inner.calls == ("_Z4stepff",) and inner.inlined_mix.nonzero() == {}
    own = inner.control_mix
    assert (own.flops_fp32, own.int_ops, own.conversions, own.call_count) == (1, 2, 1, 1)
    assert outer.calls == () and outer.control_mix.int_ops == 2


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
    m = parse_ptx(SYNTHETIC)
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
    # branch, its slow path's expected 2 int), rem.s32 (17 int + MUFU + 2 conversions), 64-bit
    # setp (2), predicate and (0), the branch and two rets
    assert l25["special"] == 3
    assert l25["flops_fp32"] == 6 + 10
    assert l25["int_ops"] == 2 + 2 + 17 + 2
    assert l25["branches"] == 1 + 1 + 1
    # callees merged in once, keyed by their own lines
    counts = counts_for_kernel(m, "kernel")
    assert counts is not None
    assert counts[("/src/helpers.cuh", 31)].int_ops == 3 + 1  # 64-bit mul.lo, shl
    only_kernel = counts_for_kernel(m, "kernel", include_callees=False)
    assert only_kernel is not None and ("/src/helpers.cuh", 31) not in only_kernel
    site = counts_for_kernel(m, "ns::kernel", attribution="callsite")
    assert site is not None and site[("/src/kernel.cu", 22)].special == 1


def test_openmp_offload_ptx_regions_and_outlined_body() -> None:
    m = load("omp_saxpy.ptx")
    (entry,) = m.kernels
    assert omp_region(entry.name) == ("saxpy_omp", 6)
    assert omp_region("__omp_offloading_10302_abc__ZN2ns3runEv_l42") == ("ns::run", 42)
    assert omp_region("_Z5saxpyifPKfPf") is None
    assert "__omp_outlined__1" in entry.calls  # passed by address to __kmpc_parallel_51
    counts = counts_for_kernel(m, entry.name)
    assert counts is not None
    body = line(counts, "omp_saxpy.c", 8)  # y[i] = a * x[i] + y[i];
    assert body["flops_fp32"] == 2
    assert body["ld_generic_bytes"] == 8 and body["st_generic_bytes"] == 4


# nvcc prints inline-asm scopes (warp shuffles of cub, cvta of shared addresses) on one line:
# "{ .reg ...; shfl...; @p add...; mov...;}". Their statements count, and the closing brace
# must not be lost (everything after it, the .file table included, was swallowed before).
ASM_PTX = """\
.version 8.0
.target sm_86
.address_size 64
.visible .entry _Z1kPfi(.param .u64 x, .param .u32 n)
{
    .loc 1 4 5
    { .reg .b64 %tmp;
      cvta.shared.u64 %rd1, %tmp; }
    .loc 1 5 5
    {  .reg .f32 r0;  .reg .pred p;  shfl.sync.down.b32 r0|p, %f1, %r1, %r2, %r3;  @p add.f32 r0, r0, %f1;  mov.f32 %f2, r0;}
    .loc 1 6 5
    add.s32 %r4, %r4, 1;
    ret;
}
.file 1 "calls.cu"
"""  # noqa: E501


def test_one_line_inline_asm_scopes_are_parsed():
    module = parse_ptx(ASM_PTX)
    assert module.files == {1: "calls.cu"}
    f = module.functions["_Z1kPfi"]
    assert f.lines[("calls.cu", 5)].flops_fp32 == 1 and f.lines[("calls.cu", 5)].warp_ops == 1
    assert f.lines[("calls.cu", 6)].int_ops == 1


def test_runs_keep_program_order_for_code_inlined_without_a_call_line() -> None:
    # omp_helpers.c line 18 `y[i] = cube(x[i]) + 1.0f;`, cube() on line 4: clang 16 emits
    # the load on line 18, the two multiplies of cube() on line 4, then the add on line 18
    f = load("omp_helpers.ptx").functions["__omp_outlined__1"]
    keys = [r.key[1] for r in f.runs if r.mix.flops_fp32 or r.mix.ld_generic]
    assert keys[keys.index(4) - 1 : keys.index(4) + 2] == [18, 4, 18]
    (cube,) = [r for r in f.runs if r.key[1] == 4 and r.mix.flops_fp32]
    assert cube.mix.flops_fp32 == 2 and cube.first <= cube.last
    (loop,) = f.loops
    assert loop.span[0] <= cube.first and cube.last <= loop.span[1]


def test_a_function_without_instructions_has_no_runs() -> None:
    m = parse_ptx(".version 8.0\n.target sm_86\n.address_size 64\n.func empty()\n{\n}\n")
    assert m.functions["empty"].runs == ()
    assert m.functions["empty"].cfg_loops == ()


def _kernel_module(body: str, params: str = "") -> str:
    """The PTX module of one kernel ``k(params)`` for sm_86 whose body is ``body`` (whole
    lines; ``.loc 1`` is k.cu)."""
    head = f".version 8.0\n.target sm_86\n.address_size 64\n.visible .entry k({params})\n{{\n"
    return f'{head}{body}}}\n.file 1 "k.cu"\n'


# A loop whose blocks are not contiguous in the text (as clang lays them out): the body sits
# after the exit block, which the backward branch's span [head, bra] wrongly takes in.
# Blocks: 0 = mov (line 1), 1 = head: setp/bra (line 2), 2 = ret (line 5), 3 = body: add/bra
# (line 3). Back edge 3 -> 1 (1 dominates 3): the natural loop is blocks 1 and 3.
SCATTERED = _kernel_module(
    """\
\t.loc 1 1 0
\tmov.u32 %r1, 0;
$L_head:
\t.loc 1 2 0
\tsetp.lt.s32 %p1, %r1, 10;
\t@%p1 bra $L_body;
\t.loc 1 5 0
\tret;
$L_body:
\t.loc 1 3 0
\tadd.s32 %r1, %r1, 1;
\tbra $L_head;
"""
)


def test_a_natural_loop_holds_its_blocks_wherever_they_lie() -> None:
    f = parse_ptx(SCATTERED).functions["k"]
    (loop,) = f.cfg_loops
    assert loop.blocks == ((1, 2), (4, 5))
    assert {ln for _, ln in loop.lines} == {2, 3}
    assert not loop.holds(3)  # the ret
    (span_loop,) = f.loops
    assert span_loop.span == (1, 5)  # the span-based loop takes the ret in


# hoisted.cu: the sqrtf call, add and div of line 10 sit before the loop's block (hoisted);
# line 11's fma is in it. Runs break at block starts, so no run straddles the loop's edge.
def test_hoisted_code_lies_outside_the_natural_loop() -> None:
    f = load("hoisted.ptx").functions["_Z7hoistedPKfPfi"]
    (loop,) = f.cfg_loops
    inside = {r.key[1] for r in f.runs if loop.holds(r.first)}
    outside = {r.key[1] for r in f.runs if not loop.holds(r.first)}
    assert inside == {9, 11}
    assert 10 in outside and 10 not in inside
    assert all(loop.holds(r.first) == loop.holds(r.last) for r in f.runs)


# unrolled_rows.cu in the counting build (``-Xcicc -O1`` keeps even ``#pragma unroll`` loops).
# What a complete unroll folds, per line of each loop's body, as (control, address arithmetic):
# - the load loop's line 14: `shl i, 4` and its sign extension (2) are the counter's (each
#   copy's is a constant); the two address chains (`cvt`'s sum with the row's offset, `shl 2`,
#   the add to `src`: 3; the tile column `+ i*16`, then `shl 2` and the add to the row's base,
#   one LEA: 2) end in a load's and a store's address: each copy's is `[base + imm]`;
# - the tap loop's line 20: both pointer bumps, the counter and its exit test, all control (4);
# - the store `dst[i * 16]` (line 22): the sign extension of `i << 4` (1), then 3 of address;
# - the loop of no pragma at line 25: its pointer bump, counter and test (3), nothing else.
def test_a_complete_unroll_folds_the_counter_and_the_address_arithmetic() -> None:
    f = load("unrolled_rows.ptx").functions["_Z4rowsPfPKfi"]
    folded = [{ln: n for (_, ln), n in loop.folded.items()} for loop in f.cfg_loops]
    assert folded == [
        {13: (2, 0), 14: (2, 5)},
        # line 0: `i << 4`, on no line; line 20's `i << 6` feeds an add (one LEA with it)
        {0: (1, 0), 17: (2, 0), 22: (1, 3)},
        {20: (4, 0)},
        {25: (3, 0)},
    ]
    assert line(f.lines, "unrolled_rows.cu", 14)["int_ops"] == 7  # all of it folds


# A counter the -O1 build carries through another register, as it does when the body reads the
# next value (`for (iter = 3; iter > 0; iter--) x[iter - 1]`): `t = iter - 1` on line 2, then
# `iter = t` before the back branch.
CARRIED = _kernel_module(
    """\
\t.loc 1 1 0
\tmov.u32 %r1, 3;
$L_loop:
\t.loc 1 2 0
\tadd.s32 %r2, %r1, -1;
\tmul.wide.s32 %rd2, %r2, 4;
\tadd.s64 %rd3, %rd1, %rd2;
\tld.global.f32 %f1, [%rd3];
\t.loc 1 3 0
\tsetp.gt.s32 %p1, %r1, 1;
\tmov.u32 %r1, %r2;
\t@%p1 bra $L_loop;
\tret;
""",
)


def test_a_counter_carried_through_a_move_is_an_induction_variable() -> None:
    # line 2: `iter - 1` is the counter's (control, 1; its mul.wide is the add.s64's IMAD.WIDE)
    # and the element's address `x + 4 * (iter - 1)` address arithmetic (1); line 3: the exit
    # test on the counter (control, 1)
    (loop,) = parse_ptx(CARRIED).functions["k"].cfg_loops
    assert {ln: n for (_, ln), n in loop.folded.items()} == {2: (1, 1), 3: (1, 0)}


# A per-thread array filled in a loop of constant count (`float t[4]; for (i...) t[i] = x;`,
# line 2), and a global store in the same loop (line 3).
LOCAL_FILL = _kernel_module(
    """\
\t.loc 1 1 0
\tmov.u32 %r1, 0;
$L_loop:
\t.loc 1 2 0
\tmul.wide.s32 %rd2, %r1, 4;
\tadd.s64 %rd3, %SPL, %rd2;
\tst.local.f32 [%rd3], %f1;
\t.loc 1 3 0
\tadd.s64 %rd4, %rd1, %rd2;
\tst.global.f32 [%rd4], %f1;
\t.loc 1 1 0
\tadd.s32 %r1, %r1, 1;
\tsetp.ne.s32 %p1, %r1, 4;
\t@%p1 bra $L_loop;
\tret;
""",
)


def test_a_complete_unroll_folds_the_addresses_of_a_per_thread_array() -> None:
    # line 2: each copy's element is at a constant index: the array becomes registers and its
    # address goes with it (control, 1); line 3: the global store's address is
    # `[base + imm]` in each copy (address arithmetic, 1); line 1: the counter and its test
    (loop,) = parse_ptx(LOCAL_FILL).functions["k"].cfg_loops
    assert {ln: n for (_, ln), n in loop.folded.items()} == {1: (2, 0), 2: (1, 0), 3: (0, 1)}


# tree_sum.cu in the counting build: the stride s doubles each trip (`shl s, 1`), a geometric
# induction variable, a constant in each copy of the complete unroll as a counter is.
# - line 10: the doubling and the exit test `s < 17` fold (2);
# - line 11: `ty % s` is a division by a constant in each copy: of the 17 instructions of a
#   signed remainder by a run-time value 4 stay (shift, LEA.HI, mask, add: ``t % 4`` in SASS),
#   13 fold; the test of its result stays;
# - line 0: `s / 2` as `s >> 1` and its mask (2), constants in each copy;
# - line 12: the row `(s / 2) * 64 + &rows[ty][tx]`, an address only: address arithmetic (1).
def test_a_complete_unroll_makes_a_geometric_counter_and_a_division_by_it_constants() -> None:
    f = load("tree_sum.ptx").functions["_Z8tree_sumPfPKf"]
    (loop,) = f.cfg_loops
    assert {ln: n for (_, ln), n in loop.folded.items()} == {
        0: (2, 0),
        10: (2, 0),
        11: (13, 0),
        12: (0, 1),
    }
    assert line(f.lines, "tree_sum.cu", 11)["int_ops"] == 17 + 1


# loop_division.cu: in the grid-stride loop, `i % m` (line 7) divides by the kernel argument
# m, which no instruction of the loop writes: ptxas computes its reciprocal where m is loaded
# (line 4, once per thread: the 6 of the 17 integer instructions of a signed remainder that
# are not the per-trip estimate and corrections, sm_86 SASS) and each trip runs 11; `i / (m +
# i)` (line 8) divides by a value computed on each trip: the whole 18 of a signed division.
# Each line also computes its element's address (mul.wide + add: 1) and line 8 its `m + i` (1).
def test_a_division_by_a_value_the_loop_does_not_change_leaves_its_reciprocal_outside() -> None:
    f = load("loop_division.ptx").functions["_Z13loop_divisionPiS_ii"]
    assert line(f.lines, "loop_division.cu", 4)["int_ops"] == 17 - 11  # only the loads else
    assert line(f.lines, "loop_division.cu", 7)["int_ops"] == 11 + 1
    assert line(f.lines, "loop_division.cu", 8)["int_ops"] == 18 + 1 + 1


def test_a_header_with_many_back_edges_is_one_loop_of_all_their_blocks() -> None:
    # $H, then 50 blocks each ending `@%p bra $H` (a back edge: $H dominates them all), then
    # the ret block: one natural loop of the 51 blocks before the ret
    text = _kernel_module(
        "$H:\n\t.loc 1 1 0\n\tadd.s32 %r1, %r1, 1;\n"
        + "".join(
            f"\t.loc 1 {i + 2} 0\n\tsetp.lt.s32 %p1, %r1, {i};\n\t@%p1 bra $H;\n" for i in range(50)
        )
        + "\t.loc 1 99 0\n\tret;\n"
    )
    f = parse_ptx(text).functions["k"]
    (loop,) = f.cfg_loops
    assert len(loop.blocks) == 50 and loop.blocks[0][0] == 0
    assert {ln for _, ln in loop.lines} == set(range(1, 52))
    assert not loop.holds(f.runs[-1].first)  # the ret


# Signs as ptxas compiles them for sm_86 (nvdisasm): a negation or absolute value stored as
# it is becomes DADD R, -RZ, -R (one FLOP); one an FMA takes is its operand modifier (none).
SIGNS = _kernel_module(
    """\
\t.loc 1 1 0
\tld.global.f64 %fd1, [%rd1];
\t.loc 1 2 0
\tneg.f64 %fd2, %fd1;
\tst.global.f64 [%rd2], %fd2;
\t.loc 1 3 0
\tabs.f32 %f2, %f1;
\tst.global.f32 [%rd3], %f2;
\t.loc 1 4 0
\tneg.f32 %f3, %f1;
\tfma.rn.f32 %f4, %f3, %f1, %f1;
\tst.global.f32 [%rd4], %f4;
\t.loc 1 5 0
\tmul.f64 %fd3, %fd1, %fd1;
\tneg.f64 %fd4, %fd3;
\tst.global.f64 [%rd5], %fd4;
\tret;
""",
    ".param .u64 p",
)


def test_a_sign_stored_as_it_is_is_one_flop() -> None:
    # line 2: conjugate's b.im = -a.im, a DADD; line 3: fabsf stored, an FADD; line 4: the
    # FMA's operand modifier, the FMA's 2 FLOP only; line 5: -(x * x), clang's (-x) * x: the
    # multiply's 1 FLOP only
    lines = parse_ptx(SIGNS).functions["k"].lines
    assert lines[("k.cu", 2)].flops_fp64 == 1
    assert lines[("k.cu", 3)].flops_fp32 == 1
    assert lines[("k.cu", 4)].flops_fp32 == 2
    assert lines[("k.cu", 5)].flops_fp64 == 1


# Far offsets as ptxas compiles them for sm_86 (nvdisasm): a load or store holds an offset of
# [-2^23, 2^23) bytes; for one beyond it ptxas adds a 16 MiB multiple to the register
# (IADD3 + IADD3.X) and later accesses within 8 MiB of that base share it. Dev's zmddft stores
# 30 doubles 16 to 240 MiB past one register: 15 windows, 30 of the 50 integer instructions
# a thread runs in ncu (the PTX count without them: 24).
FAR = _kernel_module(
    """\
\t.loc 1 1 0
\tst.global.f64 [%rd1+8388600], %fd1;
\t.loc 1 2 0
\tst.global.f64 [%rd1+134217728], %fd1;
\t.loc 1 3 0
\tst.global.f64 [%rd1+134217736], %fd1;
\t.loc 1 4 0
\tld.global.f64 %fd2, [%rd1+-16777216];
\t.loc 1 5 0
\tadd.s64 %rd1, %rd1, 8;
\t.loc 1 6 0
\tst.global.f64 [%rd1+134217728], %fd2;
\tret;
""",
    ".param .u64 p",
)


def test_an_offset_beyond_sass_reach_costs_a_64_bit_add_per_window() -> None:
    # line 1: 8388600 B fits the 24-bit immediate, nothing; line 2: 128 MiB opens the window
    # of base + 2^27 (2 ints); line 3, 8 bytes further, shares it; line 4: -16 MiB is another
    # window (2); line 6: the register was written on line 5, its windows are gone (2)
    lines = parse_ptx(FAR).functions["k"].lines
    ints = {ln: lines[("k.cu", ln)].int_ops for ln in range(1, 7)}
    assert ints == {1: 0, 2: 2, 3: 0, 4: 2, 5: 1, 6: 2}


# Three-input merges as ptxas compiles them for sm_86 (nvdisasm of `a + b + c + d` and
# `(a ^ b ^ c) & d | s`: IADD3 R8, R6, R5, R0 then IADD3 R8, R7, R8, RZ; LOP3 0x96 then
# LOP3 0xf8; `(y << 7) + x` is LEA R9, R9, R26, 0x7).
MERGES = _kernel_module(
    """\
\t.loc 1 1 0
\tadd.s32 %r5, %r1, %r2;
\t.loc 1 2 0
\tadd.s32 %r6, %r5, %r3;
\t.loc 1 3 0
\tadd.s32 %r7, %r6, %r4;
\t.loc 1 4 0
\txor.b32 %r8, %r1, %r2;
\t.loc 1 5 0
\txor.b32 %r9, %r8, %r3;
\t.loc 1 6 0
\tand.b32 %r10, %r9, %r4;
\t.loc 1 7 0
\tshl.b32 %r11, %r1, 7;
\t.loc 1 8 0
\tadd.s32 %r12, %r11, %r2;
\t.loc 1 9 0
\tadd.s32 %r13, %r1, %r3;
\t.loc 1 10 0
\tadd.s32 %r14, %r13, %r4;
\tadd.s32 %r15, %r13, %r2;
\t.loc 1 11 0
\tsub.s32 %r16, %r2, %r3;
\tbra $L_next;
$L_next:
\t.loc 1 12 0
\tadd.s32 %r17, %r16, %r4;
\tret;
""",
)


def test_a_32_bit_add_or_logic_feeding_its_like_alone_merges_into_one_instruction() -> None:
    # line 1 merges into line 2 (IADD3 of three inputs), which is then full: line 3 stays;
    # line 4 into 5 (LOP3), line 5's three inputs leave line 6 alone; line 7's shift by a
    # constant into line 8's add (LEA); line 9's sum has two uses (lines 10), so both stay;
    # line 11's difference feeds an add in another block: no merge
    lines = parse_ptx(MERGES).functions["k"].lines
    ints = {ln: lines[("k.cu", ln)].int_ops for ln in range(1, 13)}
    assert ints == {1: 0, 2: 1, 3: 1, 4: 0, 5: 1, 6: 1, 7: 0, 8: 1, 9: 1, 10: 2, 11: 1, 12: 1}


def _chain_of_exits(n: int) -> str:
    """A kernel of ``n`` early exits in a row (``if (i >= k) return;``, line 2 + k), each
    followed by an add on its line, then the ``ret`` every path reaches (line n + 2)."""
    body = []
    for k in range(n):
        body += [
            f"    .loc 1 {k + 2} 3",
            f"    setp.ge.s32 %p{k}, %r1, {k};",
            f"    @%p{k} bra $L_exit;",
            f"    add.f32 %f{k + 1}, %f{k}, %f{k};",
        ]
    tail = ["$L_exit:", f"    .loc 1 {n + 2} 1", "    ret;"]
    return _kernel_module("".join(f"{ln}\n" for ln in [*body, *tail]))


def test_code_after_early_exits_is_skipped_by_each_of_them(monkeypatch) -> None:
    # line k + 2 holds exit k's test (on the arms of exits 0 .. k - 1: blocks with one
    # predecessor, which ends in the branch) and the add after it (on exit k's arm too):
    # skipped by lines 2 .. k + 1. Line 2's test is in the entry block, on no arm, and the
    # ret (line 6) is where the paths meet. Over the budget of blocks recorded, none is told
    f = parse_ptx(_chain_of_exits(4)).functions["k"]
    skipped = {k[1]: sorted(c[1] for c in v) for k, v in f.skipped_by.items()}
    assert skipped == {3: [2], 4: [2, 3], 5: [2, 3, 4]}
    monkeypatch.setattr(ptx_parser, "_ARM_BUDGET", 5)
    assert parse_ptx(_chain_of_exits(4)).functions["k"].skipped_by == {}
