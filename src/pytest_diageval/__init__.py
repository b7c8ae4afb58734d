"""pytest-diageval's public API: what a check of your own imports.

A check is ``fn(params, ctx) -> CheckOutcome``, registered under an ``expect`` key in the hook
``pytest_diageval_register_checks(registry)`` (a ``conftest.py`` or a plugin) or by a package's
``pytest_diageval.checks`` entry point; a report column is a ``ReportColumn``, added in the hook
``pytest_diageval_report_columns(config)``; docs/api.md describes each name. Importing this module
imports nothing else: each name is loaded on first use, as pytest-xdist keeps its own import
light, so ``import pytest_diageval`` costs nothing to a run that collects no scenario.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_diageval.agents.grader import GraderOutput, GraderRun
    from pytest_diageval.agents.results import ChatResult, RoundResult, ToolCallSummary
    from pytest_diageval.agents.usage import StageUsage, TokenUsage
    from pytest_diageval.harness import hookspecs
    from pytest_diageval.harness.checks.outcome import Check, CheckContext, CheckOutcome
    from pytest_diageval.harness.format.registry import (
        CHECKS_ENTRY_POINT_GROUP,
        CheckRegistrationError,
        CheckRegistry,
        CheckSpec,
    )
    from pytest_diageval.harness.report.columns import (
        ColumnContext,
        ReportColumn,
        ReportColumnError,
    )

__all__ = [
    "CHECKS_ENTRY_POINT_GROUP",
    "ChatResult",
    "Check",
    "CheckContext",
    "CheckOutcome",
    "CheckRegistrationError",
    "CheckRegistry",
    "CheckSpec",
    "ColumnContext",
    "GraderOutput",
    "GraderRun",
    "ReportColumn",
    "ReportColumnError",
    "RoundResult",
    "StageUsage",
    "TokenUsage",
    "ToolCallSummary",
    "hookspecs",
]

_WHERE: dict[str, str] = {
    "Check": "pytest_diageval.harness.checks.outcome",
    "CheckContext": "pytest_diageval.harness.checks.outcome",
    "CheckOutcome": "pytest_diageval.harness.checks.outcome",
    "CHECKS_ENTRY_POINT_GROUP": "pytest_diageval.harness.format.registry",
    "CheckRegistrationError": "pytest_diageval.harness.format.registry",
    "CheckRegistry": "pytest_diageval.harness.format.registry",
    "CheckSpec": "pytest_diageval.harness.format.registry",
    "ChatResult": "pytest_diageval.agents.results",
    "RoundResult": "pytest_diageval.agents.results",
    "ToolCallSummary": "pytest_diageval.agents.results",
    "TokenUsage": "pytest_diageval.agents.usage",
    "StageUsage": "pytest_diageval.agents.usage",
    "GraderRun": "pytest_diageval.agents.grader",
    "GraderOutput": "pytest_diageval.agents.grader",
    "ReportColumn": "pytest_diageval.harness.report.columns",
    "ReportColumnError": "pytest_diageval.harness.report.columns",
    "ColumnContext": "pytest_diageval.harness.report.columns",
}
"""Each public name and the module that defines it."""


def __getattr__(name: str) -> Any:
    if name == "hookspecs":
        return importlib.import_module("pytest_diageval.harness.hookspecs")
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value  # once: later reads are plain attributes
        return value
    raise AttributeError(f"module 'pytest_diageval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
