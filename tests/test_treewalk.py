"""Host functions read by ``treewalk.text_function`` and run by ``cexpr.evaluate`` (values
by hand)."""

from __future__ import annotations

import pytest

from roofline_lsp.detect.kernels import detect
from roofline_lsp.detect.treewalk import (
    call_sites,
    effect_function,
    is_variadic,
    kernel_function,
    may_call,
    parameter_declarations,
    text_function,
)
from roofline_lsp.syntax.cexpr import evaluate, run_for_effects
from roofline_lsp.syntax.parsing import parse


def _functions(src: str):  # type: ignore[no-untyped-def]
    tree = parse(src.encode())
    out = {}
    for node in tree.root_node.named_children:
        if node.type == "function_definition":
            name = node.child_by_field_name("declarator").child_by_field_name("declarator")
            out[name.text.decode()] = text_function(node)
    return out


def test_expression_functions_and_small_ones_run() -> None:
    fns = _functions(
        "int div_up(int a, int b) { return (a + b - 1) / b; }\n"
        "unsigned next_pow2(unsigned x) {\n"
        "  --x;\n"
        "  for (int s = 1; s < 32; s <<= 1) x |= x >> s;\n"
        "  return ++x;\n"
        "}\n"
        "int ilog2(int v) { int r = 0; while (v >>= 1) r++; return r; }\n"
        "int clamp_blocks(int n) {\n"
        "  int b = div_up(n, 256);\n"
        "  if (b > 65535) { b = 65535; } else if (b < 1) b = 1;\n"
        "  return b;\n"
        "}\n"
        "int spin(int n) { while (1) n++; return n; }\n"
    )
    assert fns["div_up"].steps is None and fns["next_pow2"].steps is not None
    # 1000 -> 999 -> OR-ed with its shifts: 1023 -> 1024; 1024 stays
    assert evaluate("next_pow2(1000)", {}, functions=fns) == 1024
    assert evaluate("next_pow2(1024)", {}, functions=fns) == 1024
    # 1000 >>= 1 nine times before it reaches 0: 9
    assert evaluate("ilog2(1000)", {}, functions=fns) == 9
    # ceil(1e8 / 256) = 390,625 blocks, capped at 65,535; 0 elements: 1 block
    assert evaluate("clamp_blocks(100000000)", {}, functions=fns) == 65535
    assert evaluate("clamp_blocks(0)", {}, functions=fns) == 1
    # a loop that never ends runs out of its step budget: no value
    assert evaluate("spin(1)", {}, functions=fns) is None
    assert evaluate("next_pow2(m)", {}, functions=fns) is None  # an argument not known


@pytest.mark.parametrize(
    "body",
    [
        'printf("%d", n); return n;',  # a call for its effect
        "int *p = &n; return *p;",  # a pointer
        "switch (n) { case 1: return 2; } return n;",
        "g_total += n; return n;",  # a global (not a local): not run",
    ],
)
def test_functions_doing_more_are_not_run(body: str) -> None:
    fns = _functions(f"int f(int n) {{ {body} }}\n")
    f = fns["f"]
    assert f is None or evaluate("f(3)", {}, functions=fns) is None


def test_kernel_function_is_the_kernel_or_the_function_around_a_region() -> None:
    src = (
        "__global__ void k(float *x) { x[0] = 1; }\n"
        "void host(float *y, int n) {\n"
        "  #pragma omp target teams distribute parallel for\n"
        "  for (int i = 0; i < n; i++) y[i] = 2;\n"
        "}\n"
    )
    cuda, region = detect(src.encode(), "k.cu").kernels
    names = []
    for k in (cuda, region):
        fn = kernel_function(k)
        assert fn is not None and fn.type == "function_definition"
        names.append(fn.child_by_field_name("declarator").text.decode().split("(")[0])
    assert names == ["k", "host"]


