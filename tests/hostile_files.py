"""Hostile inputs for ``check``, generated at test time (nothing large is kept in git): files
that are not regular files (a FIFO, a UNIX socket, a symlink to a device), files too large to
analyse, binary files, invalid UTF-8, and valid sources whose shape once cost super-linear
time (thousands of nested loops, one very long line, megabytes of kernels).

``python tests/hostile_files.py DIR`` writes the whole set into DIR for profiling by hand."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

OK_KERNEL = (
    "__global__ void saxpy(int n, float a, const float *x, float *y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "int main() { float *x = 0, *y = 0; saxpy<<<4096, 256>>>(1 << 20, 2.0f, x, y); }\n"
)


def write_ok(path: Path) -> Path:
    """A small valid CUDA file with one kernel and its launch."""
    path.write_text(OK_KERNEL, encoding="utf-8")
    return path


def make_fifo(path: Path) -> Path:
    """A named pipe nobody writes to: opening it for reading blocks forever."""
    os.mkfifo(path)
    return path


def make_socket(path: Path) -> socket.socket:
    """A bound UNIX socket at ``path`` (the caller closes it)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    return s


def make_device_link(path: Path, device: str = "/dev/zero") -> Path:
    """A symlink to an endless character device: reading it never ends."""
    os.symlink(device, path)
    return path


def make_sparse(path: Path, size: int) -> Path:
    """A ``size``-byte file (sparse: costs no disk) that starts like a source file."""
    with open(path, "wb") as f:
        f.write(b"// huge\n")
        f.truncate(size)
    return path


def nested_loops(depth: int) -> str:
    """``depth`` nested ``for`` loops under one ``omp target`` region."""
    body = "".join(
        f"{' ' * min(k, 40)}for (int i{k} = 0; i{k} < 2; ++i{k})\n" for k in range(depth)
    )
    return (
        "void nest(float *a, int n) {\n"
        "#pragma omp target teams distribute parallel for map(tofrom: a[0:n])\n"
        "  for (int i = 0; i < n; ++i)\n"
        f"{body}"
        "    a[i] += 1.0f;\n"
        "}\n"
    )


def nested_blocks(depth: int) -> str:
    """A CUDA kernel with ``depth`` nested ``if`` blocks (braces, not loops)."""
    opened = "".join(f"if (i > {k}) {{\n" for k in range(depth))
    return (
        "__global__ void deep(float *a, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"{opened}a[i] += 1.0f;\n{'}' * depth}\n"
        "}\n"
    )


def long_line(nbytes: int) -> str:
    """A valid kernel whose body is one line of about ``nbytes`` bytes (a long sum)."""
    terms = max(nbytes // 12, 1)
    expr = " + ".join(f"x[i + {k % 997}]" for k in range(terms))
    return (
        "__global__ void wide(const float *x, float *y, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"  if (i < n) y[i] = {expr};\n"
        "}\n"
    )


def many_kernels(nbytes: int) -> str:
    """Valid CUDA of about ``nbytes`` bytes: distinct kernels, each launched from main."""
    parts: list[str] = []
    launches: list[str] = []
    size = 0
    k = 0
    while size < nbytes:
        text = (
            f"__global__ void k{k}(const float *x, float *y, int n) {{\n"
            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"  if (i < n) y[i] = x[i] * {k + 1}.0f + y[i];\n"
            "}\n"
        )
        parts.append(text)
        launch = f"  k{k}<<<(n + 255) / 256, 256>>>(x, y, n);\n"
        launches.append(launch)
        size += len(text) + len(launch)
        k += 1
    return (
        "".join(parts)
        + "int main() {\n  int n = 1 << 20; float *x = 0, *y = 0;\n"
        + ("".join(launches) + "}\n")
    )


def split_brace_kernels(count: int) -> str:
    """``count`` templated kernels whose braces split across ``#if`` branches (each branch
    opens ``} else {``, one ``}`` after them closes it): the grammar cannot parse any of
    them, each is recovered alone."""
    parts = ["#define NO_DEVICE_CODE return\n"]
    for k in range(count):
        parts.append(
            "template <typename T, int rows>\n"
            "__launch_bounds__(128, 1)\n"
            f"static __global__ void split{k}(const T *x, float *y, const int n) {{\n"
            "#if defined(TILE_A)\n"
            "    if constexpr (rows != 32) {NO_DEVICE_CODE;} else {\n"
            "#else\n"
            "    if constexpr (rows != 64) {NO_DEVICE_CODE;} else {\n"
            "#endif\n"
            "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"    if (i < n) y[i] = {k + 1}.0f * x[i];\n"
            "    }\n"
            "}\n"
        )
    return "".join(parts)


def write_all(root: Path) -> list[Path]:
    """Every hostile file into ``root`` (made if needed)."""
    root.mkdir(parents=True, exist_ok=True)
    out = [
        write_ok(root / "ok.cu"),
        make_fifo(root / "pipe.cu"),
        make_device_link(root / "zero.cu"),
        make_sparse(root / "huge.cu", 64_000_000),
    ]
    make_socket(root / "sock.cu").close()  # the socket file stays after close
    out.append(root / "sock.cu")
    (root / "binary.cu").write_bytes(b"\x7fELF\0\0\0" + bytes(range(256)))
    (root / "latin1.cu").write_bytes(OK_KERNEL.replace("saxpy", "caf\xe9").encode("latin-1"))
    for name, text in (
        ("nested_loops.cpp", nested_loops(3000)),
        ("nested_blocks.cu", nested_blocks(3000)),
        ("long_line.cu", long_line(3_000_000)),
        ("many_kernels.cu", many_kernels(3_900_000)),
        ("split_braces.cu", split_brace_kernels(1000)),
    ):
        (root / name).write_text(text, encoding="utf-8")
        out.append(root / name)
    return out


if __name__ == "__main__":
    for p in write_all(Path(sys.argv[1])):
        print(p)
