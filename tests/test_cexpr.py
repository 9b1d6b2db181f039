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
        ("dim.boxes * dim.boxes", {"dim.boxes": "30"}, 900),  # a struct's field
        ("CLASS == 'C'", {"CLASS": "'C'"}, 1),  # a character is its code: #if CLASS == 'S'
        ("'A' + 1", {}, 66),
        ("sizes[d] * 2", {"sizes[0]": "256", "d": "0"}, 512),  # an element known as such
        ("sizes[q]", {"sizes[0]": "256"}, None),
        # every element one value (``shape.push_back(dim)`` in a loop): any index, even one
        # not known, names it; an element known as such still wins
        ("shape[q] * shape[idx[q + 1]]", {"shape[*]": "64"}, 4096),
        ("shape[1] + shape[0]", {"shape[*]": "64", "shape[1]": "8"}, 72),
        ("grid[q][0]", {"grid[*]": "64"}, None),  # (one subscript only)
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


def test_split_args_leaves_string_and_character_literals_whole():
    assert split_args(r'"%d, %d\n", a, b') == [r'"%d, %d\n"', "a", "b"]
    assert split_args("',', ')', x") == ["','", "')'", "x"]
    assert split_args(r'"a \", (b", c') == [r'"a \", (b"', "c"]
    assert split_args("1'000'000, x, 'y'") == ["1'000'000", "x", "'y'"]


def test_split_args_of_a_template_argument_list_nests_angle_brackets():
    # in an expression `<` may be a comparison; in template arguments it opens a list
    assert split_args("Vector<double, int>, 4") == ["Vector<double", "int>", "4"]
    assert split_args("Vector<double, int>, 4", angles=True) == ["Vector<double, int>", "4"]


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


def test_helper_functions_and_macros_are_evaluated():
    from roofline_lsp.syntax.cexpr import TextFunction

    fns = {
        # int ceil_div(int a, int b) { return (a + b - 1) / b; }
        "ceil_div": TextFunction(("a", "b"), "(a + b - 1) / b", (True, True), True),
        # #define DIV_UP(a, b) (((a) + (b) - 1) / (b))
        "DIV_UP": TextFunction(("a", "b"), "(((a) + (b) - 1) / (b))"),
        # float half(float x) { return x / 2; }
        "half": TextFunction(("x",), "x / 2", (False,), False),
    }
    # ceil(3,000,000 / 256) = 11,719 (C integer division, not 11,718.75)
    assert evaluate("ceil_div(n, 256)", {"n": "3000000"}, functions=fns) == 11719
    assert evaluate("DIV_UP(1000, bs)", {"bs": "256"}, functions=fns) == 4
    assert evaluate("ns::ceil_div<int>(10, 4)", functions=fns) == 3  # qualified, templated
    assert evaluate("half(3)", functions=fns) == 1.5  # the argument converts to float
    assert evaluate("ceil_div(n)", {"n": "3"}, functions=fns) is None  # wrong arity
    assert evaluate("unknown_fn(3)", functions=fns) is None


def test_only_the_branch_taken_needs_a_value():
    # no command-line argument: argc = 1, the default is taken and argv[1] never read
    assert evaluate("argc > 1 ? atoi(argv[1]) : 1 << 20", {"argc": "1"}) == 1048576
    assert evaluate("argc > 1 ? atoi(argv[1]) : 1 << 20", {"argc": "2"}) is None
    assert evaluate("argc > 2 && atoi(argv[2]) > 0", {"argc": "1"}) == 0
    assert evaluate("c ? 1 : 2") is None  # an unknown condition decides nothing
    assert evaluate("1 ? y : 2") is None  # the branch taken must be known
    assert evaluate("v[2]", {"v": "3"}) is None


def test_inner_text_strips_one_pair():
    from roofline_lsp.syntax.cexpr import inner_text

    assert inner_text("((n + 7) / 8, (m + 3) / 4)") == "(n + 7) / 8, (m + 3) / 4"
    assert inner_text("{a, b}") == "a, b"
    assert inner_text("(a) * (b)") == "(a) * (b)"
    # `dim3 grid((Z + 7) / 8, ...)`: the components keep their own parentheses
    assert evaluate_dim3(
        "dim3((Z + 7) / 8, (Y + 7) / 8, (X + 3) / 4)", {"Z": 400, "Y": 400, "X": 400}
    ) == (
        50,
        50,
        100,
    )


def test_strlen_of_a_string_the_host_initialised() -> None:
    # the host binding records ``strlen(key)`` for ``const char *key = "..."``
    assert evaluate("strlen(key) / 2", {"strlen(key)": "64"}) == 32
    assert evaluate("strlen(key)", {}) is None
    assert evaluate("strlen(a + 1)", {"strlen(a)": "4"}) is None


def test_an_environment_variable_is_unset_as_when_the_program_runs_without_it() -> None:
    # ``const char *s = getenv("N"); int n = s ? atoi(s) : 65536;``: n is the default
    assert evaluate("s ? atoi(s) : 65536", {"s": 'getenv("N")'}) == 65536
    assert evaluate('std::getenv("N") == NULL', {}) == 1
    assert evaluate('"N"', {}) is None  # a string is a value only as getenv's argument


def test_a_field_through_a_pointer_is_one_name() -> None:
    # ``p->n``, as the host binding records a store through a pointer parameter
    assert evaluate("p->n * 2 + q.m", {"p->n": "21", "q.m": "1"}) == 43
    assert evaluate("a - b", {"a": "3", "b": "1"}) == 2  # a minus, not an arrow


def test_a_field_of_an_element() -> None:
    # ``plan[0].n`` as recorded for that element, ``plan[i].n`` from every element's field
    # (``plan[*].n``, set in a loop over the elements); without either: no value
    assert evaluate("plan[0].n * 2", {"plan[0].n": "7"}) == 14
    assert evaluate("plan[i].n / 4", {"plan[*].n": "64"}) == 16
    assert evaluate("plan[i]->d.n", {"plan[*]->d.n": "5"}) == 5
    assert evaluate("plan[i].n", {"plan[*].m": "64"}) is None
    assert evaluate("plan[i].n", {}) is None


def test_conversions_of_a_substituted_program_argument() -> None:
    # atoi(argv[1]) inside a helper sees the argument's number: the integer conversions
    # truncate it, the floating ones keep it; strto*'s end pointer and base are ignored
    assert evaluate("atoi(100)") == 100
    assert evaluate("std::stoi(std::string(100))") == 100
    assert evaluate("strtol(42, NULL, 10)") == 42
    assert evaluate("atoi(2.7)") == 2
    assert evaluate("atof(2.5) * 2") == 5.0
    assert evaluate("atoi(s)") is None  # a name with no value