def test_small_functions_run_for_what_they_store_through_pointers() -> None:
    # getLevels(1 << 20, &levels): the search stops (break) at i = 20, stored as levels[0];
    # length 3 is no power of 2: nothing stored, the caller's 7 stays. split(10, &a, &b)
    # stores 10 / 4 = 2 through *a and 10 - 2 * 4 = 2 through b[0].
    tree = parse(
        b"int getLevels(unsigned length, unsigned *levels) {\n"
        b"  int rc = 1;\n"
        b"  for (unsigned i = 0; i < 24; ++i) {\n"
        b"    if (length == (1U << i)) { *levels = i; rc = 0; break; }\n"
        b"  }\n"
        b"  return rc;\n"
        b"}\n"
        b"void split(int n, int *a, int *b) { *a = n / 4; b[0] = n - *a * 4; }\n"
        b'void log_it(int *n) { printf("%d", *n); }\n'
    )
    get_levels, split, log_it = (effect_function(n) for n in tree.root_node.named_children)
    assert get_levels is not None and split is not None
    assert run_for_effects(get_levels, [1 << 20, None], {})["levels[0]"] == 20  # type: ignore[index]
    assert run_for_effects(get_levels, [3, None], {}, None, {"levels[0]": 7})["levels[0]"] == 7  # type: ignore[index]
    # ``*a`` read back is not an expression the evaluator knows: b is not run
    assert run_for_effects(split, [10, None, None], {}) is None
    assert log_it is None  # a call for its effect: not run


def test_functions_returning_references_are_functions_of_the_file() -> None:
    # a reference return type wraps the declarator (``float& at(...)``): the function is
    # found by its name, a method too (``x`` of ``class D``), as plain ones are
    src = (
        "__device__ float& at(float *a, int i) { return a[i]; }\n"
        "class D { public: double *m; double& x(int i) { return m[i]; } };\n"
        "__device__ const int &first(const int *a) { return a[0]; }\n"
    )
    det = detect(src.encode(), "refs.cu")
    assert {"at", "x", "first"} <= set(det.functions)


@pytest.mark.parametrize(
    ("signature", "names", "variadic"),
    [
        ("void f(int n, float *x)", ["n", "x"], False),
        (
            "template <typename K, typename... Args> void f(K k, int n, Args... args)",
            ["k", "n"],
            True,
        ),
        ("int f(const char *fmt, ...)", ["fmt"], True),
    ],
)
def test_parameters_and_a_pack(signature: str, names: list[str], variadic: bool) -> None:
    # the named parameters, a trailing pack or C's `...` apart
    root = parse(f"{signature} {{}}".encode()).root_node
    fn = next(
        n for n in root.named_children if n.type in ("function_definition", "template_declaration")
    )
    if fn.type == "template_declaration":
        fn = next(c for c in fn.named_children if c.type == "function_definition")
    got = [
        p.child_by_field_name("declarator").text.decode().lstrip("*")
        for p in parameter_declarations(fn)
    ]
    assert got == names
    assert is_variadic(fn) is variadic


def test_may_call_takes_the_scopes_a_function_sits_in() -> None:
    # ns::run is called as run(...), ns::run<float>(...) and ::ns::run(...) in host code; not
    # as std::run or other::run, nor from a __device__ function; a __host__ __device__ one may
    src = (
        "namespace ns { void run(int n) {} }\n"
        "struct Box { static void run(int n); };\n"
        "void Box::run(int n) {}\n"
        "__device__ void dev() { run(1); }\n"
        "__host__ __device__ void both() { run(2); }\n"
        "void host() {\n"
        "  run(3); ns::run(4); ns::run<float>(5); ::ns::run(6); std::run(7); other::run(8);\n"
        "  Box::run(9);\n"
        "}\n"
    )
    tree = parse(src.encode())
    fns = [n for n in tree.root_node.named_children if n.type == "function_definition"]
    box_run = fns[0]  # Box::run (namespace ns's run sits in a declaration_list)
    ns_run = tree.root_node.named_children[0].child_by_field_name("body").named_children[0]
    calls = call_sites(src.encode(), tree.root_node, "run", limit=20)
    first_arg = [c.child_by_field_name("arguments").named_children[0].text.decode() for c in calls]
    assert first_arg == ["1", "2", "3", "4", "5", "6", "7", "8", "9"]
    assert [a for a, c in zip(first_arg, calls, strict=True) if may_call(c, ns_run)] == [
        "2",
        "3",
        "4",
        "5",
        "6",
    ]
    assert [a for a, c in zip(first_arg, calls, strict=True) if may_call(c, box_run)] == [
        "2",
        "3",
        "9",
    ]
