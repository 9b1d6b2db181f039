"""OpenMP/OpenACC pragma parsing."""

from roofline_lsp.detect.pragmas import parse_pragma


def test_parse_pragma_clauses():
    p = parse_pragma("omp target teams distribute parallel for map(always, to: x[0:n]) nowait")
    assert p.words == ("target", "teams", "distribute", "parallel", "for")
    assert [(c.name, c.modifier, c.items) for c in p.clauses] == [
        ("map", "always, to", ("x[0:n]",)),
        ("nowait", "", ()),
    ]
