"""lsp/settings.py: client settings -> Config, invalid keys restored and shown once."""

from __future__ import annotations

from lsp_helpers import FIXTURES
from lsprotocol import types as lsp

from roofline_lsp.lsp.language_server import RooflineServer
from roofline_lsp.lsp.settings import apply_settings, initialize, restore_setting, settings_section
from roofline_lsp.model.config import Config


def _init(options: object) -> RooflineServer:
    ls = RooflineServer()
    initialize(
        ls,
        lsp.InitializeParams(capabilities=lsp.ClientCapabilities(), initialization_options=options),
    )
    return ls


def test_settings_section_unwraps_roofline() -> None:
    assert settings_section({"roofline": {"gpu": "a100"}}) == {"gpu": "a100"}
    assert settings_section({"gpu": "a100"}) == {"gpu": "a100"}
    assert settings_section(None) is None


def test_restore_setting() -> None:
    old = Config(gpu="a100", debounce_ms=5)
    new = Config(gpu="h100", debounce_ms=7)
    assert restore_setting(new, old, "debounceMs").debounce_ms == 5
    assert restore_setting(new, old, "debounceMs").gpu == "h100"
    llm_old = Config().llm.__class__(model="m-old")
    restored = restore_setting(Config(), Config(llm=llm_old), "llm.model")
    assert restored.llm.model == "m-old"
    assert restore_setting(new, old, "") == old
    assert restore_setting(new, old, "noSuchKey") == new


def test_initialization_options_are_the_base() -> None:
    ls = _init({"roofline": {"gpu": "a100", "debounceMs": 10}})
    assert ls.ws.base_config.gpu == "a100" and ls.ws.config.debounce_ms == 10
    assert not ls.shown_errors


def test_invalid_initialization_options_are_shown_and_defaulted() -> None:
    ls = _init({"gpu": "no-such-gpu", "debounceMs": "soon"})
    assert ls.ws.config.gpu == Config().gpu and ls.ws.config.debounce_ms == Config().debounce_ms
    assert set(ls.shown_errors) == {"gpu", "debounceMs"}
    assert ls.shown_errors["gpu"].startswith("roofline.gpu: ")
    ls = _init(["not", "an", "object"])
    assert ls.shown_errors == {"": "roofline: initializationOptions must be an object"}


def test_settings_on_top_of_the_base_keep_the_last_valid_value() -> None:
    ls = _init({"debounceMs": 10})
    assert apply_settings(ls, {"gpu": "a100", "compareGpus": ["h100"]}) is True
    assert ls.ws.config.gpu == "a100" and ls.ws.config.debounce_ms == 10
    assert apply_settings(ls, {"gpu": "a100", "compareGpus": ["h100"]}) is False
    # a bad GPU keeps a100 and is shown; a bad comparison GPU is dropped
    assert apply_settings(ls, {"gpu": "nope", "compareGpus": ["h100", "nope2"]}) is False
    assert ls.ws.config.gpu == "a100" and ls.ws.config.compare_gpus == ("h100",)
    assert set(ls.shown_errors) == {"gpu", "compareGpus"}
    assert ls.shown_errors["compareGpus"] == "roofline.compareGpus: unknown GPU nope2"
    # valid again: the shown errors are forgotten (a new mistake is shown again)
    apply_settings(ls, {"gpu": "h100"})
    assert not ls.shown_errors
    assert apply_settings(ls, "nonsense") is False
    assert "" in ls.shown_errors


def test_gpu_change_resets_the_selected_gpu() -> None:
    ls = _init(None)
    ls.ws.gpu_override = "A100"
    apply_settings(ls, {"debounceMs": 5})
    assert ls.ws.gpu_override == "A100"
    apply_settings(ls, {"gpu": "a100"})
    assert ls.ws.gpu_override is None


def test_missing_profile_is_shown_with_its_path() -> None:
    ls = _init(None)
    good = str(FIXTURES / "scale_add_profile.csv")
    assert apply_settings(ls, {"profile": good}) is True
    missing = str(FIXTURES / "missing.csv")
    apply_settings(ls, {"profile": missing})
    assert ls.ws.config.profile == good
    assert ls.shown_errors["profile"] == f"roofline.profile: {missing}: No such file or directory"
