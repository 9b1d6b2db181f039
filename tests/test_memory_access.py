"""Memory access advice (RL007-RL009) on hand-written fixtures, with the verdict's bound
forced."""

from __future__ import annotations

from pathlib import Path

import pytest
from advice_fixtures import RTX, apply, has_error, report, run, where

from roofline_lsp.advice.advise import advise


def test_strided_access_and_reread_follow_the_bound() -> None:
    src, bw = run("advice.cu", "bandwidth")
    assert where(src, bw, "RL008") == [("strided_kernel", "in[i * stride]")]
    assert [a.severity for a in bw if a.code == "RL008"] == ["information"]
    # naive matmul: A's row is re-read by every thread of a row; B is indexed by threadIdx.x
    assert where(src, bw, "RL009") == [("naive_matmul", "A[row * n + k]")]
    _, cb = run("advice.cu", "compute")
    assert [a.severity for a in cb if a.code in ("RL008", "RL009")] == ["hint", "hint"]


def test_a_pair_of_neighbours_per_thread_is_not_an_uncoalesced_access() -> None:
    # in[i] and in[i + 1] with i = 2 * thread in a grid-stride loop: lanes are 2 elements
    # apart, but each thread's two loads fill every sector the warp touches, so the DRAM
    # bytes are the array once and there is nothing to gain (before: "2x fewer DRAM bytes")
    pairs = (
        b"__global__ void k(const int *in, int *out, int n) {\n"
        b"  int sum = 0;\n"
        b"  int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
        b"  for (int i = idx * 2; i < n; i += blockDim.x * gridDim.x * 2)\n"
        b"    sum += in[i] + in[i + 1];\n"
        b"  out[idx] = sum;\n}\n"
        b"void go(int *in, int *out) { k<<<1024, 256>>>(in, out, 1 << 26); }\n"
    )
    assert where(pairs, advise(report(pairs, "k.cu", "bandwidth"), RTX), "RL008") == []
    # one of the pair alone leaves half of each sector unused: the advice stays
    single = pairs.replace(b"in[i] + in[i + 1]", b"in[i]")
    assert where(single, advise(report(single, "k.cu", "bandwidth"), RTX), "RL008") == [
        ("k", "in[i]")
    ]


def test_an_address_cast_to_a_vector_is_no_uncoalesced_access() -> None:
    # &in[idx] with idx = 16 * thread is the address of the thread's 16 bytes, read as one
    # uint4: consecutive threads read consecutive 16-byte vectors, every sector whole
    # (before: "elements 16 apart; a whole sector for one 1-byte element")
    src = (
        b"__global__ void k(unsigned char *out, const unsigned char *in, int len) {\n"
        b"  int idx = (threadIdx.x + blockIdx.x * blockDim.x) * 16;\n"
        b"  if (idx >= len) return;\n"
        b"  uint4 v = __ldg(reinterpret_cast<const uint4 *>(&in[idx]));\n"
        b"  *reinterpret_cast<uint4 *>(&out[idx]) = v;\n}\n"
        b"void go(unsigned char *o, unsigned char *i) { k<<<16384, 256>>>(o, i, 1 << 26); }\n"
    )
    assert where(src, advise(report(src, "k.cu", "bandwidth"), RTX), "RL008") == []
    # the same stride read element by element wastes the sectors: the advice stays
    scalar = src.replace(b"__ldg(reinterpret_cast<const uint4 *>(&in[idx]))", b"in[idx]")
    scalar = scalar.replace(b"uint4 v", b"unsigned char v")
    scalar = scalar.replace(b"*reinterpret_cast<uint4 *>(&out[idx])", b"out[idx]")
    assert where(scalar, advise(report(scalar, "k.cu", "bandwidth"), RTX), "RL008") == [
        ("k", "in[idx]"),
        ("k", "out[idx]"),
    ]


def test_missing_restrict_only_where_aliasing_costs_reloads() -> None:
    src, adv = run("advice.cu")
    # alias_kernel loads before its only store: nothing is reloaded, so no advice
    assert where(src, adv, "RL007") == []
    loop = (
        b"__global__ void k(int n, const float *w, float *out)\n{\n"
        b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        b"    for (int j = 0; j < n; j++) out[i] += w[j];\n}\n"
        b"void go(int n, float *w, float *o) { k<<<n / 256, 256>>>(n, w, o); }\n"
    )
    adv = advise(report(loop, "k.cu", "bandwidth"), RTX)
    [a] = [x for x in adv if x.code == "RL007"]
    assert a.fix is not None and len(a.fix.edits) == 2
    fixed = apply(loop, a)
    assert b"const float *__restrict__ w, float *__restrict__ out" in fixed
    assert not has_error(fixed)


KERNEL = b"""__global__ void k(int n, const float *w, float *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int j = 0; j < n; j++) out[i] += w[j];
}
"""


@pytest.mark.parametrize(
    ("launch", "expected"),
    [
        # launched from another file of the program with two buffers: the fix is offered
        ("k<<<n / 256, 256>>>(n, w, o);", "fix"),
        # launched there with one buffer twice: restrict would change results, no advice
        ("k<<<n / 256, 256>>>(n, o, o);", "none"),
    ],
)
def test_missing_restrict_reads_the_launches_of_the_other_files(
    tmp_path: Path, launch: str, expected: str
) -> None:
    (tmp_path / "k.cu").write_bytes(KERNEL)
    (tmp_path / "main.cu").write_text(
        "__global__ void k(int n, const float *w, float *out);\n"
        f"void go(int n, float *w, float *o) {{ {launch} }}\n"
    )
    adv = advise(report(KERNEL, str(tmp_path / "k.cu"), "bandwidth"), RTX)
    found = [a for a in adv if a.code == "RL007"]
    if expected == "fix":
        (a,) = found
        assert a.fix is not None and "no launch passes one buffer to two" in a.message
    else:
        assert found == []
    # alone in its folder (no launch seen): advice without a fix
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "k.cu").write_bytes(KERNEL)
    (a,) = [x for x in advise(report(KERNEL, str(alone / "k.cu"), "bandwidth"), RTX)
            if x.code == "RL007"]  # fmt: skip
    assert a.fix is None
