"""LLM backend: ask any OpenAI-compatible chat-completions endpoint whether a kernel is
compute- or bandwidth-bound (the paper's zero-shot, few-shot and hinted modes; a fine-tuned
model is just another model name).

Pure analysis: knows nothing of LSP. The server and the CLI call :meth:`LlmBackend.verdict`
in background tasks; it never blocks the caller beyond its own awaiting, shares one request
between concurrent callers asking about the same kernel, is cancelled with its awaiting task,
and caches answers on disk keyed by the kernel's normalised text (a comment-only edit hits).

The API key is read once from the configured environment variable and given to the HTTP
client only: it never appears in prompts, logs, cache keys or files, or error messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import email.utils
import json
import logging
import os
import random
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from roofline_lsp.estimate.roofline import Inputs
from roofline_lsp.evaluation.dataset import DatasetError
from roofline_lsp.llm.answers import (
    AnswerError,
    answer_to_verdict,
    checked_portable,
    parse_answer,
    portable_answer,
)
from roofline_lsp.llm.examples import Example, ExampleIndex, bundled_examples, load_example_index
from roofline_lsp.llm.kernel_source import kernel_lines
from roofline_lsp.llm.prompting import PromptContext, build_prompt
from roofline_lsp.llm.templates import PROMPT_VERSION, answer_schema
from roofline_lsp.model.config import LlmConfig
from roofline_lsp.model.gpus import GpuProfile
from roofline_lsp.model.kernel import Detection, Kernel, LaunchSite
from roofline_lsp.model.verdict import Verdict
from roofline_lsp.store.cache import ResultCache

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 3  # HTTP attempts on 429 / 5xx / connection errors
MAX_RETRY_AFTER = 30.0  # seconds: a longer Retry-After is capped
NO_KEY = "no-key"  # sent to endpoints that need no key (llama.cpp, Ollama, vLLM)


class LlmError(Exception):
    """The LLM gave no usable verdict: a one-line, key-free reason."""


@dataclass
class LlmStats:
    requests: int = 0  # HTTP requests sent, retries included
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    errors: int = 0  # verdict() calls that ended in LlmError
    cancelled: int = 0  # requests cancelled before they finished

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, int]:
        return {**dataclasses.asdict(self), "tokens": self.tokens}


class _Secrets:
    """Strings that must never leave the process in a message."""

    def __init__(self, values: Sequence[str]) -> None:
        self.values = [v for v in values if v and len(v) >= 4 and v != NO_KEY]
        self.windows: set[str] = set()
        for v in self.values:
            if len(v) >= 12:
                self.windows.update(v[i : i + 12] for i in range(len(v) - 11))

    def scrub(self, text: str) -> str:
        for v in self.values:
            text = text.replace(v, "***")
        if self.windows:

            def hide(m: re.Match[str]) -> str:
                tok = m.group(0)
                if any(tok[i : i + 12] in self.windows for i in range(len(tok) - 11)):
                    return "***"
                return tok

            text = re.sub(r"\S{12,}", hide, text)
        return text


@dataclass
class _Inflight:
    task: asyncio.Task[dict[str, Any]]
    waiters: int = 0


@dataclass
class _Params:
    """Request parameters adapted to what the endpoint accepts (learnt from 400s)."""

    schema: bool = True
    token_param: str = "max_tokens"
    temperature: bool = True
    reasoning: bool = True
    adapted: list[str] = field(default_factory=list)


_ENV_REF = re.compile(r"\$\{env:([A-Za-z_][A-Za-z_0-9]*)\}")


class LlmBackend:
    """Verdicts from an OpenAI-compatible chat-completions endpoint.

    ``env`` is where the API key (``config.api_key_env``) and ``${env:NAME}`` references in
    header values are looked up (default ``os.environ``). ``cache`` defaults to a
    :class:`ResultCache` in ``config.cache_dir``; ``backoff`` is the base delay (seconds) of
    the exponential backoff when the endpoint gives no ``Retry-After``.
    """

    def __init__(
        self,
        config: LlmConfig,
        env: Mapping[str, str] | None = None,
        *,
        cache: ResultCache | None = None,
        backoff: float = 1.0,
    ) -> None:
        # openai is imported here, not at the top: it takes 1-3 s to import, and the engine
        # imports this module even when no LLM is configured.
        import openai

        self.config = config
        env = os.environ if env is None else env
        key = env.get(config.api_key_env) or ""
        headers = {
            k: _ENV_REF.sub(lambda m: env.get(m.group(1), ""), v) for k, v in config.headers.items()
        }
        secret_headers = [v for k, v in headers.items() if v != config.headers.get(k)]
        self._secrets = _Secrets([key, *secret_headers])
        self.has_key = bool(key)
        self.cache = cache or ResultCache(
            config.cache_dir or None, namespace="llm", size_limit_mb=config.cache_size_mb
        )
        self.stats = LlmStats()
        self.backoff = backoff
        self._params = _Params(reasoning=bool(config.reasoning_effort))
        if config.reasoning_effort:
            self._params.token_param = "max_completion_tokens"
            self._params.temperature = False
        self._sem = asyncio.Semaphore(config.max_concurrency)
        self._inflight: dict[str, _Inflight] = {}
        self._examples: ExampleIndex | None = None
        self._examples_lock: asyncio.Lock | None = None
        self._closed = False
        self._client: Any = None
        self.init_error: str | None = None  # a configuration problem, reported by verdict()
        try:
            scheme = urlsplit(config.base_url).scheme if "://" in config.base_url else ""
        except ValueError:
            scheme = "http"  # malformed: the client's own parser says why below
        if scheme not in ("http", "https"):
            self.init_error = (
                f"base URL must start with http:// or https:// (got {config.base_url[:80]!r})"
            )
            return
        try:
            self._client = openai.AsyncOpenAI(
                api_key=key or NO_KEY,
                base_url=config.base_url,
                timeout=config.timeout,
                max_retries=0,
                default_headers=headers or None,
            )
        except Exception as e:
            reason = self._secrets.scrub(" ".join(str(e).split()))[:120]
            self.init_error = f"invalid base URL {config.base_url[:80]!r}: {reason}"

    def __repr__(self) -> str:  # never show the client (it holds the key)
        return f"LlmBackend(model={self.config.model!r}, base_url={self.config.base_url!r})"

    # -- public -----------------------------------------------------------------------------
    async def verdict(
        self,
        kernel: Kernel,
        detection: Detection,
        gpu: GpuProfile,
        static: Verdict | None = None,
        measured: Verdict | None = None,
        launch: LaunchSite | None = None,
        *,
        inputs: Inputs | None = None,
    ) -> Verdict:
        """The model's verdict on ``kernel`` for ``gpu`` (source ``"llm"``).

        Raises :class:`LlmError` when the endpoint gives no valid answer after the retry
        policy; cancelling the awaiting task cancels the HTTP request (unless another caller
        is waiting for the same kernel).
        """
        if self._closed:
            raise LlmError("the LLM backend is closed")
        if self.init_error is not None:
            self.stats.errors += 1
            raise LlmError(self.init_error)
        try:
            ctx = await self.prompt(kernel, detection, gpu, static, measured, launch, inputs)
        except LlmError:
            self.stats.errors += 1
            raise
        extra: dict[str, object] = {
            "model": self.config.model,
            "mode": self.config.mode,
            "prompt_version": PROMPT_VERSION,
        }
        cached = self.cache.get(ctx.key)
        if isinstance(cached, dict):
            try:
                portable = checked_portable(cached)
            except AnswerError:
                portable = None
            if portable is not None:
                self.stats.cache_hits += 1
                return answer_to_verdict(
                    portable, ctx, kernel, gpu, static, {**extra, "cached": True}
                )
        portable = await self._shared(ctx)
        return answer_to_verdict(portable, ctx, kernel, gpu, static, {**extra, "cached": False})

    async def prompt(
        self,
        kernel: Kernel,
        detection: Detection,
        gpu: GpuProfile,
        static: Verdict | None = None,
        measured: Verdict | None = None,
        launch: LaunchSite | None = None,
        inputs: Inputs | None = None,
    ) -> PromptContext:
        """The prompt and cache key this backend would use for ``kernel``."""
        mode = self.config.mode
        examples: list[Example] = []
        key_context: dict[str, Any] = {
            "base_url": _url_identity(self.config.base_url),
            "temperature": self.config.temperature,
            "reasoning_effort": self.config.reasoning_effort,
        }
        if mode == "few-shot":
            examples = list(bundled_examples())
            if self.config.dataset and self.config.few_shot_k > 0:
                index = await self._example_index()
                first, lines = kernel_lines(kernel, detection)
                examples += index.nearest(
                    "\n".join(lines), self.config.few_shot_k, file=kernel.file, line=kernel.line
                )
                key_context["dataset"] = index.identity
                key_context["k"] = self.config.few_shot_k
        return build_prompt(
            kernel,
            detection,
            gpu,
            mode=mode,
            model=self.config.model,
            static=static,
            measured=measured,
            launch=launch,
            inputs=inputs,
            examples=examples,
            key_context=key_context,
        )

    def in_flight(self) -> int:
        return len(self._inflight)

    async def aclose(self) -> None:
        """Cancel requests still running and close the HTTP client and the cache."""
        self._closed = True
        tasks = [e.task for e in self._inflight.values()]
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await t
        self._inflight.clear()
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.close()
        self.cache.close()

    # -- few-shot ---------------------------------------------------------------------------
    async def _example_index(self) -> ExampleIndex:
        if self._examples is not None:
            return self._examples
        if self._examples_lock is None:
            self._examples_lock = asyncio.Lock()
        async with self._examples_lock:
            if self._examples is None:
                assert self.config.dataset is not None
                try:
                    self._examples = await asyncio.to_thread(
                        load_example_index, self.config.dataset
                    )
                except (OSError, DatasetError) as e:
                    raise LlmError(f"few-shot dataset: {e}") from None
        return self._examples

    # -- requests ---------------------------------------------------------------------------
    async def _shared(self, ctx: PromptContext) -> dict[str, Any]:
        entry = self._inflight.get(ctx.key)
        if entry is None:
            task = asyncio.get_running_loop().create_task(self._fetch(ctx))
            entry = _Inflight(task)
            self._inflight[ctx.key] = entry

            def forget(_t: asyncio.Task[dict[str, Any]], key: str = ctx.key) -> None:
                if self._inflight.get(key) is entry:
                    del self._inflight[key]

            task.add_done_callback(forget)
        entry.waiters += 1
        try:
            return await asyncio.shield(entry.task)
        except asyncio.CancelledError:
            entry.waiters -= 1
            if entry.waiters <= 0 and not entry.task.done():
                entry.task.cancel()
                self.stats.cancelled += 1
            raise
        except LlmError:
            entry.waiters -= 1
            raise
        else:
            entry.waiters -= 1

    async def _fetch(self, ctx: PromptContext) -> dict[str, Any]:
        unexpected: str | None = None
        try:
            answer = await self._ask(ctx)
        except LlmError as e:
            self.stats.errors += 1
            log.info("LLM: %s: %s", ctx.kernel_name, e)
            raise
        except Exception as e:  # never crash the caller on something unforeseen
            unexpected = self._secrets.scrub(f"unexpected {type(e).__name__}: {e}")[:200]
        if unexpected is not None:
            self.stats.errors += 1
            log.info("LLM: %s: %s", ctx.kernel_name, unexpected)
            raise LlmError(" ".join(unexpected.split()))
        portable = portable_answer(answer, ctx)
        self.cache.set(ctx.key, portable)
        return portable

    def _request_args(self, messages: Sequence[dict[str, str]]) -> dict[str, Any]:
        cfg, p = self.config, self._params
        args: dict[str, Any] = {"model": cfg.model, "messages": list(messages)}
        args[p.token_param] = cfg.max_tokens
        if p.temperature and cfg.temperature is not None:
            args["temperature"] = cfg.temperature
        if p.reasoning and cfg.reasoning_effort:
            args["reasoning_effort"] = cfg.reasoning_effort
        if p.schema:
            args["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": "roofline_verdict",
                    "strict": True,
                    "schema": answer_schema(),
                },
            }
        return args

    def _adapt(self, message: str, args: Mapping[str, Any]) -> bool:
        """Drop or rename a parameter the endpoint rejected (400/422); True if changed."""
        m = message.lower()
        p = self._params
        if "response_format" in args and ("response_format" in m or "json_schema" in m):
            p.schema = False
            p.adapted.append("response_format")
            return True
        if "max_tokens" in args and "max_tokens" in m and "max_completion_tokens" in m:
            p.token_param = "max_completion_tokens"
            p.adapted.append("max_tokens")
            return True
        if "temperature" in args and "temperature" in m:
            p.temperature = False
            p.adapted.append("temperature")
            return True
        if "reasoning_effort" in args and "reasoning" in m:
            p.reasoning = False
            p.adapted.append("reasoning_effort")
            return True
        return False

    async def _ask(self, ctx: PromptContext) -> dict[str, Any]:
        """One answer, following the retry policy. Failures raise LlmError outside any
        ``except`` block, so the error carries no chained SDK exception (whose request
        holds the key)."""
        messages: list[dict[str, str]] = list(ctx.messages)
        counts = {"transient": 0, "timeouts": 0, "invalid": 0, "adaptations": 0}
        while True:
            args = self._request_args(messages)
            async with self._sem:
                self.stats.requests += 1
                log.debug("LLM request: %s (%d chars)", ctx.kernel_name, ctx.chars)
                completion, fail, delay = await self._send(args, counts)
            if fail is not None:
                raise LlmError(fail)
            if completion is None:
                if delay > 0:
                    await asyncio.sleep(delay)
                continue
            self._count_usage(completion)
            content, finish = _content(completion)
            reason: str | None = None
            try:
                return parse_answer(content, ctx.first_line, ctx.last_line)
            except AnswerError as e:
                reason = str(e)
            counts["invalid"] += 1
            if finish == "length":
                reason += " (the reply was cut at max tokens)"
            if counts["invalid"] > 1:
                raise LlmError(f"invalid answer twice: {reason}")
            log.debug("LLM: invalid answer for %s (%s); asking again", ctx.kernel_name, reason)
            messages = list(ctx.messages)
            if content and content.strip():
                messages.append({"role": "assistant", "content": content[:4000]})
            messages.append(
                {
                    "role": "user",
                    "content": f"That reply was not valid ({reason}). Reply with only the "
                    'JSON object: {"bound": "compute" or "bandwidth", "confidence": 0..1, '
                    '"arithmetic_intensity": number or null, "rationale": string, '
                    '"suggestions": [{"line": number, "message": string}]}.',
                }
            )

    async def _send(
        self, args: dict[str, Any], counts: dict[str, int]
    ) -> tuple[Any, str | None, float]:
        """One HTTP request: ``(completion, None, 0)``, or ``(None, None, delay)`` to try
        again after ``delay`` seconds, or ``(None, message, 0)`` to give up."""
        import openai  # already loaded by __init__; imported here to stay lazy

        try:
            return await self._client.chat.completions.create(**args), None, 0.0
        except openai.APITimeoutError:
            counts["timeouts"] += 1
            if counts["timeouts"] > 1:
                return None, f"no answer within {self.config.timeout:g} s (tried twice)", 0.0
            return None, None, 0.0
        except openai.APIStatusError as e:
            status = e.status_code
            detail = self._detail(e)
            if status in (400, 422) and counts["adaptations"] < 4 and self._adapt(detail, args):
                counts["adaptations"] += 1
                log.info("LLM endpoint rejected a parameter; retrying without it")
                return None, None, 0.0
            if status in (408, 409, 429) or status >= 500:
                counts["transient"] += 1
                n = counts["transient"]
                if n >= MAX_ATTEMPTS:
                    msg = f"HTTP {status} from {self._host()} after {n} attempts"
                    return None, msg + (f": {detail}" if detail else ""), 0.0
                return None, None, self._retry_delay(e.response, n)
            return None, self._status_message(status, detail), 0.0
        except openai.APIConnectionError:
            counts["transient"] += 1
            n = counts["transient"]
            if n >= MAX_ATTEMPTS:
                return None, f"cannot connect to {self._host()} ({n} attempts)", 0.0
            return None, None, self._retry_delay(None, n)
        except openai.APIError as e:  # e.g. a body that is not a completion
            counts["invalid"] += 1
            if counts["invalid"] > 1:
                return None, "invalid response: " + self._detail(e), 0.0
            return None, None, 0.0

    # -- helpers ----------------------------------------------------------------------------
    def _count_usage(self, completion: Any) -> None:
        usage = getattr(completion, "usage", None)
        if usage is None:
            return
        self.stats.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        self.stats.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)

    def _host(self) -> str:
        return _url_identity(self.config.base_url)

    def _detail(self, e: Any) -> str:
        """The server's error message, one line, short, secrets removed."""
        body = getattr(e, "body", None)
        msg = ""
        if isinstance(body, dict):
            m = body.get("message") or body.get("error") or body.get("detail")
            msg = m if isinstance(m, str) else json.dumps(m)[:300] if m else ""
        elif isinstance(body, str):
            msg = body
        if not msg:
            msg = getattr(e, "message", "") or ""
        msg = " ".join(str(msg).split())
        msg = self._secrets.scrub(msg)
        return msg if len(msg) <= 200 else msg[:199] + "…"

    def _status_message(self, status: int, detail: str) -> str:
        host = self._host()
        if status == 401:
            hint = (
                f"check ${self.config.api_key_env}"
                if self.has_key
                else f"set ${self.config.api_key_env}"
            )
            return f"HTTP 401 from {host}: authentication failed ({hint})"
        if status == 403:
            return f"HTTP 403 from {host}: access denied" + (f": {detail}" if detail else "")
        if status == 404:
            return f"HTTP 404 from {host}: model {self.config.model!r} or endpoint not found" + (
                f" ({detail})" if detail else ""
            )
        return f"HTTP {status} from {host}" + (f": {detail}" if detail else "")

    def _retry_delay(self, response: Any, attempt: int) -> float:
        headers = getattr(response, "headers", None)
        if headers is not None:
            ms = headers.get("retry-after-ms")
            if ms:
                try:
                    return min(max(float(ms) / 1000.0, 0.0), MAX_RETRY_AFTER)
                except ValueError:
                    pass
            ra = headers.get("retry-after")
            if ra:
                seconds = _parse_retry_after(ra)
                if seconds is not None:
                    return min(max(seconds, 0.0), MAX_RETRY_AFTER)
        factor: int = 2 ** (attempt - 1)
        base = self.backoff * factor
        return min(base * (1.0 + 0.25 * random.random()), MAX_RETRY_AFTER)


def _parse_retry_after(value: str) -> float | None:
    value = value.strip()
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return when.timestamp() - time.time()


def _content(completion: Any) -> tuple[str | None, str | None]:
    choices = getattr(completion, "choices", None)
    if not choices:
        return None, None
    choice = choices[0]
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None) if message is not None else None
    return (content if isinstance(content, str) else None), getattr(choice, "finish_reason", None)


def _url_identity(url: str) -> str:
    """``host[:port]/path`` of a base URL, without credentials or query."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "the endpoint"
        if parts.port:
            host += f":{parts.port}"
    except ValueError:
        return "the endpoint"
    return host + parts.path.rstrip("/")
