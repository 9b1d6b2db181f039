"""A synthetic project of many small kernels for the chart's scale tests and benchmark:
CUDA, HIP and OpenMP kernels whose arithmetic per element grows from none to hundreds of
operations in fp32, fp64 and integer, so they spread across the roofline on both sides of the
ridge points. Generated, not copied from anywhere."""

from __future__ import annotations

from pathlib import Path

TYPES = (("float", "1.0001f"), ("double", "1.0001"), ("int", "3"))


def _cuda(name: str, ctype: str, c: str, work: int, hip: bool) -> str:
    head = "#include <hip/hip_runtime.h>\n" if hip else ""
    return (
        f"{head}__global__ void {name}(const {ctype}* x, {ctype}* y, int n) {{\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        f"  {ctype} v = x[i];\n"
        f"  for (int k = 0; k < {work}; ++k) v = v * {c} + {c};\n"
        "  y[i] = v;\n"
        "}\n"
    )


def _omp(name: str, ctype: str, c: str, work: int) -> str:
    return (
        f"void {name}(const {ctype}* x, {ctype}* y, int n) {{\n"
        "#pragma omp target teams distribute parallel for map(to: x[0:n]) map(from: y[0:n])\n"
        "  for (int i = 0; i < n; ++i) {\n"
        f"    {ctype} v = x[i];\n"
        f"    for (int k = 0; k < {work}; ++k) v = v * {c} + {c};\n"
        "    y[i] = v;\n"
        "  }\n"
        "}\n"
    )


def write_project(root: Path, kernels: int = 500, per_file: int = 5) -> list[Path]:
    """``kernels`` kernels, ``per_file`` to a file, under ``root``; the files written."""
    root.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for f in range(0, kernels, per_file):
        kind = ("cu", "hip", "cpp")[(f // per_file) % 3]
        parts: list[str] = []
        for i in range(f, min(f + per_file, kernels)):
            ctype, c = TYPES[i % 3]
            work = (i * 37) % 256  # 0..255 operations per element
            name = f"k{i:04d}_{ctype}"
            if kind == "cpp":
                parts.append(_omp(name, ctype, c, work))
            else:
                parts.append(_cuda(name, ctype, c, work, hip=kind == "hip"))
        path = root / f"unit{f // per_file:03d}.{kind}"
        path.write_text("\n".join(parts))
        files.append(path)
    return files
