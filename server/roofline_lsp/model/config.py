"""The one typed configuration object, shared by the CLI and the server.

Clients send camelCase keys (``initializationOptions`` or the ``roofline`` section of
``workspace/configuration``); the CLI builds the same object from its flags. ``Config.from_dict``
validates and collects every problem as a :class:`ConfigError` naming the key, keeping the
previous (or default) value for that key.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

Backend = Literal["static", "llm", "auto"]
Mode = Literal["zero-shot", "few-shot", "hinted"]
CountsMode = Literal["source", "compiler", "auto"]
BuildCompiler = Literal["nvcc", "clang"]

BACKENDS: tuple[str, ...] = ("static", "llm", "auto")
MODES: tuple[str, ...] = ("zero-shot", "few-shot", "hinted")
COUNTS_MODES: tuple[str, ...] = ("source", "compiler", "auto")
BUILD_COMPILERS: tuple[str, ...] = ("nvcc", "clang")


class ConfigError(ValueError):
    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"roofline.{key}: {message}")
        self.key = key


@dataclass(frozen=True)
class LlmConfig:
    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    mode: Mode = "zero-shot"
    timeout: float = 60.0  # seconds per request
    max_concurrency: int = 4
    max_tokens: int = 1024
    temperature: float | None = 0.1
    reasoning_effort: str | None = None  # "low" | "medium" | "high" where the model takes one
    headers: dict[str, str] = field(default_factory=dict)
    dataset: str | None = None  # labelled dataset folder for few-shot retrieval
    few_shot_k: int = 3
    cache_dir: str | None = None  # None: default (checkout's cache/ or user cache dir)
    cache_size_mb: int = 256


@dataclass(frozen=True)
class Config:
    gpu: str = "h100"
    compare_gpus: tuple[str, ...] = ()
    backend: Backend = "static"
    counts: CountsMode = "auto"
    llm: LlmConfig = field(default_factory=LlmConfig)
    profile: str | None = None  # Nsight Compute CSV export
    gpu_profiles: str | None = None  # user TOML file adding/overriding GPU profiles
    args: str | None = None  # program arguments / hint values, e.g. "n=1<<20"
    nvcc: str | None = None  # path to nvcc; found automatically when unset
    # the compiler that builds the program's CUDA code, whose math-library defaults the counts
    # follow: nvcc's sqrtf is IEEE-rounded (-prec-sqrt=true), clang's is libdevice's
    # approximation (it does not set __CUDA_PREC_SQRT). OpenMP regions are clang's either way.
    build_compiler: BuildCompiler = "nvcc"
    debounce_ms: int = 60
    max_file_bytes: int = 4_000_000
    overrides: tuple[dict[str, Any], ...] = ()  # [{"files": "*.hip", "gpu": "mi300x"}, ...]

    @property
    def gpus(self) -> tuple[str, ...]:
        """The target GPU followed by the comparison GPUs, without repeats."""
        out = [self.gpu]
        for g in self.compare_gpus:
            if g.lower() not in (o.lower() for o in out):
                out.append(g)
        return tuple(out)

    def for_file(self, path: str) -> Config:
        """Apply the per-glob overrides that match ``path``."""
        cfg = self
        for ov in self.overrides:
            pattern = str(ov.get("files", ""))
            if pattern and (
                fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(path.rsplit("/", 1)[-1], pattern)
            ):
                rest = {k: v for k, v in ov.items() if k != "files"}
                cfg, _ = cfg.merged(rest)
        return replace(cfg, overrides=self.overrides)

    def merged(self, data: dict[str, Any] | None) -> tuple[Config, list[ConfigError]]:
        """A copy with the camelCase settings in ``data`` applied; invalid keys keep their
        current value and are reported."""
        errors: list[ConfigError] = []
        if not data:
            return self, errors
        if not isinstance(data, dict):
            return self, [ConfigError("", f"expected an object, got {type(data).__name__}")]
        updates: dict[str, Any] = {}
        for key, value in data.items():
            name = _snake(key)
            if name == "llm":
                llm, errs = _merge_llm(self.llm, value)
                updates["llm"] = llm
                errors.extend(errs)
                continue
            if name not in _TOP:
                continue  # unknown keys are ignored (forward compatibility)
            try:
                updates[name] = _validate(name, value)
            except ConfigError as e:
                errors.append(e)
        return replace(self, **updates), errors

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> tuple[Config, list[ConfigError]]:
        return cls().merged(data)


_TOP = {f.name for f in fields(Config)}
_LLM = {f.name for f in fields(LlmConfig)}


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key).replace("-", "_")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


def _merge_llm(current: LlmConfig, data: Any) -> tuple[LlmConfig, list[ConfigError]]:
    if data is None:
        return current, []
    if not isinstance(data, dict):
        return current, [ConfigError("llm", "expected an object")]
    errors: list[ConfigError] = []
    updates: dict[str, Any] = {}
    for key, value in data.items():
        name = _snake(key)
        if name not in _LLM:
            continue
        try:
            updates[name] = _validate_llm(name, value)
        except ConfigError as e:
            errors.append(e)
    return replace(current, **updates), errors


def _choice(key: str, value: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(key, f"must be one of {', '.join(choices)} (got {value!r})")
    return value


def _number(key: str, value: Any, lo: float, hi: float, integer: bool = False) -> Any:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not lo <= value <= hi or (integer and int(value) != value):
        kind = "an integer" if integer else "a number"
        raise ConfigError(key, f"must be {kind} between {lo:g} and {hi:g} (got {value!r})")
    return int(value) if integer else float(value)


def _opt_str(key: str, value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ConfigError(key, f"must be a string (got {value!r})")
    return value


def _validate(name: str, value: Any) -> Any:
    key = _camel(name)
    if name == "gpu":
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(key, f"must be a GPU name (got {value!r})")
        return value.strip()
    if name == "compare_gpus":
        if isinstance(value, str):
            value = [v for v in value.split(",") if v.strip()]
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ConfigError(key, "must be a list of GPU names")
        return tuple(v.strip() for v in value)
    if name == "backend":
        return _choice(key, value, BACKENDS)
    if name == "counts":
        return _choice(key, value, COUNTS_MODES)
    if name == "build_compiler":
        return _choice(key, value, BUILD_COMPILERS)
    if name in ("profile", "gpu_profiles", "args", "nvcc"):
        return _opt_str(key, value)
    if name == "debounce_ms":
        return _number(key, value, 0, 10_000, integer=True)
    if name == "max_file_bytes":
        return _number(key, value, 1, 1 << 31, integer=True)
    if name == "overrides":
        if not isinstance(value, list | tuple) or not all(
            isinstance(o, dict) and isinstance(o.get("files"), str) for o in value
        ):
            raise ConfigError(key, 'must be a list of objects like {"files": "*.hip", ...}')
        for o in value:
            _, errs = Config().merged({k: v for k, v in o.items() if k != "files"})
            if errs:
                raise ConfigError(key, str(errs[0]))
        return tuple(value)
    raise ConfigError(key, "unknown setting")  # pragma: no cover - guarded by _TOP


def _validate_llm(name: str, value: Any) -> Any:
    key = "llm." + _camel(name)
    if name == "mode":
        return _choice(key, value, MODES)
    if name in ("base_url", "model", "api_key_env"):
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(key, f"must be a non-empty string (got {value!r})")
        return value.strip()
    if name == "timeout":
        return _number(key, value, 0.1, 3600)
    if name == "max_concurrency":
        return _number(key, value, 1, 64, integer=True)
    if name == "max_tokens":
        return _number(key, value, 16, 200_000, integer=True)
    if name == "few_shot_k":
        return _number(key, value, 0, 20, integer=True)
    if name == "cache_size_mb":
        return _number(key, value, 1, 100_000, integer=True)
    if name == "temperature":
        return None if value is None else _number(key, value, 0, 2)
    if name in ("reasoning_effort", "dataset", "cache_dir"):
        return _opt_str(key, value)
    if name == "headers":
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise ConfigError(key, "must be an object of string header values")
        return dict(value)
    raise ConfigError(key, "unknown setting")  # pragma: no cover
