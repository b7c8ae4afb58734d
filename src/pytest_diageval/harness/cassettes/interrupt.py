"""A recording stopped by Ctrl-C (SIGINT) or SIGTERM: the committed cassette stays as it was,
and the run says so.

A recording writes into a staging file beside the cassette and replaces the cassette only
after a run that completed (:mod:`.session`); a stop in the middle unlinks the staging file,
and :class:`RecordingInterrupted` (a ``KeyboardInterrupt``, so pytest ends the session as it
does on Ctrl-C, writing its summary and JUnit XML) names the cassette that was left alone.
SIGINT is Python's ``KeyboardInterrupt`` already; :class:`TerminationAsInterrupt` makes SIGTERM
one too, for the runs that may record, so that a CI job cancelled mid-recording cleans up the
same way instead of dying with the staging file on disk. The next run records again.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = ["RecordingInterrupted", "TerminationAsInterrupt"]


class RecordingInterrupted(KeyboardInterrupt):
    """A recording stopped by a signal; the message names the cassette left as it was."""

    @classmethod
    def of(cls, cassette: Path, cause: BaseException) -> RecordingInterrupted:
        how = str(cause) or "Ctrl-C (SIGINT)"
        return cls(
            f"the recording of {cassette} was stopped by {how}: the committed cassette is"
            " left as it was (nothing recorded in this run was kept); run the same command"
            " again to record it"
        )


class TerminationAsInterrupt:
    """Plugin object of a run that may record: SIGTERM raises ``KeyboardInterrupt("SIGTERM")``
    in the main thread while the session runs; the previous handler is restored after it."""

    def __init__(self) -> None:
        self._previous: Any = None

    def pytest_sessionstart(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, _interrupt)

    def pytest_unconfigure(self) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)
            self._previous = None


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)
