"""Tests of roofline_lsp.compiler.compile_units: project flags and the translation unit of a
file."""

from __future__ import annotations

from pathlib import Path

from roofline_lsp.compiler.compile_units import (
    includers_of,
    project_flags,
    translation_unit_for,
)


def test_project_flags_from_compile_commands(tmp_path: Path) -> None:
    src = tmp_path / "proj" / "src" / "k.cu"
    src.parent.mkdir(parents=True)
    src.write_text("")
    (tmp_path / "proj" / "compile_commands.json").write_text(
        '[{"directory": "%s", "file": "src/k.cu", "command": '
        '"nvcc -O2 -Iinclude -I /abs/inc -DN=4 -D M=2 -UFOO -isystem sys -std=gnu++20 '
        '-arch=sm_90 -o k.o -c src/k.cu"}]' % (tmp_path / "proj")
    )
    flags = project_flags(str(src))
    base = str(tmp_path / "proj")
    assert flags == (
        "-I", f"{base}/include", "-I", "/abs/inc", "-DN=4", "-D", "M=2", "-UFOO",
        "-isystem", f"{base}/sys", "-std=c++20",
    )  # fmt: skip


def test_project_flags_from_compile_flags_txt(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "compile_flags.txt").write_text("-Iinc\n-DUSE_X\n-Wall\n-xcuda\n")
    flags = project_flags(str(tmp_path / "a" / "b" / "k.cu"))
    assert flags == ("-I", str(tmp_path / "a" / "inc"), "-DUSE_X")
    assert project_flags(str(tmp_path / "k.cu"), stop=str(tmp_path)) == ()


def test_translation_unit_for_headers_and_included_sources(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "kern.cuh").write_text("__global__ void k(float* p) { p[0] = 1; }\n")
    (tmp_path / "kernels.cu").write_text('#include "inc/kern.cuh"\n')
    (tmp_path / "main.cu").write_text('#include <cstdio>\n#include "kernels.cu"\nint main(){}\n')
    (tmp_path / "other.cu").write_text("int x;\n")
    (tmp_path / "lonely.h").write_text("int y;\n")
    main = str(tmp_path / "main.cu")
    assert translation_unit_for(str(tmp_path / "inc" / "kern.cuh")) == main
    assert translation_unit_for(str(tmp_path / "kernels.cu")) == main
    assert translation_unit_for(str(tmp_path / "other.cu")) == str(tmp_path / "other.cu")
    assert translation_unit_for(str(tmp_path / "lonely.h")) is None
    assert includers_of(str(tmp_path / "inc" / "kern.cuh")) == [
        main,
        str(tmp_path / "kernels.cu"),
    ]


def test_a_header_in_a_shared_folder_is_compiled_through_its_includer(tmp_path: Path) -> None:
    # inc/kern.cuh included from src/main.cu as "kern.cuh" (a build's -I../inc): the
    # includer is in a sibling folder of the header's, and the include resolves there
    (tmp_path / "inc").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "inc" / "kern.cuh").write_text("__global__ void k(float* p) { p[0] = 1; }\n")
    main = tmp_path / "src" / "main.cu"
    main.write_text('#include "kern.cuh"\nint main() { k<<<1, 32>>>(0); }\n')
    (tmp_path / "src" / "other.cu").write_text('#include "other.h"\n')
    assert includers_of(str(tmp_path / "inc" / "kern.cuh")) == [str(main)]
    assert translation_unit_for(str(tmp_path / "inc" / "kern.cuh")) == str(main)
