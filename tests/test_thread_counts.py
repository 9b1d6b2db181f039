"""Tests of roofline_lsp.estimate.thread_counts: how often an unrolled loop's control runs."""

from __future__ import annotations

import math

import pytest

from roofline_lsp.estimate.thread_counts import control_passes


@pytest.mark.parametrize(
    ("trips", "unroll", "passes"),
    [
        (64.0, 4.0, 16.0),  # 16 groups of 4
        (6.0, 4.0, 3.0),  # 1 group + 2 remainder trips
        (2.0, 4.0, 2.0),  # the remainder loop alone
        (3.5, 4.0, 3.5),  # a mean trip count below the unroll: every trip is a remainder trip
        (0.0, 4.0, 0.0),
        (5.0, 1.0, 5.0),  # a rolled loop: every trip
    ],
)
def test_control_runs_once_per_group_and_per_remainder_trip(trips, unroll, passes) -> None:  # type: ignore[no-untyped-def]
    assert control_passes(trips, unroll) == pytest.approx(passes)


def test_an_unbounded_trip_count_stays_unbounded() -> None:
    assert math.isinf(control_passes(math.inf, 4.0))
