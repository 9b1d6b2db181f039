from collections.abc import Iterator, Mapping

import pytest

from roofline_lsp.syntax.cexpr import evaluate, evaluate_dim3, split_args


@pytest.mark.parametrize(
    ("text", "env", "value"),
    [
        ("1 << 20", {}, 1048576),
        ("(n + BS - 1) / BS", {"n": "1000", "BS": "256"}, 4),  # C integer division
        ("7 / 2.0", {}, 3.5),
        ("(int)(3.7) * 2", {}, 6),
        ("N * sizeof_missing", {"N": "4"}, None),
        ("a > b ? a : b", {"a": "3", "b": 9}, 9),
        ("0x10 + 1u", {}, 17),
        ("min(4, n)", {"n": "2"}, 2),
        ("x", {"x": "x"}, None),  # self-reference terminates
        ("1 / 0", {}, None),
        ("__import__('os')", {}, None),
    ],
)
def test_evaluate(text, env, value):
    assert evaluate(text, env) == value


def test_dim3_forms():
    assert evaluate_dim3("256") == (256, 1, 1)
    assert evaluate_dim3("dim3(n / 16, 4)", {"n": "64"}) == (4, 4, 1)
    assert evaluate_dim3("{2, 3, 4}") == (2, 3, 4)
    assert evaluate_dim3("grid") is None


def test_split_args_respects_nesting():
    assert split_args("a, f(b, c), d[1, 2]") == ["a", "f(b, c)", "d[1, 2]"]


class _Given(Mapping[str, float]):
    """A view that lists no names but answers some (as the host context's hint values)."""

    def __getitem__(self, key: str) -> float:
        if key == "N":
            return 1 << 20
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def test_a_view_listing_no_names_still_gives_its_values() -> None:
    # N = 2^20 from the view: 2^20 / 256 = 4096 blocks
    assert evaluate("N / 256", _Given()) == 4096
    assert evaluate_dim3("N / 256", _Given()) == (4096, 1, 1)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("static_cast<uint64_t>(a) * b", 30),  # a size computed in 64 bits
        ("static_cast<int>(c)", 4),  # to an integer type: truncated
        ("static_cast<double>(a) / 4", 2.5),
        ("static_cast<float*>(a)", None),  # a pointer is no number
    ],
)
def test_named_casts(text: str, value: float | None) -> None:
    assert evaluate(text, {"a": "10", "b": "3", "c": "4.5"}) == value
