"""Tests of roofline_lsp.compiler.toolchain: compiler discovery (stand-in compilers written
here, the real toolkit when installed) and the arch chosen for a GPU."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from ptx_helpers import fake_tool, posix_only

from roofline_lsp.compiler.toolchain import (
    arch_choice,
    arch_for,
    find_nvcc,
    locate_nvcc,
    nvcc_version,
    supported_archs,
)


def test_find_nvcc_nothing_in_an_empty_environment(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path / "empty")}
    assert find_nvcc(None, env, locations=()) is None
    assert find_nvcc(None, {}, locations=[str(tmp_path / "cuda-*/bin")]) is None
    path, why = locate_nvcc(None, env, locations=())
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
    assert find_nvcc(str(a), env, locs) == str(a)
    assert find_nvcc(str(tmp_path / "setting"), env, locs) == str(a)  # a folder
    assert find_nvcc(None, env, locs) == str(b)
    assert find_nvcc(None, {"CUDA_PATH": str(tmp_path / "home")}, locs) == str(b)
    assert find_nvcc(None, {"PATH": env["PATH"]}, locs) == str(c)
    assert find_nvcc(None, {"PATH": ""}, locs) == str(e)  # newest version first
    assert d.exists()
    path, why = locate_nvcc(str(tmp_path / "nope"), env, locs)
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
    assert nvcc_version(str(nv)) == "12.4.131"
    assert supported_archs(str(nv)) == (50, 80, 90)
    assert nvcc_version(str(tmp_path / "missing")) is None


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
        assert arch_for(reg.get(name)) == arch, name
    nvcc13 = (75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121)
    v100 = arch_choice(reg.get("v100"), nvcc13)
    assert v100.arch == "sm_75" and v100.wanted == 70 and "sm_70 not supported" in v100.note
    mi = arch_choice(reg.get("mi300x"), nvcc13)
    assert mi.arch == "sm_80" and mi.wanted is None and "proxy" in mi.note
    assert arch_for(reg.get("max-1550")) == "sm_80"


def test_arch_for_any_named_object() -> None:
    assert arch_for(SimpleNamespace(name="My H100 box")) == "sm_90"
    assert arch_for(SimpleNamespace(name="x", compute_capability="8.9")) == "sm_89"
    unknown = arch_choice(SimpleNamespace(name="Mystery", vendor="NVIDIA"))
    assert unknown.arch == "sm_80" and "unknown" in unknown.note
    assert arch_for(SimpleNamespace(name="rtx3080"), supported=(90, 100)) == "sm_90"


STANDARD_NVCC = [p for p in ("/usr/local/cuda/bin/nvcc",) if os.access(p, os.X_OK)]


@pytest.mark.skipif(not STANDARD_NVCC, reason="no toolkit in /usr/local/cuda")
def test_nvcc_hidden_from_path_is_found_in_the_standard_folders(tmp_path: Path) -> None:
    found = find_nvcc(None, {"PATH": str(tmp_path)})
    assert found is not None and found.startswith("/usr/local/cuda")
