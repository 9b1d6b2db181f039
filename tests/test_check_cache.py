"""``check``'s results cache (``engine/check_cache.py`` through ``file_run.check_files``): a
warm re-run serves every file, and a result is never served once anything it read changed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from roofline_lsp.engine.check_cache import Dependencies, results_cache, run_key
from roofline_lsp.engine.file_run import FileOutcome, check_files
from roofline_lsp.model.config import Config

KERNEL = b"""#include "params.h"
__global__ void scale(float *x, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i];
  for (int r = 0; r < ROUNDS; ++r) v = v * a + 1.0f;
  x[i] = v;
}
int main() { float *x; scale<<<N / 256, 256>>>(x, 2.0f); }
"""
OTHER = b"""__global__ void copy(float *a, const float *b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  a[i] = b[i];
}
"""


def _config(tmp_path: Path, **kw: object) -> Config:
    cfg = Config(counts="source", **kw)  # type: ignore[arg-type]
    return replace(cfg, llm=replace(cfg.llm, cache_dir=str(tmp_path / "cache")))


def _tree(tmp_path: Path, rounds: int) -> list[str]:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "params.h").write_text(f"#define N (1 << 20)\n#define ROUNDS {rounds}\n")
    (src / "scale.cu").write_bytes(KERNEL)
    other = tmp_path / "other"  # another program: its analysis reads none of src/
    other.mkdir(exist_ok=True)
    (other / "copy.cu").write_bytes(OTHER)
    return [str(other / "copy.cu"), str(src / "scale.cu")]


def _run(cfg: Config, files: list[str], jobs: int = 1) -> tuple[list[FileOutcome], int]:
    seen: list[int] = []
    out = check_files(cfg, files, jobs=jobs, progress=lambda d, t, c: seen.append(c))
    return out, seen[-1]


def _rendered(outs: list[FileOutcome]) -> list[tuple[str, ...]]:
    return [o.text + o.json + o.sarif for o in outs]


def test_warm_run_serves_every_file_with_the_same_output(tmp_path: Path) -> None:
    files = _tree(tmp_path, 1)
    cfg = _config(tmp_path)
    cold, cached = _run(cfg, files)
    assert cached == 0 and not any(o.cached for o in cold)
    warm, cached = _run(cfg, files)
    assert cached == 2 and all(o.cached for o in warm)
    assert _rendered(warm) == _rendered(cold)


def test_an_edited_header_invalidates_the_files_that_read_it(tmp_path: Path) -> None:
    files = _tree(tmp_path, 1)
    cfg = _config(tmp_path)
    before, _ = _run(cfg, files)
    _tree(tmp_path, 4000)  # the header only: the kernel now does far more arithmetic
    after, cached = _run(cfg, files)
    assert cached == 1  # copy.cu read nothing of src/; scale.cu is analysed again
    assert [o.cached for o in after] == [True, False]
    fresh = check_files(cfg, files, use_cache=False)
    assert _rendered(after) == _rendered(fresh)
    assert _rendered(after)[1] != _rendered(before)[1]  # the stale verdict was not served
    again, cached = _run(cfg, files)
    assert cached == 2 and _rendered(again) == _rendered(fresh)


def test_an_edited_file_and_another_config_are_analysed_again(tmp_path: Path) -> None:
    files = _tree(tmp_path, 1)
    cfg = _config(tmp_path)
    _run(cfg, files)
    Path(files[0]).write_bytes(OTHER.replace(b"b[i]", b"b[i] * 2.0f"))
    _, cached = _run(cfg, files)
    assert cached == 1
    assert run_key(cfg) != run_key(replace(cfg, gpu="rtx3080"))
    _, cached = _run(replace(cfg, gpu="rtx3080"), files)
    assert cached == 0


def test_a_damaged_entry_is_a_miss(tmp_path: Path) -> None:
    files = _tree(tmp_path, 1)
    cfg = _config(tmp_path)
    cold, _ = _run(cfg, files)
    cache = results_cache(cfg)
    inner = cache._open()
    for key in list(inner):
        if key.startswith("check-v1:"):
            inner.set(key, '{"deps": [["f"]], "out": 3}')
    cache.close()
    warm, cached = _run(cfg, files)
    assert cached == 0 and _rendered(warm) == _rendered(cold)


def test_dependencies_compare_content(tmp_path: Path) -> None:
    p = tmp_path / "h.h"
    p.write_bytes(b"one")
    version = Dependencies().view.version(str(p))
    assert Dependencies().current([["f", str(p), version]])
    p.write_bytes(b"two")
    assert not Dependencies().current([["f", str(p), version]])
    assert not Dependencies().current([["f", str(tmp_path / "gone.h"), version]])
    assert not Dependencies().current([["what", str(p), version]])
