"""Every pytest name outside ``pytest``'s public namespace that the plugin uses: the failure
representation a scenario item returns, and a configuration made outside a test run.

pytest exports ``ExceptionInfo`` but not the ``TerminalRepr`` family, and ends a configuration
it did not start through a private method. ``pyproject.toml`` bounds pytest to
:data:`CHECKED_VERSIONS`, the releases this module was read against, and
``tests/plugin/test_pytest_adapter.py`` fails on any other release and names each name below
that is gone. No other module of the package imports ``_pytest`` (``tests/test_private_names.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import pytest
from _pytest._code.code import (
    ReprEntryNative,
    ReprExceptionInfo,
    ReprFileLocation,
    ReprTraceback,
    TerminalRepr,
)

__all__ = [
    "CHECKED_VERSIONS",
    "RELIED_ON",
    "ReprExceptionInfo",
    "TerminalRepr",
    "native_failure",
    "standalone_config",
]

CHECKED_VERSIONS = ">=8,<10"
"""The pytest releases this module was checked against; ``pyproject.toml`` pins the same."""

RELIED_ON = (
    ("_pytest._code.code", "ReprEntryNative"),
    ("_pytest._code.code", "ReprExceptionInfo"),
    ("_pytest._code.code", "ReprFileLocation"),
    ("_pytest._code.code", "ReprTraceback"),
    ("_pytest._code.code", "TerminalRepr"),
    ("_pytest.config.Config", "fromdictargs"),
    ("_pytest.config.Config", "_ensure_unconfigure"),
)
"""``(module or class, name)`` of each pytest name used here beyond ``pytest``'s exports: what
to re-read in a new pytest release before widening :data:`CHECKED_VERSIONS`."""


def native_failure(path: str, line: int, first_line: str, text: Sequence[str]) -> ReprExceptionInfo:
    """A failure pytest shows as ``text`` (one line each) in a native-style entry, whose crash
    line (short summary, ``--tb=line``, JUnit's message) is ``first_line`` at ``path:line``.

    A ``ReprExceptionInfo`` travels from an xdist worker to the controller unchanged.
    """
    return ReprExceptionInfo(
        reprtraceback=ReprTraceback(
            [ReprEntryNative([f"{entry}\n" for entry in text])], None, "native"
        ),
        reprcrash=ReprFileLocation(path, line, first_line),
    )


@contextlib.contextmanager
def standalone_config(args: Sequence[str]) -> Iterator[pytest.Config]:
    """pytest's configuration for ``args`` in the current folder (its plugins and
    ``conftest.py`` files), made outside a test run and ended on leaving."""
    config = pytest.Config.fromdictargs({}, list(args))
    try:
        yield config
    finally:
        config._ensure_unconfigure()
