"""The CPU-time budget of one file's analysis in ``check`` (``engine/time_budget.py``)."""

from __future__ import annotations

import contextlib
import signal
import threading

import pytest

from roofline_lsp.engine.time_budget import OverBudget, cpu_budget

needs_timer = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="POSIX interval timer")


def spin(seconds_of_cpu: float) -> None:
    import time

    end = time.process_time() + seconds_of_cpu
    while time.process_time() < end:
        pass


@needs_timer
def test_work_over_the_budget_is_stopped_and_the_timer_restored():
    before = signal.getsignal(signal.SIGPROF)
    with pytest.raises(OverBudget), cpu_budget(0.05):
        spin(30)  # stopped long before
    assert signal.getsignal(signal.SIGPROF) is before
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)


@needs_timer
def test_an_except_exception_in_the_analysis_does_not_swallow_it():
    analysis_guard = contextlib.suppress(Exception)  # what the analysis does around a kernel
    with pytest.raises(OverBudget), cpu_budget(0.05), analysis_guard:
        spin(30)


@needs_timer
def test_work_within_the_budget_or_without_one_runs_to_the_end():
    with cpu_budget(30):
        spin(0.01)
    with cpu_budget(None):
        spin(0.01)
    with cpu_budget(0):
        spin(0.01)
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)


def test_no_budget_outside_the_main_thread():
    """Signals reach the main thread only: elsewhere the block runs without a budget (and
    installing a handler would raise)."""
    errors: list[BaseException] = []

    def work() -> None:
        try:
            with cpu_budget(0.01):
                spin(0.05)
        except BaseException as e:  # noqa: BLE001 - the test reports it
            errors.append(e)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert errors == []
