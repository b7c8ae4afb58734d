"""The hooks pytest-diageval adds to pytest, as pytest-xdist's ``newhooks`` adds its own.

The plugin registers this module in its ``pytest_addhooks``. Implement a hook in a
``conftest.py`` or a plugin; a package that registers checks without a pytest plugin names a
``register(registry)`` function in the entry-point group ``pytest_diageval.checks``. The
public names a check uses are exported by :mod:`pytest_diageval` (see docs/api.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_diageval.harness.format.registry import CheckRegistry
    from pytest_diageval.harness.report.columns import ReportColumn

__all__ = ["pytest_diageval_register_checks", "pytest_diageval_report_columns"]


@pytest.hookspec(historic=True)
def pytest_diageval_register_checks(registry: CheckRegistry) -> None:
    """Register ``expect`` keys of your own, each a check of the run's result.

    Called once per run, when the first scenario is collected (after the built-in keys and
    the packages' entry points), and for a conftest.py pytest loads later (a scenario
    sub-folder's) when it loads it: a key registered anywhere is known to every scenario::

        from pytest_diageval import CheckContext, CheckOutcome

        def pytest_diageval_register_checks(registry):
            @registry.check("max_answer_chars", int, description="...")
            def max_answer_chars(limit: int, ctx: CheckContext[int]) -> CheckOutcome:
                length = len(ctx.result.final_answer)
                return CheckOutcome(length <= limit, f"at most {limit}", f"{length}")

    A scenario then sets ``expect: {max_answer_chars: 400}``: the value is validated (strict)
    against the parameters when the file loads, and the key is its own item.
    """


@pytest.hookspec
def pytest_diageval_report_columns(config: pytest.Config) -> list[ReportColumn]:
    """Add columns to the reports: each :class:`~pytest_diageval.ReportColumn` shows in the
    terminal table, the ``--diageval-report`` JSON (``summary.columns``), the
    ``--diageval-html`` page and the CI summary, after the built-in columns; with
    ``compare=True`` (the default) ``--diageval-baseline`` counts a changed value::

        from pytest_diageval import ColumnContext, ReportColumn

        def tool_calls(ctx: ColumnContext) -> int | None:
            if ctx.result is None:  # the scenario did not run to the end
                return None
            return sum(len(r.tool_calls) for r in ctx.result.rounds)

        def pytest_diageval_report_columns(config):
            return [ReportColumn("tool_calls", "tools", tool_calls)]

    Every implementation's list is used, in the order pytest calls them. ``value(ctx)`` runs
    where the scenario ran (an xdist worker too) and must return JSON; the reports read the
    value from the scenario's row. Asked as each scenario is collected (a bad column, a
    ``ReportColumnError``, is the scenario's collection error) and kept from the first run on.
    """
    raise NotImplementedError  # a specification: pytest calls the implementations, never this
