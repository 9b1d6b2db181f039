"""Terms as data (``model/terms.py``): the lines a term refers to move with its kernel."""

from __future__ import annotations

from roofline_lsp.model.terms import AssumptionTerm, LoopTerm, NoteTerm, moved_term, term_lines


def test_loop_and_trip_assumptions_carry_lines_that_move() -> None:
    loop = LoopTerm("j", 12, 64, "constant")
    trips = AssumptionTerm("trips", 16, "data", (), 20, "e", 0.5)
    launch = AssumptionTerm("launch", 1024, "no launch")
    assert [term_lines(t) for t in (loop, trips, launch, NoteTerm("x"))] == [(12,), (20,), (), ()]
    # a kernel moved 3 lines down: the loop statements with it, the launch has no line
    assert moved_term(loop, 3) == LoopTerm("j", 15, 64, "constant")
    assert moved_term(trips, 3) == AssumptionTerm("trips", 16, "data", (), 23, "e", 0.5)
    assert moved_term(launch, 3) == launch
