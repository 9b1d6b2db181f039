"""The prompt files shipped with the package (``prompts/``): the system and user templates,
the answer's JSON schema and the bundled few-shot examples, all of one ``PROMPT_VERSION``."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

PROMPT_VERSION = "v1"


@cache
def prompt_text(name: str) -> str:
    """A prompt file of the package, e.g. ``v1-system.md``."""
    return resources.files("roofline_lsp.llm").joinpath("prompts", name).read_text("utf-8")


@cache
def answer_schema() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(prompt_text(f"{PROMPT_VERSION}-answer-schema.json"))
    return doc
