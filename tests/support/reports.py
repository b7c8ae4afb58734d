"""Report data (the ``--diageval-report`` dict) of real scenario files, built in-process the
way the plugin builds it: run the scenario, check each expectation, collect each item's
payload (summary, audit, expectation) in :class:`ScenarioSummaries`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_diageval.harness.checks.evaluators import run_check
from pytest_diageval.harness.format.loader import load_scenario
from pytest_diageval.harness.report.reporter import (
    ScenarioSummaries,
    audit_record,
    scenario_summary,
)
from pytest_diageval.harness.report.review import outcome_record
from pytest_diageval.harness.runner import run_scenario
from pytest_diageval.harness.settings import RunSettings

__all__ = ["SHIPPED", "report_of"]

SHIPPED = Path(__file__).resolve().parents[2] / "scenarios"


def report_of(paths: Sequence[Path], root: Path = SHIPPED.parent) -> dict[str, Any]:
    """The report dict of these scripted scenario files, every expectation checked."""
    summaries = ScenarioSummaries()
    for path in paths:
        scenario = load_scenario(path)
        run = run_scenario(
            scenario, path, cassette=None, settings=RunSettings(), rerecord_command="-"
        )
        assert run.result is not None, run.error
        audit: dict[str, Any] | None = audit_record(scenario, path, run, root)
        for key in scenario.expect.present_keys():
            expected = scenario.expect.value_of(key)
            outcome = run_check(key, expected, run.result)
            payload = {
                "scenario": scenario.scenario_id,
                "summary": scenario_summary(scenario, run),
                "audit": audit,
                "key": key,
                "message": outcome.headline(key),
                "expectation": outcome_record(outcome),
            }
            summaries.add(payload, outcome.passed, "passed" if outcome.passed else "failed")
            audit = None
    return summaries.report_data()
