"""A budget of CPU time for one file's analysis in ``check``: past it the analysis stops with
:class:`OverBudget` and the file is reported skipped in one line instead of holding the run.

The budget counts this process's CPU time (``ITIMER_PROF``), not the wall clock: the time a
compiler runs in its own process is not counted (compiles have their own limit), and a busy
machine does not turn a normal file into a skipped one. Signals are delivered to the main
thread of a POSIX process only, so elsewhere (Windows, a worker thread) there is no budget.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

DEFAULT_FILE_SECONDS = 20.0
"""``check --file-timeout``'s default: far above what a real source file takes (the 1,327 files
of the evaluation's dev set take about 20 s together), low enough that a hostile one costs
little."""


class OverBudget(BaseException):  # noqa: N818 - not an error of the analysis: a stop
    """The budget is spent. A BaseException so that the analysis' own ``except Exception``
    (a bug on one kernel must not cost the others) does not swallow it."""


def _can_time() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def cpu_budget(seconds: float | None) -> Iterator[None]:
    """Raise :class:`OverBudget` inside the block once it has used ``seconds`` of CPU time
    (None or 0: no budget)."""
    if not seconds or not _can_time():
        yield
        return

    def over(_signum: int, _frame: FrameType | None) -> None:
        raise OverBudget(seconds)

    previous = signal.signal(signal.SIGPROF, over)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
