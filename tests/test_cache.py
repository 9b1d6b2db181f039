"""The disk cache: JSON values under namespaces, size-bounded, degrading to no cache."""

from __future__ import annotations

import logging

import diskcache

from roofline_lsp.store import cache as cache_module
from roofline_lsp.store.cache import ResultCache, default_cache_dir


def test_round_trip_and_namespaces(tmp_path):
    llm = ResultCache(str(tmp_path), namespace="llm")
    ptx = ResultCache(str(tmp_path), namespace="ptx")
    assert llm.get("k") is None
    assert llm.set("k", {"bound": "compute", "n": [1, 2.5, None]})
    assert ptx.set("k", "other")
    assert llm.get("k") == {"bound": "compute", "n": [1, 2.5, None]}
    assert ptx.get("k") == "other"
    llm.delete("k")
    assert llm.get("k") is None and ptx.get("k") == "other"
    llm.close()
    ptx.close()
    # stored as JSON text, never pickled
    with diskcache.Cache(str(tmp_path)) as raw:
        assert raw.get("ptx:k") == '"other"'


def test_values_that_are_not_json_are_refused(tmp_path):
    c = ResultCache(str(tmp_path))
    assert c.set("k", {1, 2}) is False
    assert c.get("k") is None
    c.close()


def test_a_persisted_value_survives_reopening(tmp_path):
    c = ResultCache(str(tmp_path))
    c.set("k", [1, 2])
    c.close()
    assert ResultCache(str(tmp_path)).get("k") == [1, 2]


def test_undecodable_entry_is_a_miss(tmp_path):
    with diskcache.Cache(str(tmp_path)) as raw:
        raw.set("llm:k", "{not json")
    assert ResultCache(str(tmp_path)).get("k") is None


def test_size_is_bounded(tmp_path):
    c = ResultCache(str(tmp_path), size_limit_mb=1)
    for i in range(60):
        c.set(f"k{i}", "x" * 100_000)
    c.close()
    with diskcache.Cache(str(tmp_path)) as raw:
        assert raw.volume() < 2 * 1024 * 1024
        assert len(raw) < 60


def test_corrupt_database_degrades_with_one_warning(tmp_path, caplog):
    (tmp_path / "cache.db").write_bytes(b"this is not a sqlite database" * 100)
    c = ResultCache(str(tmp_path))
    with caplog.at_level(logging.WARNING):
        assert c.get("k") is None
        assert c.set("k", 1) is False
        assert c.get("k") is None
    assert not c.enabled
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "without a cache" in warnings[0].getMessage()


def test_unwritable_directory_degrades(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    c = ResultCache(str(blocker / "sub"))
    with caplog.at_level(logging.WARNING):
        assert c.set("k", 1) is False
        assert c.get("k") is None
    assert not c.enabled
    assert sum(r.levelno == logging.WARNING for r in caplog.records) == 1


def test_default_dir_in_a_checkout(tmp_path, monkeypatch):
    checkout = tmp_path / "checkout"
    pkg = checkout / "server" / "roofline_lsp"
    pkg.mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("[project]\n")
    monkeypatch.setattr(cache_module, "_PACKAGE_DIR", pkg)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == str(tmp_path / "xdg" / "roofline-lsp")  # no cache/ folder
    (checkout / "cache").mkdir()
    assert default_cache_dir() == str(checkout / "cache")


def test_default_dir_when_installed(tmp_path, monkeypatch):
    pkg = tmp_path / "site-packages" / "roofline_lsp"
    pkg.mkdir(parents=True)
    monkeypatch.setattr(cache_module, "_PACKAGE_DIR", pkg)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == str(tmp_path / "xdg" / "roofline-lsp")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == str(tmp_path / "home" / ".cache" / "roofline-lsp")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # not absolute: ignored (XDG spec)
    assert default_cache_dir() == str(tmp_path / "home" / ".cache" / "roofline-lsp")


def test_set_many_stores_all_in_one_go_and_skips_what_is_not_json(tmp_path):
    c = ResultCache(str(tmp_path), namespace="check")
    assert c.set_many([("a", {"x": 1}), ("b", object()), ("c", [1, 2])]) == 2
    assert c.get("a") == {"x": 1} and c.get("b") is None and c.get("c") == [1, 2]
    c.close()
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    assert ResultCache(str(blocked), namespace="check").set_many([("a", 1)]) == 0
