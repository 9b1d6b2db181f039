"""Tests of roofline_lsp.compiler.instruction_mix: the counts of one instruction."""

from __future__ import annotations

from roofline_lsp.compiler.instruction_mix import EMPTY, asm_mix, opcode_mix


def test_classify_widths_and_spaces() -> None:
    c = opcode_mix
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
    assert c("div.u32").int_ops == 14
    # 64-bit: the high words tested (2), then the unsigned 32-bit sequence (14 and 11)
    assert c("div.s64").int_ops == 16 and c("rem.u64").int_ops == 13
    assert c("cvt.s64.s32").int_ops == 1 and c("cvt.u64.u32").int_ops == 0
    assert c("cvt.rn.f32.s32").conversions == 1 and c("cvt.f64.f32").conversions == 1
    # what advice confirms its rules on: long divisions, floats promoted to double
    assert c("div.u32").divisions == c("rem.s64").divisions == c("div.rn.f32").divisions == 1
    assert c("div.rn.f64").divisions == 1
    assert c("div.approx.f32").divisions == c("div.full.f32").divisions == 0
    assert c("mul.hi.u32").divisions == 0 and c("shr.u32").divisions == 0
    assert c("cvt.f64.f32").to_fp64 == 1 and c("cvt.rn.f32.f64").to_fp64 == 0
    assert c("mov.u32").int_ops == 0 and c("and.pred").int_ops == 0
    assert c("sin.approx.f32").special == 1
    # sm_86 SASS of the non-.ftz approximations: FSETP, @!P0 FMUL (scale a denormal or huge
    # input), MUFU, @!P0 FMUL. The scaling FMULs run only for such inputs, and Nsight counts
    # FLOPs of threads whose predicate is on: none for ordinary data (nn's sqrtf: 5 per thread
    # measured = 2 FADD + 1 FMUL + 1 FFMA)
    for op in ("rsqrt.approx.f32", "sqrt.approx.f32", "ex2.approx.f32", "lg2.approx.f32"):
        assert c(op).flops_fp32 == 0 and c(op).special == 1, op
    assert c("rcp.rn.f64").flops_fp64 == 10 and c("sqrt.rn.f64").flops_fp64 == 13
    # the fp64 division's FFMA range check; the reciprocal has none
    assert c("div.rn.f64").flops_fp32 == 2 and c("rcp.rn.f64").flops_fp32 == 0
    # the IEEE fast paths test the input's exponent in integer instructions (sm_86 SASS):
    # sqrtf IADD3 + ISETP; 1.0f / x IADD3 + LOP3 + ISETP before its MUFU.RCP + 2 FFMA. A loop
    # of sqrtf and 1.0f / x once a trip (dev's haccmk), unrolled 4 times in SASS: 27 integer
    # instructions per 4 trips (4 IMAD.WIDE, 8 + 12 for the two tests, 3 counter and exit),
    # 6.75 a trip; ncu measured 7.06, so ISETP counts as integer. Without the reciprocal's 3
    # the estimate was 1.5 a trip (the labels' clang build approximates sqrtf), with them 4.5
    assert c("sqrt.rn.f32").int_ops == 2 and c("rcp.rn.f32").int_ops == 3
    assert c("sqrt.rn.f64").int_ops == 3 and c("rcp.rn.f64").int_ops == 1
    # a 32-bit division by a run-time value in sm_86 SASS, beside the loads and store a
    # kernel `b[i] = a[i] / c[i]` needs anyway: signed div 18 (3 IABS, the IMAD.HI estimate,
    # two corrections, the sign fix), unsigned 14; remainders 17 and 11
    assert c("div.s32").int_ops == 18 and c("div.u32").int_ops == 14
    assert c("rem.s32").int_ops == 17 and c("rem.u32").int_ops == 11
    assert c("rcp.approx.f32").int_ops == 0
    # the slow path's expected share (SLOW_DIVISION_INTS_*), and the fp64 range check
    assert c("div.rn.f32").int_ops == 2 and c("div.rn.f64").int_ops == 1 + 5
    assert c("shfl.sync.bfly.b32").warp_ops == 1
    assert c("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32").flops_tensor == 128
    mix = c("add.s32") + c("fma.rn.f32")
    assert mix.int_ops == 1 and mix.flops_fp32 == 2 and mix.instructions == 2
    assert mix.scaled(3).flops_fp32 == 6


def test_a_float_atomic_add_is_a_flop_only_where_the_sm_runs_it() -> None:
    c = opcode_mix
    # global memory: the add runs in L2 (RED/ATOM), ncu counts no FP instruction
    assert c("atom.global.add.f32").flops_fp32 == 0
    assert c("red.global.add.f64").flops_fp64 == 0
    # shared memory, or a generic address (clang's OpenMP team-local variables): a
    # compare-and-swap loop around one FADD/DADD in the SM
    assert c("atom.shared.add.f32").nonzero() == {
        "instructions": 1,
        "fp32": 1,
        "flops_fp32": 1,
        "atom_shared": 1,
        "atom_shared_bytes": 4,
    }
    assert c("atom.add.f32").flops_fp32 == 1 and c("red.shared.add.f64").flops_fp64 == 1
    # integer and other float atomics: no FLOP
    assert c("atom.shared.add.u32").flops_fp32 == 0 and c("atom.shared.add.u32").fp32 == 0
    assert c("atom.shared.exch.b32").flops_fp32 == 0


def test_vectors_of_bytes_are_unpacked_and_packed_in_integer_instructions() -> None:
    c = opcode_mix
    # sm_86 SASS of `uchar4 v = in[i]; out[i] = make_uchar4(v.w + 1, ...)`: one 32-bit LDG
    # and 4 PRMT to take the bytes apart, 3 PRMT to put 4 bytes together for one 32-bit STG;
    # a uchar2: 2 PRMT after the LDG.U16, 1 before the STG.U16. Wider elements need none.
    assert c("ld.global.nc.v4.u8").int_ops == 4 and c("ld.global.nc.v4.u8").ld_global_bytes == 4
    assert c("ld.shared.v2.s8").int_ops == 2
    assert c("st.global.v4.u8").int_ops == 3 and c("st.global.v2.u8").int_ops == 1
    assert c("ld.global.u8").int_ops == 0 and c("st.global.u8").int_ops == 0
    assert c("ld.global.v4.u16").int_ops == 0 and c("st.global.v4.f32").int_ops == 0


def test_an_inline_asm_template_counts_its_instructions() -> None:
    # an FMA (2 FLOP), a guarded integer add under a predicate set by an integer compare, a
    # 64-bit multiply (3); the braces, the label and the .reg directive count nothing
    mix = asm_mix(
        "{ .reg .pred p;\n\tfma.rn.f32 %0, %1, %2, %0;\n\tsetp.lt.s32 p, %3, 0;\n"
        "L1: @p add.s32 %4, %4, 1;\n\tmul.lo.u64 %5, %5, %6; }"
    )
    assert (mix.flops_fp32, mix.int_ops) == (2, 1 + 1 + 3)
    assert asm_mix("") == EMPTY
