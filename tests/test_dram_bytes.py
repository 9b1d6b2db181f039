"""DRAM bytes the estimator must not lose (issue #13, causes 3-6 and 9), on hand-written
kernels in tests/fixtures/estimator/. Expected numbers are derived by hand in comments from
the model in ``memory.py``: each buffer's distinct footprint once, 4096 bytes per launch,
capacity misses (2% of re-reads) once a re-read buffer outgrows L2 (RTX 3080: 5 MiB)."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_helpers import buffer_of

from roofline_lsp.detect.kernels import detect
from roofline_lsp.estimate.explanation import verdict_terms
from roofline_lsp.estimate.kernel_estimate import KernelEstimate
from roofline_lsp.estimate.roofline import Inputs, analyze, estimate
from roofline_lsp.model.gpus import GpuProfile, load_registry
from roofline_lsp.model.terms import MemoryTerm
from roofline_lsp.present.explanations import term_text

FIXTURES = Path(__file__).parent / "fixtures" / "estimator"
FLOOR = 4096
MIB = 2**20


def _run(gpu: GpuProfile, name: str, kernel: str, inputs: Inputs | None = None) -> KernelEstimate:
    path = FIXTURES / name
    det = detect(path.read_bytes(), str(path))
    k = next(k for k in det.kernels if k.name == kernel)
    return analyze(k, det, gpu, inputs)


def _buffer(a: KernelEstimate, name: str) -> tuple[float, float, float]:
    b = buffer_of(a, name)
    return b.footprint, b.loaded, b.stored


def test_cache_hinted_loads_and_stores_move_their_bytes(gpu: GpuProfile) -> None:
    # 2^24 threads, each `__ldcs(&in[i])` (4 B) and `__stcs(&out[i], ...)` (4 B):
    # 64 MiB read + 64 MiB written + the launch floor; 1 FMUL per thread
    a = _run(gpu, "cache_hints.cu", "scale_streaming")
    assert a.threads == 2**24
    assert a.counts.flops["fp32"] == pytest.approx(1.0)
    assert a.memory.bytes_loaded == pytest.approx(64 * MIB + FLOOR)
    assert a.memory.bytes_stored == pytest.approx(64 * MIB)


def test_vector_loads_and_stores_move_sixteen_bytes(gpu: GpuProfile) -> None:
    # 2^22 threads each load one float4 through reinterpret_cast (16 B) and store one with
    # __stwt: 64 MiB each way
    a = _run(gpu, "cache_hints.cu", "copy_float4")
    assert a.threads == 2**22
    assert _buffer(a, "in") == pytest.approx((64 * MIB, 64 * MIB, 0.0))
    assert _buffer(a, "out") == pytest.approx((64 * MIB, 0.0, 64 * MIB))


def test_a_vector_facade_template_moves_its_io_type(gpu: GpuProfile) -> None:
    # copy_vectors<unsigned char, 16>: VecType::Ratio is 16, so 2^26 / 16 = 2^22 threads,
    # all inside `idx < len`; each loads and stores one io_t, which the specialization
    # IOType<uint8_t, 16> makes a uint4 (16 B): 64 MiB each way. `*vectorized_data()` is the
    # thread's own object (a register copy), no memory traffic
    a = _run(gpu, "vector_io.cu", "copy_vectors")
    assert a.threads == 2**22
    assert {(x.buffer, x.kind, x.elem) for x in a.counts.accesses} == {
        ("in", "load", 16),
        ("out", "store", 16),
    }
    assert _buffer(a, "in") == pytest.approx((64 * MIB, 64 * MIB, 0.0))
    assert _buffer(a, "out") == pytest.approx((64 * MIB, 0.0, 64 * MIB))


def test_a_device_memcpy_moves_its_element(gpu: GpuProfile) -> None:
    # 2^20 threads each memcpy one 48-byte Body from in[i] into a local, then the local into
    # out[i]: 48 MiB read + 48 MiB written (+ the launch floor on the loads)
    a = _run(gpu, "cache_hints.cu", "copy_struct")
    assert a.threads == 2**20
    assert a.memory.bytes_loaded == pytest.approx(48 * MIB + FLOOR)
    assert a.memory.bytes_stored == pytest.approx(48 * MIB)


@pytest.mark.parametrize("kernel", ["stage_async", "stage_pipeline", "stage_group"])
def test_asynchronous_copies_to_shared_memory_read_their_chunks(
    gpu: GpuProfile, kernel: str
) -> None:
    # 2^22 threads each copy 16 B of `in` (&in[4 * i], 4 floats) into shared memory with
    # cp.async (__pipeline_memcpy_async, cuda::memcpy_async; stage_group: the block's
    # cooperative_groups::memcpy_async of 1024 floats, 4 a thread) and store one float of
    # `out`: 64 MiB read (before: none, the copy was an unknown call) and 16 MiB written
    a = _run(gpu, "cache_hints.cu", kernel)
    assert a.threads == 2**22
    assert buffer_of(a, "in").loaded == pytest.approx(64 * MIB)
    assert _buffer(a, "out") == pytest.approx((16 * MIB, 0.0, 16 * MIB))


def test_inline_ptx_loads_and_stores_move_their_bytes(gpu: GpuProfile) -> None:
    # asm_copy: 2^24 threads, each an `ld.global.nc.f32` of in + i and an `st.global.f32` of
    # out + i (4 B each): 64 MiB each way (before: neither was counted). asm_vector: 2^22
    # threads, each an `ld.global.v4.f32` at in + 4 * i (16 B, lanes 16 B apart: 64 MiB)
    # and a shared load (no DRAM bytes), storing one float of out: 16 MiB
    a = _run(gpu, "cache_hints.cu", "asm_copy")
    assert _buffer(a, "in") == pytest.approx((64 * MIB, 64 * MIB, 0.0))
    assert _buffer(a, "out") == pytest.approx((64 * MIB, 0.0, 64 * MIB))
    v = _run(gpu, "cache_hints.cu", "asm_vector")
    assert buffer_of(v, "in").loaded == pytest.approx(64 * MIB)
    assert _buffer(v, "out") == pytest.approx((16 * MIB, 0.0, 16 * MIB))


@pytest.mark.parametrize(
    ("kernel", "fp32", "callee"),
    [
        ("map_deduced", 1.0, "Square::operator()"),  # op(in[i]), Op deduced from Square()
        ("map_variable", 1.0, "Halve::operator()"),  # Op deduced from the host's `Halve h`
        ("map_named", 1.0, "Square::operator()"),  # Op()(in[i]) with Op = Square (first launch)
        ("map_function", 2.0, "cube"),  # F(in[i]) with F = cube: x * x * x
        ("map_lambda", 2.0, "lambda f (line 41)"),  # in[j] * in[j] + 1.0f: one FMA
        # f(i) with the launch's `[=] __device__(int i) { b[i] = a[i] * a[i] + 1.0f; }`: the
        # FMA, and main's a and b as what it captures (it was not followed: no bytes at all)
        ("map_passed", 2.0, "lambda f (the launch's)"),
        # f(i) with the lambda scale_shift gives the launching helper for_each(n, f): the
        # helper's `f` (before: not followed, the kernel compute-bound with 0 B)
        ("map_helped", 2.0, "lambda f (the launch's)"),
    ],
)
def test_callables_are_followed(gpu: GpuProfile, kernel: str, fp32: float, callee: str) -> None:
    # every thread reads in[i] (4 B) and writes out[i] (4 B) over 2^24 threads, and the
    # callee's arithmetic is counted
    a = _run(gpu, "callables.cu", kernel)
    assert callee in a.counts.followed
    assert a.counts.flops["fp32"] == pytest.approx(fp32)
    assert a.memory.bytes_loaded == pytest.approx(64 * MIB + FLOOR)
    assert a.memory.bytes_stored == pytest.approx(64 * MIB)


def test_offsets_into_one_buffer_are_separate_footprints(gpu: GpuProfile) -> None:
    # planes: in[t], in[t + n], in[t + 2n] over t in [0, 2^24): three disjoint ranges,
    # 3 x 64 MiB; out[t], out[t + n] bound to `float&` outputs: stored, never loaded
    a = _run(gpu, "disjoint_ranges.cu", "planes")
    assert _buffer(a, "in") == pytest.approx((192 * MIB, 192 * MIB, 0.0))
    assert _buffer(a, "out") == pytest.approx((128 * MIB, 0.0, 128 * MIB))


def test_overlapping_offsets_are_one_footprint(gpu: GpuProfile) -> None:
    # stencil: u[t - 1], u[t], u[t + 1] cover [-1, 2^24]: 2^24 + 2 elements of 4 B
    a = _run(gpu, "disjoint_ranges.cu", "stencil")
    assert _buffer(a, "u")[0] == pytest.approx((2**24 + 2) * 4)


def test_unrolled_tiles_from_a_loaded_base_are_separate_footprints(gpu: GpuProfile) -> None:
    # 4096 blocks of 128 threads copy 4 tiles each at k + tid + {0, 128, 256, 384}, k read
    # from memory: each tile is an element per thread, 2^19 x 4 B = 2 MiB, and the four add
    # up to 8 MiB read and 8 MiB written (before: one tile's 2 MiB, the offsets taken for one
    # array indexed four ways). The smoothing's src[k + tid - 1 .. + 1] are one tile: 2 MiB
    a = _run(gpu, "disjoint_ranges.cu", "segment_copy")
    assert _buffer(a, "src")[0] == pytest.approx(8 * MIB)
    assert _buffer(a, "dst")[0] == pytest.approx(8 * MIB)
    a = _run(gpu, "disjoint_ranges.cu", "segment_smooth")
    assert _buffer(a, "src")[0] == pytest.approx(2 * MIB)


def test_copies_of_a_narrow_run_from_a_loaded_base_are_separate_footprints(
    gpu: GpuProfile,
) -> None:
    # 4096 x 128 = 2^19 threads, eight per segment: lane = threadIdx.x & 7 covers 8
    # consecutive elements from k (read from memory), so k + lane + {0, 8, 16, 24} are four
    # disjoint runs: 4 x 2^19 elements x 4 B = 8 MiB of key, each read once (before: the
    # offsets, under a warp apart, were taken for neighbours of one run: 2 MiB)
    a = _run(gpu, "disjoint_ranges.cu", "segment_lanes")
    assert a.threads == 2**19
    assert _buffer(a, "key")[0] == pytest.approx(8 * MIB)


def test_an_unexplained_index_gets_no_reuse(gpu: GpuProfile) -> None:
    # 8 x 2048 blocks of 256 = 2^22 threads, each summing a window placed by a constructor
    # the walk does not follow (window size unknown: 16 iterations by default). Nothing
    # shows the threads share elements, so `in` counts every reference up to its 2^26
    # allocated elements: min(16 x 2^22, 2^26) x 4 B = 256 MiB (not the 16 elements = 64 B
    # of an index that seemed to depend on the loop alone)
    a = _run(gpu, "opaque_window.cu", "box")
    assert a.threads == 2**22
    assert _buffer(a, "in")[0] == pytest.approx(2**26 * 4)


@pytest.mark.parametrize("profile", load_registry().all(), ids=lambda g: g.name)
def test_tiled_sgemm_4096_is_compute_bound_on_every_gpu(profile: GpuProfile) -> None:
    # 4096^2 threads, 256 tiles of 16 x (FMA = 2): 2 x 4096^3 = 137.4 GFLOP. The tiles of A
    # and B are re-read by 256 blocks each, mostly from L2: DRAM = the 3 x 64 MiB footprint
    # plus at most 2% of the 2 x 16 GiB of re-reads = at most 0.89 GB, so the fp32
    # intensity is at least 137.4 / 0.89 = 154 FLOP/B, above every bundled fp32 ridge
    # (the highest, L40S, is 106).
    path = FIXTURES / "sgemm_4096.cu"
    det = detect(path.read_bytes(), str(path))
    a = analyze(det.kernels[0], det, profile)
    assert a.totals["fp32"] == pytest.approx(2 * 4096**3)
    assert a.memory.footprint == pytest.approx(3 * 64 * MIB)
    # (the kernel's own traffic: a card driving a display also reads frames while it runs)
    assert a.memory.kernel_bytes <= 3 * 64 * MIB + 0.02 * 2 * 16 * 2**30 + FLOOR
    v = estimate(det.kernels[0], det, profile)
    assert v.bound == "compute"
    assert v.ai["fp32"] is not None and v.ai["fp32"] > profile.ridges()["fp32"]


def test_a_kernel_file_included_by_another_sees_its_definitions(gpu: GpuProfile) -> None:
    # kernels.cu is compiled inside main.cu, after state.h: REAL is double and V_U, V_V, V_W
    # are planes 0, 1, 2 of n = 2^22 values. 2^22 threads read u, v and w (+=), write w:
    # 3 x 32 MiB read, 32 MiB written (without main.cu's context: 4-byte elements of an
    # unknown type, and one plane for the three accesses)
    path = FIXTURES / "included" / "kernels.cu"
    det = detect(path.read_bytes(), str(path))
    a = analyze(det.kernels[0], det, gpu)
    assert a.threads == 2**22
    assert a.counts.flops["fp64"] == pytest.approx(3.0)  # u - v, dt * (.) + w: FADD + FMA
    assert _buffer(a, "state") == pytest.approx((96 * MIB, 96 * MIB, 32 * MIB))


def test_a_data_dependent_index_is_bounded_by_its_dimensions(gpu: GpuProfile) -> None:
    # data_indices.cu, 4096 blocks of 256 = 2^20 threads.
    # rowsum: val[j], j from rowptr[i] (loaded) over a loop of unknown bound (16 trips):
    #   nothing shows the segments overlap: 2^20 threads x 16 x 4 B = 64 MiB (not the 4 MiB
    #   of one element per thread); rowptr[i], rowptr[i + 1]: 2^20 + 1 elements
    a = _run(gpu, "data_indices.cu", "rowsum")
    assert a.counts.loops[0].trips == 16
    assert _buffer(a, "val") == pytest.approx((64 * MIB, 64 * MIB, 0.0))
    assert _buffer(a, "rowptr")[0] == pytest.approx((2**20 + 1) * 4)
    # spmv: col[j] and val[j] stream the same way (64 MiB each); x[c] with c = col[j] is a
    #   gather from a table of unknown size: an element per thread, 2^20 x 4 B = 4 MiB
    s = _run(gpu, "data_indices.cu", "spmv")
    assert _buffer(s, "col")[0] == pytest.approx(64 * MIB)
    assert _buffer(s, "val")[0] == pytest.approx(64 * MIB)
    assert _buffer(s, "x")[0] == pytest.approx(4 * MIB)
    # blocktable: tab[k + j], k = starts[blockIdx.x]: the index varies with the block and
    #   j only, so the 256 threads of a block share it: 4096 x 64 x 4 B = 1 MiB
    b = _run(gpu, "data_indices.cu", "blocktable")
    assert _buffer(b, "tab")[0] == pytest.approx(1 * MIB)


def test_template_arguments_of_a_device_function_bind_its_parameters(gpu: GpuProfile) -> None:
    # tiled: fill<TILE, STRIDE> copies d[o + t * stride] for t < tile = 4, stride = 256: 4
    # trips known from the call (not 16 by default), and a[] read once: 2^20 threads x 4
    # elements x 4 B = 16 MiB
    a = _run(gpu, "data_indices.cu", "tiled")
    assert [(lp.trips, lp.source) for lp in a.counts.loops] == [(4, "argument")]
    assert _buffer(a, "a") == pytest.approx((16 * MIB, 16 * MIB, 0.0))


def test_a_dynamically_indexed_array_is_in_local_memory(gpu: GpuProfile) -> None:
    # local_arrays.cu, 2^20 threads. lookup: t[x % 16] is indexed by the thread, so the
    # whole float t[16] lives in local memory, its 16 stores (a fully unrolled loop through
    # put()) as well as the load. The 68 x 1536 threads resident at once on an RTX 3080
    # hold 68 x 1536 x 64 B = 6.68 MB of copies, past the 5 MiB L2: that share of the 17
    # accesses x 4 B per thread goes to DRAM. registers: constant indices only, no traffic.
    a = _run(gpu, "local_arrays.cu", "lookup")
    miss = 1 - 5 * MIB / (68 * 1536 * 64)
    assert a.memory.local_bytes == pytest.approx(17 * 4 * 2**20 * miss)
    memory = next(t for t in verdict_terms(a) if isinstance(t, MemoryTerm))
    assert "of them per-thread arrays in local memory" in term_text(memory)
    # an A100 holds 2048 threads an SM (its profile's limit): 108 x 2048 x 64 B = 14.2 MB
    # of copies fit its 40 MiB L2, and half the lines written reach DRAM, as for a buffer
    # that fits: 0.5 x 14.2 MB (with the RTX 3080's 1536 an SM it was 0.5 x 10.6 MB)
    a100 = load_registry().get("a100")
    wide = _run(a100, "local_arrays.cu", "lookup")
    assert wide.memory.local_bytes == pytest.approx(0.5 * 108 * 2048 * 64)
    b = _run(gpu, "local_arrays.cu", "registers")
    assert b.memory.local_bytes == 0
    # the same lookup launched as 8 blocks of 256: the 2048 copies (128 kB) fit in L2, and
    # half the lines written reach DRAM during the kernel, like a global buffer's that fits:
    # 0.5 x 2048 x 64 B = 64 kB (no thread's copy outgrows L2: before, no traffic at all)
    few = _run(gpu, "local_arrays.cu", "lookup", Inputs(block=(256, 1, 1), grid=(8, 1, 1)))
    assert few.threads == 2048
    assert few.memory.local_bytes == pytest.approx(0.5 * 2048 * 64)
    # tile<8, 8>: acc[m * TN + n] over m < TM, n < TN, both template parameters, is indexed
    # by the counters of two 8-trip loops the compiler unrolls: registers, no traffic (it
    # was taken for local memory: 64 trips x 64 elements loaded and stored, a thread)
    c = _run(gpu, "local_arrays.cu", "tile")
    assert [(lp.trips, lp.source, lp.unrolled) for lp in c.counts.loops[1:3]] == [
        (8, "constant", True),
        (8, "constant", True),
    ]
    assert c.memory.local_bytes == 0


# RTX 3080: 68 SMs x 1536 resident threads = 104,448 threads run at once; their lines
# (128 B each) take 13,369,344 B, more than the SMs' L1 (68 x 128 KiB = 8,912,896 B), so a
# thread walking its own row finds its line again only in the share of them L2 holds:
# evicted 1 - 5 MiB / 13,369,344 B = 0.6078 of the time
RUNNING_LINES = 68 * 1536 * 128
THRASH = 1 - 5 * MIB / RUNNING_LINES
ROWS, COLS = 131072, 1024
MATRIX = ROWS * COLS * 4  # 512 MiB


@pytest.mark.parametrize(
    ("name", "kernel"), [("uncoalesced.cu", "row_sums"), ("uncoalesced_omp.cpp", "row_sums_omp")]
)
def test_a_thread_walking_its_own_row_moves_sectors_again(
    gpu: GpuProfile, name: str, kernel: str
) -> None:
    # 131,072 threads (OpenMP: iterations), each reads its 1024-float row: lanes are 4 KiB
    # apart, so each load moves a 32 B sector of which the thread uses 4 B now and the rest
    # on its next 7 iterations if the sector is still cached. The matrix once (512 MiB),
    # plus the other 28 of every 32 bytes again each time the line was evicted:
    # 512 MiB + (2^27 loads x 32 B - 512 MiB) x 0.6078 = 512 + 3584 x 0.6078 = 2,690.5 MiB
    a = _run(gpu, name, kernel)
    (m,) = [x for x in a.counts.accesses if x.buffer == "m"]
    assert m.lane_stride == COLS
    expected = MATRIX + (ROWS * COLS * 32 - MATRIX) * THRASH
    assert _buffer(a, "m")[1] == pytest.approx(expected)
    assert expected / MIB == pytest.approx(2690.5, abs=0.1)
    # the sums are stored by consecutive threads side by side: 512 KiB
    assert _buffer(a, "s") == pytest.approx((ROWS * 4, 0.0, ROWS * 4))


def test_rows_closer_than_a_line_share_their_lines(gpu: GpuProfile) -> None:
    # rows of 6 floats walked at run time: lanes 24 B apart, so a warp's 32 rows lie in six
    # 128 B lines, not 32; the 104,448 threads running at once hold 104,448 x 24 B =
    # 2,506,752 B of lines, which the SMs' L1 (68 x 128 KiB) holds: each sector is used
    # whole and the 131,072 rows move once, 3 MiB (before: a line a thread, 13.4 MB, more
    # than L1 and L2: 3.6x that)
    a = _run(gpu, "uncoalesced.cu", "short_rows")
    (m,) = [x for x in a.counts.accesses if x.buffer == "m"]
    assert m.lane_stride == 6
    assert _buffer(a, "m") == pytest.approx((ROWS * 6 * 4, ROWS * 6 * 4, 0.0))


def test_a_grid_stride_loop_never_comes_back_to_its_sectors(gpu: GpuProfile) -> None:
    # in[2 * i] for 262,144 elements over a grid-stride loop of 128 x 256 threads (8 trips
    # each): lanes 2 B apart, so a warp's 32 loads span 64 B of which it uses 32: 2 B moved
    # per 1-byte load, 512 KiB for the 256 KiB read, however few lines the 32,768 threads
    # keep in L1 (a thread's next trip is the whole launch further on, not the rest of its
    # sector; before: 256 KiB, as a row each thread walks)
    a = _run(gpu, "uncoalesced.cu", "every_other")
    (load,) = [x for x in a.counts.accesses if x.buffer == "in"]
    assert load.lane_stride == 2 and not load.streamed
    assert _buffer(a, "in")[1] == pytest.approx(2 * ROWS * 2)


def test_rows_a_block_walks_together_stay_in_l1(gpu: GpuProfile) -> None:
    # the same rows, each read by the 8 warps of a 32 x 8 block (threadIdx.y): of the
    # 104,448 threads running at once, 8 share each row, so their lines take 13,369,344 B
    # / 8 = 1,671,168 B, which the SMs' L1 holds: each sector is used whole, the matrix
    # moves once (512 MiB, not 2,690.5 MiB)
    a = _run(gpu, "uncoalesced.cu", "row_sums_shared")
    (m,) = [x for x in a.counts.accesses if x.buffer == "m"]
    assert (m.lane_stride, m.sharers) == (COLS, 8.0)
    assert _buffer(a, "m") == pytest.approx((MATRIX, MATRIX, 0.0))


def test_the_same_walk_over_a_column_major_matrix_moves_it_once(gpu: GpuProfile) -> None:
    # m[j * ROWS + i]: consecutive threads read consecutive floats; 512 MiB, 5.3x less
    a = _run(gpu, "uncoalesced.cu", "row_sums_coalesced")
    assert [x.lane_stride for x in a.counts.accesses if x.buffer == "m"] == [1.0]
    assert _buffer(a, "m") == pytest.approx((MATRIX, MATRIX, 0.0))


@pytest.mark.parametrize("kernel", ["first_column", "first_column_deref", "first_column_offset"])
def test_one_element_per_row_moves_a_sector_each(gpu: GpuProfile, kernel: str) -> None:
    # m[i * COLS], *(m + i * COLS), (m + i * COLS)[0]: 131,072 loads 4 KiB apart, each a
    # 32 B sector: 4 MiB, not 512 KiB (the pointer's stride was lost before: one address for
    # the dereference, none for the subscript at 0)
    a = _run(gpu, "uncoalesced.cu", kernel)
    assert {x.lane_stride for x in a.counts.accesses if x.buffer == "m"} == {COLS}
    assert _buffer(a, "m") == pytest.approx((ROWS * 4, ROWS * 32, 0.0))


def test_a_cast_pointer_strides_in_its_own_elements(gpu: GpuProfile) -> None:
    # reinterpret_cast<const float4 *>(m + 4 * i)[0]: m + 4i moves 4 floats a lane, one
    # float4: lanes 16 B apart read every byte of their sectors, 131,072 x 16 B = 2 MiB (not
    # a 32 B sector per lane for a stride of 4 float4s)
    a = _run(gpu, "uncoalesced.cu", "vector_rows")
    assert {x.lane_stride for x in a.counts.accesses if x.buffer == "m"} == {1.0}
    assert _buffer(a, "m") == pytest.approx((2 * MIB, 2 * MIB, 0.0))


def test_neighbouring_fields_share_their_sectors(gpu: GpuProfile) -> None:
    # xyz[3i], xyz[3i+1], xyz[3i+2]: lanes 12 B apart; the three loads together use every
    # byte of the sectors they touch: 3 x 131,072 x 4 B = 1.5 MiB, as the footprint says
    a = _run(gpu, "uncoalesced.cu", "norms")
    assert {x.lane_stride for x in a.counts.accesses if x.buffer == "xyz"} == {3.0}
    assert _buffer(a, "xyz") == pytest.approx((1.5 * MIB, 1.5 * MIB, 0.0))


def test_an_index_split_into_row_and_column_stays_consecutive(gpu: GpuProfile) -> None:
    # c = idx % 1024 grows with the lane; r = idx / 1024 is the same across a warp (32 lanes
    # never cross a multiple of 1024 but at a boundary): r * 1024 + c has lane stride 1
    a = _run(gpu, "uncoalesced.cu", "copy_2d")
    assert {x.lane_stride for x in a.counts.accesses} == {1.0}
    assert _buffer(a, "m") == pytest.approx((MATRIX, MATRIX, 0.0))


@pytest.mark.parametrize("kernel", ["downscale", "downscale_rounded"])
def test_a_column_scaled_through_float_arithmetic_keeps_its_lane_stride(
    gpu: GpuProfile, kernel: str
) -> None:
    # in[(int)((x + 0.5f) * 4)] (clamped, rounded, chosen by a known flag): lanes read bytes
    # 4 apart, so 8 lanes share a 32 B sector and each thread moves 4 B of which it uses one:
    # 131,072 threads move the whole 512 KiB image, not the 128 KiB they use (the lane
    # stride was lost in the float arithmetic before)
    a = _run(gpu, "uncoalesced.cu", kernel)
    assert {x.lane_stride for x in a.counts.accesses if x.buffer == "in"} == {4.0}
    assert _buffer(a, "in") == pytest.approx((ROWS, 4 * ROWS, 0.0))


def test_a_pointer_advanced_in_a_loop_reads_a_new_element_each_trip(gpu: GpuProfile) -> None:
    # 4096 threads, each reads *in at 4096 rows (4096 x 4096 x 4 B = 64 MiB read once,
    # not one element per thread: the pointer moves every trip) and writes out[x] (16 KiB)
    # the sum is 1 FADD a row; `in += w` is an address add (integer work), not a FLOP
    a = _run(gpu, "pointer_walk.cu", "column_walk")
    assert a.threads == 4096
    assert a.counts.flops["fp32"] == pytest.approx(4096)
    assert a.memory.bytes_loaded == pytest.approx(64 * MIB + FLOOR)
    assert a.memory.bytes_stored == pytest.approx(16 * 1024)


def test_a_byte_read_from_memory_indexes_at_most_256_bins(gpu: GpuProfile) -> None:
    # 2^26 threads each read a byte (64 MiB) and add to bins[byte]: the bins' footprint is
    # at most 384 x 4 B (the values of a signed or unsigned byte), not a bin per thread
    # (before: 256 MiB of bins, 9x the kernel's real traffic)
    a = _run(gpu, "byte_index.cu", "byte_histogram")
    bins = buffer_of(a, "bins")
    assert bins.footprint == pytest.approx(384 * 4)
    assert a.memory.bytes_loaded == pytest.approx(64 * MIB + 384 * 4 + FLOOR)


def test_a_grid_stride_while_loop_reads_new_elements_each_trip(gpu: GpuProfile) -> None:
    # 1024 x 256 threads, gridSize 2 x 256 x 1024 = 2^19: 2^26 / 2^19 = 128 trips, each
    # reading in[i] and in[i + 256]: the whole 256 MiB input once (before: the counter kept
    # its first trip's range, 2^19 elements, and the input "fit" in L2 at 2 MiB)
    a = _run(gpu, "grid_stride_while.cu", "reduce_while")
    loop = a.counts.loops[0]
    assert (loop.var, loop.trips) == ("i", pytest.approx(128, rel=1e-3))
    in_ = buffer_of(a, "in")
    assert in_.footprint == pytest.approx(256 * MIB, rel=1e-5)
    assert a.memory.bytes_loaded == pytest.approx(256 * MIB + FLOOR, rel=1e-5)


def test_one_index_stored_on_exclusive_paths_adds_up(gpu: GpuProfile) -> None:
    # 256^3 threads; the chain's arms are taken by the threads on a face: 1/256, then
    # 255/256 x 1/256, ... of them, together 1 - (254/256)^3 of the grid = 256^3 - 254^3 =
    # 390,152 elements of 8 B = 3,121,216 B (before: the arms were taken for one access,
    # one face's 512 KiB). Within 0.5%: the arms' probabilities are the branch model's
    a = _run(gpu, "cube_faces.cu", "faces")
    assert _buffer(a, "phi")[0] == pytest.approx((256**3 - 254**3) * 8, rel=5e-3)


def test_arrays_named_out_of_view_are_separate_buffers(gpu: GpuProfile) -> None:
    # src_ and dst_ are members: 1,048,576 iterations assumed (n_ unknown), each reading
    # src_[i] and writing dst_[i], 4 MiB each (before: both were the one buffer "?",
    # a 4 MiB working set that "fit" in L2 and half its writes stayed there)
    a = _run(gpu, "omp_members.cpp", "run")
    assert _buffer(a, "src_") == pytest.approx((4 * MIB, 4 * MIB, 0.0))
    assert _buffer(a, "dst_") == pytest.approx((4 * MIB, 0.0, 4 * MIB))


def test_arrays_behind_pointer_members_are_their_own_buffers(gpu: GpuProfile) -> None:
    # 2^20 iterations: g->v[i] read and g->u[i] written, 4 B floats: 4 MiB each (before:
    # one buffer "g" of 8 B elements, the members' own size, 8 MiB each way)
    a = _run(gpu, "omp_members.cpp", "smooth")
    assert _buffer(a, "g->v") == pytest.approx((4 * MIB, 4 * MIB, 0.0))
    assert _buffer(a, "g->u") == pytest.approx((4 * MIB, 0.0, 4 * MIB))


def test_array_members_are_their_own_runs_of_elements(gpu: GpuProfile) -> None:
    # `Row` is `unsigned int[4096]`, so `Columns` is 32 KiB and one allocation holds one
    # of them. 4096 threads read src->a[i] and src->b[i] and update dst->a[i], dst->b[i]:
    # each of the four arrays is 4096 * 4 B = 16 KiB (before: the members were one buffer
    # per pointer, indexed by i alone, and capped at one struct element, 4 B each)
    a = _run(gpu, "array_members.cu", "soa_add")
    assert _buffer(a, "src->a") == pytest.approx((16384, 16384, 0.0))
    assert _buffer(a, "src->b") == pytest.approx((16384, 16384, 0.0))
    assert _buffer(a, "dst->a")[0] == pytest.approx(16384)
    # an array of 4096 Cells of 4 floats: every thread reads its own 16 B row, 64 KiB
    c = _run(gpu, "array_members.cu", "cell_sum")
    assert _buffer(c, "cells->w")[:2] == pytest.approx((65536, 65536))


def test_a_row_pointer_that_moves_with_threads_reads_every_row(gpu: GpuProfile) -> None:
    # 1024 rows of 4096 floats, one thread per element: probs_t = probs + t * V moves with
    # the thread, so probs_t[v] covers all 2^22 elements, 16 MiB (before: v's own range,
    # 0..4095, capped the footprint at one row, 16 KiB)
    a = _run(gpu, "row_pointers.cu", "row_update")
    assert _buffer(a, "probs")[:2] == pytest.approx((16 * MIB, 16 * MIB))
    assert _buffer(a, "dlogits")[0] == pytest.approx(16 * MIB)


def test_texture_fetches_and_surface_writes_move_their_elements(gpu: GpuProfile) -> None:
    # 1024 x 1024 threads, one texel each: tex2DLod<float4> reads 16 B (16 MiB in all)
    # and surf2Dwrite stores a uchar4, 4 B (4 MiB); before, tex2DLod and surface writes
    # moved nothing. A texture<float2> reference reads 8 B per texel: 8 MiB (before: 4 B)
    a = _run(gpu, "textures.cu", "blur")
    assert _buffer(a, "src")[:2] == pytest.approx((16 * MIB, 16 * MIB))
    assert _buffer(a, "dst")[2] == pytest.approx(4 * MIB)
    b = _run(gpu, "textures.cu", "legacy")
    assert _buffer(b, "refTex")[:2] == pytest.approx((8 * MIB, 8 * MIB))
    # box: tex2D<float>(src, x + dx, y + dy) over dx, dy in [-2, 2] reaches the texels of
    # x in [-2, 1025] by y in [-2, 1025]: 1028^2 x 4 B = 4.03 MiB, read once; each of the
    # 25 fetches was taken for texels of its own (100 MiB)
    c = _run(gpu, "textures.cu", "box")
    assert _buffer(c, "src")[:2] == pytest.approx((1028**2 * 4, 1028**2 * 4))


def test_scattered_updates_of_a_table_larger_than_l2_miss_it(gpu: GpuProfile) -> None:
    # 2^25 threads read a key (128 MiB) and add 1 to counts[key]: the 32 MiB table is 6.4x
    # the 5 MiB L2, so an update misses it 1 - 5/32 of the time (0.84375) and moves a 32 B
    # sector in and later back out: 2^25 x 32 x 0.84375 = 864 MiB each way, of which the
    # table's own 32 MiB is its footprint (before: the footprint alone, 10x under)
    a = _run(gpu, "scattered_counts.cu", "count_keys")
    moved = 2**25 * 32 * (1 - 5 / 32)
    footprint, loaded, stored = _buffer(a, "counts")
    assert footprint == pytest.approx(32 * MIB)
    assert loaded == pytest.approx(moved)
    assert stored == pytest.approx(moved)
    # the 4 KiB table stays in L2: its footprint once, whatever the updates
    small = _run(gpu, "scattered_counts.cu", "count_keys_small")
    assert _buffer(small, "counts")[1] == pytest.approx(4096)


def test_reads_wider_than_the_element_stay_within_the_allocation(gpu: GpuProfile) -> None:
    # wide_reads.cu: 256 x 256 blocks compare rows gx and gy of a 256 x 4096 byte table,
    # 4 bytes at a time (`*(const char4_ *)(data + i + COLS * gx)`). Each access reaches every
    # row: 1 MiB, and the two together still the table's 1 MiB (cudaMalloc(ROWS * COLS) of
    # chars), not 2 MiB, nor the 4 MiB of 1 Mi elements of 4 bytes; distance: 256 KiB
    a = _run(gpu, "wide_reads.cu", "pairs")
    assert _buffer(a, "data")[0] == pytest.approx(MIB)
    assert _buffer(a, "distance")[0] == pytest.approx(256 * 1024)
    # the same as an OpenMP region over the host's malloc(ROWS * COLS) of chars
    b = _run(gpu, "wide_reads_omp.cpp", "main")
    assert _buffer(b, "data")[0] == pytest.approx(MIB)
