"""A size-bounded disk cache of JSON values (``diskcache``), shared by the LLM backend and the
compiler-count helper, each under its own namespace.

Values are stored as JSON text, never pickled, so a tampered cache file cannot run code. A
cache that cannot be opened, read or written (corrupt database, read-only or unwritable
directory, full disk) degrades to no cache: one warning is logged and every ``get`` misses.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

import diskcache

log = logging.getLogger(__name__)

DEFAULT_SIZE_MB = 256
_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # the roofline_lsp package


def default_cache_dir() -> str:
    """``<checkout>/cache`` when running from a source checkout (``pyproject.toml`` and a
    ``cache/`` directory two levels above the package), else the user cache directory
    (``$XDG_CACHE_HOME/roofline-lsp`` or ``~/.cache/roofline-lsp``)."""
    root = _PACKAGE_DIR.parent.parent
    if (root / "pyproject.toml").is_file() and (root / "cache").is_dir():
        return str(root / "cache")
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return str(base / "roofline-lsp")


class ResultCache:
    """``get``/``set`` of JSON-serialisable values under ``namespace`` in a diskcache directory.

    Opening is lazy (first ``get``/``set``), so building one costs nothing when unused.
    Thread-safe and process-safe (diskcache uses SQLite).
    """

    def __init__(
        self,
        directory: str | None = None,
        namespace: str = "llm",
        size_limit_mb: int = DEFAULT_SIZE_MB,
    ) -> None:
        self.directory = directory or default_cache_dir()
        self.namespace = namespace
        self.size_limit = int(size_limit_mb) * 1024 * 1024
        self._cache: Any = None
        self._disabled = False
        self._warned = False
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return not self._disabled

    def _key(self, key: str) -> str:
        return f"{self.namespace}:{key}"

    def _open(self) -> Any:
        if self._disabled:
            return None
        with self._lock:
            if self._cache is None and not self._disabled:
                try:
                    os.makedirs(self.directory, exist_ok=True)
                    self._cache = diskcache.Cache(
                        self.directory,
                        size_limit=self.size_limit,
                        eviction_policy="least-recently-stored",
                    )
                except Exception as e:
                    self._fail(e)
        return self._cache

    def _fail(self, error: BaseException) -> None:
        self._disabled = True
        cache, self._cache = self._cache, None
        if cache is not None:
            with contextlib.suppress(Exception):
                cache.close()
        if not self._warned:
            self._warned = True
            reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
            log.warning(
                "cache %s unusable (%s): continuing without a cache",
                self.directory,
                reason.splitlines()[0] if reason else type(error).__name__,
            )

    def get(self, key: str) -> Any | None:
        """The value stored under ``key``, or None (miss, unusable cache, undecodable value)."""
        cache = self._open()
        if cache is None:
            return None
        try:
            raw = cache.get(self._key(key))
        except Exception as e:
            self._fail(e)
            return None
        if not isinstance(raw, str):
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return None

    def set(self, key: str, value: Any) -> bool:
        """Store ``value`` (JSON-serialisable); False when it could not be stored."""
        try:
            text = json.dumps(value, separators=(",", ":"), sort_keys=True)
        except (TypeError, ValueError):
            return False
        cache = self._open()
        if cache is None:
            return False
        try:
            return bool(cache.set(self._key(key), text))
        except Exception as e:
            self._fail(e)
            return False

    def set_many(self, items: list[tuple[str, Any]]) -> int:
        """Store every ``(key, value)`` in one transaction (one commit, not one per value);
        how many were stored."""
        texts: list[tuple[str, str]] = []
        for key, value in items:
            try:
                texts.append((key, json.dumps(value, separators=(",", ":"), sort_keys=True)))
            except (TypeError, ValueError):
                continue
        cache = self._open()
        if cache is None or not texts:
            return 0
        try:
            with cache.transact():
                for key, text in texts:
                    cache.set(self._key(key), text)
        except Exception as e:
            self._fail(e)
            return 0
        return len(texts)

    def delete(self, key: str) -> None:
        cache = self._open()
        if cache is None:
            return
        try:
            cache.delete(self._key(key))
        except Exception as e:
            self._fail(e)

    def close(self) -> None:
        with self._lock:
            cache, self._cache = self._cache, None
        if cache is not None:
            with contextlib.suppress(Exception):
                cache.close()
