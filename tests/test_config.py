from roofline_lsp.model.config import Config


def test_defaults_from_nothing():
    cfg, errors = Config.from_dict(None)
    assert errors == [] and cfg == Config()


def test_camel_case_and_nested_llm():
    cfg, errors = Config.from_dict(
        {
            "gpu": "a100",
            "compareGpus": ["rtx3080"],
            "backend": "auto",
            "llm": {"baseUrl": "http://127.0.0.1:9/v1", "maxConcurrency": 2, "mode": "hinted"},
        }
    )
    assert errors == []
    assert cfg.gpus == ("a100", "rtx3080")
    assert cfg.llm.base_url == "http://127.0.0.1:9/v1" and cfg.llm.max_concurrency == 2
    assert cfg.llm.mode == "hinted"


def test_invalid_values_name_the_key_and_keep_the_last_good_value():
    good, _ = Config.from_dict({"backend": "llm"})
    cfg, errors = good.merged({"backend": "gpt", "debounceMs": -1, "llm": {"timeout": "x"}})
    assert cfg.backend == "llm" and cfg.debounce_ms == good.debounce_ms
    keys = sorted(e.key for e in errors)
    assert keys == ["backend", "debounceMs", "llm.timeout"]
    assert "roofline.backend" in str(errors[[e.key for e in errors].index("backend")])


def test_per_glob_overrides():
    cfg, errors = Config.from_dict({"overrides": [{"files": "*.hip", "gpu": "mi300x"}]})
    assert errors == []
    assert cfg.for_file("/src/k.hip").gpu == "mi300x"
    assert cfg.for_file("/src/k.cu").gpu == "h100"


def test_bad_override_rejected():
    _, errors = Config.from_dict({"overrides": [{"files": "*.cu", "backend": "nope"}]})
    assert [e.key for e in errors] == ["overrides"]


def test_build_compiler_is_nvcc_or_clang():
    cfg, errors = Config.from_dict({"buildCompiler": "clang"})
    assert errors == [] and cfg.build_compiler == "clang"
    kept, errors = cfg.merged({"buildCompiler": "gcc"})
    assert kept.build_compiler == "clang"
    assert [e.key for e in errors] == ["buildCompiler"] and "nvcc, clang" in str(errors[0])
