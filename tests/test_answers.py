"""Answer handling: the JSON in a reply, validated and cleaned."""

from __future__ import annotations

import pytest

from roofline_lsp.llm.answers import (
    MAX_SUGGESTIONS,
    AnswerError,
    extract_json,
    parse_answer,
    validate_answer,
)


def test_extract_json_forms():
    assert extract_json('{"bound": "compute"}') == {"bound": "compute"}
    assert extract_json('```json\n{"bound": "compute"}\n```') == {"bound": "compute"}
    assert extract_json('<think>{"bound": "x"} hmm</think>\nAnswer: {"bound": "bandwidth"}.') == {
        "bound": "bandwidth"
    }
    for bad in ("", None, "no json", "[1, 2]"):
        with pytest.raises(AnswerError):
            extract_json(bad)


def test_validate_answer_defaults_and_limits():
    a = validate_answer({"bound": "memory-bound"}, 10, 20)
    assert a == {
        "bound": "bandwidth",
        "confidence": 0.5,
        "arithmetic_intensity": None,
        "rationale": "",
        "suggestions": [],
    }
    many = [{"line": 12, "message": f"m{i}"} for i in range(30)]
    a = validate_answer({"bound": "compute", "suggestions": many, "confidence": "0.3"}, 10, 20)
    assert len(a["suggestions"]) == MAX_SUGGESTIONS and a["confidence"] == 0.3
    with pytest.raises(AnswerError):
        validate_answer(["compute"], 1, 2)
    with pytest.raises(AnswerError):
        parse_answer('{"confidence": 1}', 1, 2)
