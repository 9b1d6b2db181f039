"""The command line (``cli/arguments.py``): flags to the one configuration object."""

from __future__ import annotations

import pytest

from roofline_lsp.cli.arguments import UsageError, build_parser, config_from_args
from roofline_lsp.model.config import Config


def _config(*argv: str):  # type: ignore[no-untyped-def]
    return config_from_args(build_parser().parse_args(list(argv)))


def test_eval_counts_as_the_labelled_sets_were_built_and_check_as_nvcc_builds():
    # gpuFLOPBench built HeCBench with clang; a user's project is nvcc's unless it says so
    assert _config("eval", "--dataset", "d").build_compiler == "clang"
    assert _config("eval", "--dataset", "d", "--build-compiler", "nvcc").build_compiler == "nvcc"
    assert _config("check", "k.cu").build_compiler == "nvcc"
    assert _config("check", "k.cu", "--build-compiler", "clang").build_compiler == "clang"


def test_an_unknown_build_compiler_is_a_usage_error():
    with pytest.raises(UsageError, match="--build-compiler"):
        _config("check", "k.cu", "--build-compiler", "gcc")


def test_repeated_gpu_flags_add_to_the_list():
    # `--gpu a100 --gpu h100` is `--gpu a100,h100` (before: the last flag won, silently)
    config = _config("check", "k.cu", "--gpu", "a100", "--gpu", "h100,rtx3080")
    assert (config.gpu, config.compare_gpus) == ("a100", ("h100", "rtx3080"))
    assert _config("check", "k.cu", "--gpu", "rtx3080", "--gpu", "a100").compare_gpus == ("a100",)
    assert _config("check", "k.cu").gpu == Config().gpu  # (the default until a flag is given)
