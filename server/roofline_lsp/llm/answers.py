"""Answer handling: the JSON object in a model's reply, validated and cleaned; the answer as
cached (suggestion lines relative to the kernel, so they survive edits that move lines);
and the :class:`Verdict` it becomes.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from roofline_lsp.llm.prompting import PromptContext
from roofline_lsp.model.gpus import GpuProfile
from roofline_lsp.model.kernel import Kernel
from roofline_lsp.model.verdict import Suggestion, Verdict, classify_bound

MAX_SUGGESTIONS = 10
MAX_RATIONALE = 2_000
MAX_MESSAGE = 400


class AnswerError(ValueError):
    """The message content is not a valid answer (why, in a few words)."""


_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_FENCED_JSON = re.compile(r"```+(?:json|JSON)?\s*\n(.*?)\n\s*```+", re.S)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def extract_json(text: str | None) -> dict[str, Any]:
    """The answer object in message content: the whole text, a fenced ```json block, or the
    first JSON object embedded in prose (after dropping ``<think>`` blocks)."""
    if text is None or not text.strip():
        raise AnswerError("empty reply")
    text = _THINK.sub("", text).strip()
    candidates = [text]
    candidates += [m.group(1) for m in _FENCED_JSON.finditer(text)]
    for cand in candidates:
        try:
            doc = json.loads(cand)
        except ValueError:
            continue
        if isinstance(doc, dict):
            return doc
    decoder = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            doc, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(doc, dict) and "bound" in doc:
            return doc
    raise AnswerError("no JSON object in the reply")


def _bound(value: Any) -> str:
    if not isinstance(value, str):
        raise AnswerError("'bound' is missing or not a string")
    v = value.strip().lower().replace("_", "-")
    v = re.sub(r"[\s-]*bound$", "", v).strip()
    if v in ("compute", "bandwidth"):
        return v
    if v in ("memory", "memory-bandwidth", "dram"):
        return "bandwidth"
    raise AnswerError(f"'bound' must be compute or bandwidth (got {value[:40]!r})")


def _clean(text: str, limit: int) -> str:
    text = _CONTROL.sub(" ", text)
    text = re.sub(r"[ \t]+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                return None
        else:
            return None
    x = float(value)
    return x if math.isfinite(x) else None


def validate_answer(doc: Any, first_line: int, last_line: int) -> dict[str, Any]:
    """A clean answer: ``bound`` required; ``confidence`` (0..1, default 0.5),
    ``arithmetic_intensity`` (>= 0 or None), ``rationale``, ``suggestions`` (lines clamped
    to ``first_line..last_line``) defaulted or dropped when invalid; other keys dropped."""
    if not isinstance(doc, dict):
        raise AnswerError("the reply is not a JSON object")
    bound = _bound(doc.get("bound"))
    conf = _finite(doc.get("confidence"))
    if conf is None:
        conf = 0.5
    elif 1.0 < conf <= 100.0:
        conf = conf / 100.0  # a percentage
    conf = min(1.0, max(0.0, conf))
    ai = _finite(doc.get("arithmetic_intensity"))
    if ai is not None and ai < 0:
        ai = None
    rationale = doc.get("rationale")
    rationale = _clean(rationale, MAX_RATIONALE) if isinstance(rationale, str) else ""
    suggestions: list[dict[str, Any]] = []
    raw = doc.get("suggestions")
    if isinstance(raw, list):
        for item in raw:
            if not isinstance(item, dict):
                continue
            line = _finite(item.get("line"))
            message = item.get("message")
            if line is None or not isinstance(message, str) or not message.strip():
                continue
            line_i = min(max(int(line), first_line), last_line)
            suggestions.append({"line": line_i, "message": _clean(message, MAX_MESSAGE)})
            if len(suggestions) >= MAX_SUGGESTIONS:
                break
    return {
        "bound": bound,
        "confidence": conf,
        "arithmetic_intensity": ai,
        "rationale": rationale,
        "suggestions": suggestions,
    }


def parse_answer(content: str | None, first_line: int, last_line: int) -> dict[str, Any]:
    return validate_answer(extract_json(content), first_line, last_line)


def portable_answer(answer: dict[str, Any], ctx: PromptContext) -> dict[str, Any]:
    """The answer as cached: suggestion lines as (offset from the kernel's line, normalised
    text of that line), so a cache hit after an edit that moved lines finds them again."""
    out = dict(answer)
    out["suggestions"] = [
        {
            "offset": s["line"] - ctx.first_line,
            "text": ctx.line_texts.get(s["line"], ""),
            "message": s["message"],
        }
        for s in answer["suggestions"]
    ]
    return out


def place_suggestions(portable: dict[str, Any], ctx: PromptContext) -> list[Suggestion]:
    out = []
    for s in portable.get("suggestions") or []:
        if not isinstance(s, dict) or not isinstance(s.get("message"), str):
            continue
        offset = s.get("offset")
        want = ctx.first_line + (offset if isinstance(offset, int) else 0)
        text = s.get("text")
        if text:
            same = [ln for ln, t in ctx.line_texts.items() if t == text]
            if same:
                want = min(same, key=lambda ln: abs(ln - want))
        line = min(max(want, ctx.first_line), ctx.last_line)
        out.append(Suggestion(line=line, message=s["message"]))
    return out


def answer_to_verdict(
    portable: dict[str, Any],
    ctx: PromptContext,
    kernel: Kernel,
    gpu: GpuProfile,
    static: Verdict | None,
    extra: dict[str, object],
) -> Verdict:
    ridge = gpu.ridges()
    ai: dict[str, float | None] = {p: None for p in ridge}
    if static is not None:
        ai.update({p: a for p, a in static.ai.items() if p in ai})
    bound = portable["bound"]
    llm_ai = portable.get("arithmetic_intensity")
    precision = ctx.precision
    if isinstance(llm_ai, int | float) and precision in ai:
        ai[precision] = float(llm_ai)
    deciding: str | None = None
    a, r = ai.get(precision), ridge.get(precision)
    if a is not None and r and (a >= r) == (bound == "compute"):
        deciding = precision
    if deciding is None:
        b, d = classify_bound(ai, ridge)
        deciding = d if b == bound and d is not None else None
    rationale = portable.get("rationale") or f"{bound}-bound according to the model"
    return Verdict(
        kernel=kernel.name,
        gpu=gpu.name,
        bound=bound,
        source="llm",
        confidence=float(portable.get("confidence", 0.5)),
        ai=ai,
        ridge=ridge,
        deciding=deciding,
        rationale=rationale,
        suggestions=tuple(place_suggestions(portable, ctx)),
        extra={**extra, "llm_ai": llm_ai, "llm_precision": precision},
    )


def checked_portable(doc: dict[str, Any]) -> dict[str, Any]:
    """A cached answer re-validated (the cache directory is not trusted)."""
    bound = _bound(doc.get("bound"))
    conf = _finite(doc.get("confidence"))
    ai = _finite(doc.get("arithmetic_intensity"))
    rationale = doc.get("rationale")
    sugg = []
    for s in doc.get("suggestions") or []:
        if isinstance(s, dict) and isinstance(s.get("message"), str):
            off = s.get("offset")
            text = s.get("text")
            sugg.append(
                {
                    "offset": off if isinstance(off, int) and not isinstance(off, bool) else 0,
                    "text": text if isinstance(text, str) else "",
                    "message": _clean(s["message"], MAX_MESSAGE),
                }
            )
    return {
        "bound": bound,
        "confidence": min(1.0, max(0.0, conf)) if conf is not None else 0.5,
        "arithmetic_intensity": ai if ai is not None and ai >= 0 else None,
        "rationale": _clean(rationale, MAX_RATIONALE) if isinstance(rationale, str) else "",
        "suggestions": sugg[:MAX_SUGGESTIONS],
    }
