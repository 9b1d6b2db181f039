"""``// roofline:`` comments."""

from __future__ import annotations

from roofline_lsp.syntax.hints import loop_trips_hint, parse_assignments, parse_hints


def test_hints_and_assignments() -> None:
    assert parse_hints(b"int x; // roofline: n=1<<20, m = 64\n") == {"n": "1<<20", "m": "64"}
    assert parse_hints(b"/* roofline: bs=256 */") == {"bs": "256"}
    # separated by spaces, as the README writes them; a comparison stays in its value
    assert parse_hints(b"// roofline: n=1<<20 steps=64\n") == {"n": "1<<20", "steps": "64"}
    assert parse_hints(b"// roofline: T=double n = 1 << 20\n") == {"T": "double", "n": "1 << 20"}
    assert parse_hints(b"// roofline: on = a == b\n") == {"on": "a == b"}
    assert parse_hints(b"// nothing here") == {}
    assert parse_assignments("n=1<<20 m=64") == {"n": "1<<20", "m": "64"}
    # trips= is a loop's own count (on or above the loop), not the value of a name
    assert parse_hints(b"// roofline: trips=8 n=64\n") == {"n": "64"}
    assert loop_trips_hint("// roofline: trips=1<<3") == "1<<3"
    assert loop_trips_hint("/* roofline: n=4, trips = 12 */") == "12"
    assert loop_trips_hint("// trips=8") is None
