"""OpenMP/OpenACC pragma parsing."""

from roofline_lsp.detect.pragmas import parse_pragma


def test_parse_pragma_clauses():
    p = parse_pragma("omp target teams distribute parallel for map(always, to: x[0:n]) nowait")
    assert p.words == ("target", "teams", "distribute", "parallel", "for")
    assert [(c.name, c.modifier, c.items) for c in p.clauses] == [
        ("map", "always, to", ("x[0:n]",)),
        ("nowait", "", ()),
    ]


def test_acc_loop_sharing_levels():
    from roofline_lsp.detect.pragmas import acc_loop_sharing

    def sharing(text: str) -> tuple[int, bool] | None:
        s = acc_loop_sharing(parse_pragma(text))
        return None if s is None else (s.collapse, s.gangs)

    assert sharing("acc parallel loop gang worker vector num_workers(4) vector_length(32)") == (
        1,
        True,
    )
    assert sharing("acc loop worker vector") == (1, False)  # within a gang
    assert sharing("acc loop collapse(2)") == (2, True)  # no level: the compiler's gang
    assert sharing("acc loop seq") is None
    assert sharing("acc parallel num_gangs(8)") is None  # no loop directive
    assert sharing("omp parallel for") is None


def test_mapped_sections():
    from roofline_lsp.detect.pragmas import mapped_sections

    p = parse_pragma("omp target teams map(to: a[0:n], s) map(from: b[:m][0:k]) firstprivate(c)")
    q = parse_pragma("acc parallel copyin(x[0:n]) present(y) create(z[0:8])")
    assert mapped_sections(p.clauses) == {"a", "b"}
    assert mapped_sections(q.clauses) == {"x", "z"}


def test_a_metadirective_is_the_directive_it_selects_on_a_gpu():
    # the first `when` a GPU matches (an nvptx or amdgcn arch, kind(gpu) or kind(nohost),
    # being inside `target`), else `otherwise`/`default`, else nothing
    nvptx = parse_pragma(
        'omp metadirective when(device={arch("nvptx")}: teams loop) otherwise(parallel loop)'
    )
    assert nvptx.words == ("teams", "loop")
    gpu = parse_pragma(
        "omp metadirective when(device={kind(gpu)}: target teams distribute parallel for "
        "map(to: a[0:n])) otherwise(parallel for)"
    )
    assert gpu.words == ("target", "teams", "distribute", "parallel", "for")
    assert [c.text for c in gpu.clauses] == ["map(to: a[0:n])"]
    inside = parse_pragma("omp metadirective when(construct={target}: distribute parallel for)")
    assert inside.words == ("distribute", "parallel", "for")
    other = parse_pragma(
        "omp metadirective when(user={condition(n > 9)}: target teams loop) default(parallel for)"
    )
    assert other.words == ("parallel", "for")
    assert parse_pragma("omp metadirective when(device={kind(host)}: parallel for)").words == ()
