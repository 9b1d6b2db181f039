"""estimate/line_shares.py: each line's share of a kernel's FLOPs, integer ops, DRAM bytes."""

from __future__ import annotations

import pytest

from roofline_lsp.detect.kernels import detect
from roofline_lsp.estimate.line_shares import kernel_line_shares
from roofline_lsp.model.config import Config
from roofline_lsp.model.gpus import GpuProfile

SOURCE = b"""\
__global__ void dot_rows(int n, const float *a, const float *b, float *out)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    for (int k = 0; k < 64; k++)
        sum += a[row * 64 + k] * 2.0f;
    out[row] = sum + b[row];
}
"""


def test_shares_follow_the_loop_and_the_buffers(gpu: GpuProfile) -> None:
    det = detect(SOURCE, "dot_rows.cu")
    shares = kernel_line_shares(det.kernels[0], det, gpu, Config())
    # each kind of work adds up to the whole kernel over its lines
    for field in ("flops", "int_ops", "dram_bytes"):
        assert sum(getattr(s, field) for s in shares.values()) == pytest.approx(1.0)
    loop_body, store = shares[6], shares[7]
    # 64 multiply-adds per thread in the loop against one add after it
    assert loop_body.flops > 0.9 and store.flops < 0.1
    # `a` (64 floats a row) is most of the traffic; `b` and `out` are one float each
    assert loop_body.dram_bytes > store.dram_bytes > 0
    # the thread index: integer ops only
    assert shares[3].dram_bytes == 0 and shares[3].flops == 0 and shares[3].int_ops > 0
    assert 4 not in shares or shares[4].empty or shares[4].dram_bytes == 0
