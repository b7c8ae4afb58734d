"""The public ``diageval_run`` fixture: run a scenario file from your own Python tests.

Modelled on pytest-recording's ``vcr`` fixture: the fixture hands a test a ready object that
uses the run's settings (record mode, endpoint, model, timeout, ``diageval_cassette_dir``)::

    def test_memory_alert_is_confirmed(diageval_run):
        run = diageval_run("scenarios/matrix/02-highmemory-positive.yaml")
        assert run.result.final_verdict == "PASS"
        run.assert_expectations()          # every `expect` key of the file, as items check them

Paths are relative to the rootdir (absolute ones are taken as they are). The scenario runs
exactly as its collected items would run it: scripted model or cassette, same checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_diageval.agents.results import ChatResult
from pytest_diageval.agents.usage import TokenUsage
from pytest_diageval.harness.checks.evaluators import run_checks
from pytest_diageval.harness.checks.outcome import CheckOutcome
from pytest_diageval.harness.format.loader import load_scenario, resolve_cassette_path
from pytest_diageval.harness.format.registry import config_checks
from pytest_diageval.harness.format.scenario import Scenario
from pytest_diageval.harness.runner import ScenarioRun, run_scenario
from pytest_diageval.harness.settings import configured_cassette_dir, run_settings

__all__ = ["DiagevalRun", "ScenarioRunner"]


@dataclass(frozen=True)
class DiagevalRun:
    """One finished scenario run: the scenario, its result and every expectation's outcome."""

    scenario: Scenario
    run: ScenarioRun
    checks: dict[str, CheckOutcome]

    @property
    def result(self) -> ChatResult:
        """The session's result; raises the error that stopped the run, if one did."""
        if self.run.result is None:
            assert self.run.error is not None
            raise self.run.error
        return self.run.result

    @property
    def usage(self) -> TokenUsage:
        return self.run.usage

    @property
    def failures(self) -> dict[str, CheckOutcome]:
        return {key: outcome for key, outcome in self.checks.items() if not outcome.passed}

    def assert_expectations(self) -> None:
        """Fail with one line per failed expectation (the items' headlines)."""
        failed = [outcome.headline(key) for key, outcome in self.failures.items()]
        if failed:
            raise AssertionError(f"scenario {self.scenario.scenario_id}: " + "; ".join(failed))


class ScenarioRunner:
    """What ``diageval_run`` returns: call it with a scenario file."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def __call__(self, path: str | Path) -> DiagevalRun:
        file = Path(self.config.rootpath, path)
        registry = config_checks(self.config)
        scenario = load_scenario(file, registry)
        settings = run_settings(self.config)
        cassette_dir = configured_cassette_dir(self.config) or file.parent / "cassettes"
        cassette = resolve_cassette_path(
            scenario,
            file,
            cassette_dir,
            must_exist=settings.record_mode == "none",
            reference=settings.reference,
        )
        run = run_scenario(
            scenario, file, cassette=cassette, settings=settings, rerecord_command=""
        )
        checks = (
            run_checks(scenario.expect, run.result, run.usage, registry, run.grade)
            if run.result
            else {}
        )
        return DiagevalRun(scenario, run, checks)
