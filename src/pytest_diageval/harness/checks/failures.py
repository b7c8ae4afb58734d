"""How a failing scenario item reads: one line that says it all, then the evidence.

The first line (pytest's "crash" message) carries the expectation, expected and actual:
``verdict: expected PASS, got REJECT (gatekeeper reject: evidence.raw_path)``. It is what the
short test summary, ``--tb=line`` and JUnit's ``message`` show. Below it, ``--tb=auto/long``
(the default) gives the evidence of the check; ``--tb=short`` stops after expected and
actual; ``--tb=line`` prints only the first line and ``--tb=no`` nothing (pytest's own).

What belongs to the whole scenario (the audit trail, the error that stopped the run with its
stale-cassette diff) is shown once, on the scenario's first failing item; its other items
refer to that one instead of repeating it.

The failure is a pytest ``ReprExceptionInfo`` with a native-style entry, so pytest-xdist
carries it from a worker to the controller unchanged (a custom repr would arrive as a string
and lose its first line's location).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from pytest_diageval.harness.format import errors as _errors
from pytest_diageval.harness.pytest_adapter import ReprExceptionInfo, native_failure

__all__ = [
    "FULL_STYLES",
    "ScenarioFailures",
    "expect_line",
    "failure_repr",
    "problems_repr",
]

FULL_STYLES = frozenset({"auto", "long", "native"})
"""``--tb`` styles that show the evidence and the scenario-wide sections."""


def expect_line(path: Path, key: str) -> int:
    """The 1-based line of ``expect.<key>`` in a scenario file (1 when it cannot be read)."""
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return 1
    return 1 if root is None else _errors.key_position(root, ("expect", key))[0]


@dataclass
class ScenarioFailures:
    """Which item of one scenario failed first: it shows what the scenario's items share."""

    first: str | None = None

    def claim(self, nodeid: str) -> str | None:
        """None when ``nodeid`` is the first failure (it shows everything); else the first."""
        if self.first is None or self.first == nodeid:
            self.first = nodeid
            return None
        return self.first


def failure_repr(
    location: tuple[str, int],
    first_line: str,
    lines: Sequence[str],
    *,
    style: str,
    short_lines: int,
) -> ReprExceptionInfo:
    """The failure: ``first_line`` at ``location`` (file, 1-based line), then ``lines``.

    With ``--tb=short`` only the first ``short_lines`` of ``lines`` are kept; with
    ``--tb=line`` pytest prints ``path:line: first_line`` from the crash location alone.
    """
    body = list(lines) if style in FULL_STYLES else list(lines[:short_lines])
    # pytest prints the crash line itself under --tb=line, after whatever the repr prints.
    text = [] if style == "line" else [first_line, *body]
    path, line = location
    return native_failure(path, line, first_line, text)


def problems_repr(
    path: Path, problems: Sequence[_errors.ScenarioProblem], rootpath: Path, *, style: str
) -> ReprExceptionInfo:
    """An unusable scenario file's failure: a headline, then one ``file:line:col: field:
    message`` line per problem.

    The headline is what ``-q``'s short summary, ``--tb=line`` and JUnit show, and a terminal
    cuts it at its width: so it starts with the file relative to rootdir and the first
    problem's line and field (``scenarios/bad.yaml:8: expect.verdict: …``), and says how many
    problems follow. Under ``--tb=line`` pytest prints the place itself.
    """
    first = problems[0]
    what = f"{first.field_path}: {first.message}" if first.field_path else first.message
    more = len(problems) - 1
    if more:
        what += f" (+{more} more problem{'s' if more > 1 else ''})"
    where = os.path.relpath(path, rootpath)
    if where.startswith(".."):
        where = str(path)
    line = first.line or 1
    headline = what if style == "line" else f"{where}:{line}: {what}"
    lines = [problem.format(path) for problem in problems]
    return failure_repr((where, line), headline, lines, style=style, short_lines=len(lines))
