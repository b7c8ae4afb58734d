"""A recording's progress on the terminal: one line per request as it is answered.

Recording from a local model takes minutes per scenario (the executor's prompt alone is read
at 75–160 tokens a second on 2 cores); after the up-front count of what will be recorded, a
line per answered request says the run is alive and where the time goes:

    diageval recording live-high-memory: request 3, executor round 1: 5112+96 tokens, 41.2 s

Shown only to a person watching: on a terminal (pytest's terminal reporter writes to a tty),
not under ``-q``, not when ``CI`` is set, never on an xdist worker (it has no terminal). A
line is written with output capture suspended, as pytest itself writes during a test.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest

__all__ = ["RecordingProgress", "progress_line"]


def progress_line(
    scenario_id: str,
    number: int,
    stage: str,
    round_: str,
    usage: Mapping[str, object],
    seconds: float,
) -> str:
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if isinstance(prompt, int) and isinstance(completion, int):
        tokens = f"{prompt}+{completion} tokens"
    else:
        tokens = "no usage reported"
    return (
        f"diageval recording {scenario_id}: request {number}, {stage} round {round_}:"
        f" {tokens}, {seconds:.1f} s"
    )


class RecordingProgress:
    """Registered for runs that may record; the runner calls :meth:`request` per answer."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.requests: Counter[str] = Counter()

    def shown(self) -> bool:
        reporter: Any = self.config.pluginmanager.get_plugin("terminalreporter")
        return (
            reporter is not None
            and reporter.isatty()
            and self.config.get_verbosity() >= 0
            and not os.environ.get("CI")
            and not hasattr(self.config, "workerinput")
        )

    def request(
        self, scenario_id: str, stage: str, round_: str, usage: Mapping[str, object], seconds: float
    ) -> None:
        self.requests[scenario_id] += 1
        if not self.shown():
            return
        line = progress_line(scenario_id, self.requests[scenario_id], stage, round_, usage, seconds)
        reporter: Any = self.config.pluginmanager.get_plugin("terminalreporter")
        capture: Any = self.config.pluginmanager.get_plugin("capturemanager")
        if capture is None:
            reporter.write_line(line)
            return
        with capture.global_and_fixture_disabled():
            reporter.write_line(line)
