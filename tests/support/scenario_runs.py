"""Run the shipped scenario files from tests: load, mutate, write, run, and read what was sent.

The scenarios under ``scenarios/`` are plain YAML; these helpers run them exactly as the plugin
does (``harness.runner.run_scenario`` and ``harness.checks``), and additionally keep the
scripted transport, so a test can read the requests the pipeline sent to the model (for
example the verifier's ``<verifier_input>`` JSON, which no ``expect`` key can inspect).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_diageval.agents.results import ChatResult
from pytest_diageval.agents.scripted import model as scripted
from pytest_diageval.agents.scripted.model import RecordedRequest, ScriptedTransport
from pytest_diageval.harness import runner
from pytest_diageval.harness.checks.evaluators import CheckOutcome, run_checks
from pytest_diageval.harness.format.loader import load_scenario
from pytest_diageval.harness.format.scenario import Scenario
from pytest_diageval.harness.runner import run_scenario
from pytest_diageval.harness.settings import RunSettings

__all__ = [
    "MATRIX_DIR",
    "REGRESSION_DIR",
    "SCHEMA_COMMENT",
    "ScenarioOutcome",
    "failed_keys",
    "load_raw",
    "run_file",
    "script_entries",
    "verifier_inputs",
    "write_scenario",
]

SCENARIOS_DIR = Path(__file__).resolve().parents[2] / "scenarios"
MATRIX_DIR = SCENARIOS_DIR / "matrix"
REGRESSION_DIR = SCENARIOS_DIR / "regression"
SCHEMA_COMMENT = "# yaml-language-server: $schema=../scenario.schema.json\n"
_VERIFIER_TAG = "verifier_input"


@dataclass(frozen=True)
class ScenarioOutcome:
    """One scenario run: the scenario, its result, every check, and the model requests."""

    scenario: Scenario
    result: ChatResult
    checks: dict[str, CheckOutcome]
    requests: list[RecordedRequest]


def load_raw(path: Path) -> dict[str, Any]:
    """The scenario file as plain data (a deep copy a test may mutate freely)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path}: a scenario file is a mapping"
    return copy.deepcopy(data)


def write_scenario(data: dict[str, Any], path: Path) -> Path:
    """Write a (mutated) scenario as readable YAML, Chinese kept as is."""
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=1000)
    path.write_text(SCHEMA_COMMENT + text, encoding="utf-8")
    return path


def script_entries(data: dict[str, Any], stage: str) -> list[dict[str, Any]]:
    """The script entries of one stage, in order (the dicts themselves, to mutate)."""
    entries: list[dict[str, Any]] = data["llm"]["script"]
    return [entry for entry in entries if entry["stage"] == stage]


@contextmanager
def _capture_transports(
    monkeypatch: pytest.MonkeyPatch, requests: list[list[RecordedRequest]]
) -> Iterator[list[ScriptedTransport]]:
    """Keep every scripted transport the runner creates, and its list of requests (the runner
    itself stays unchanged)."""
    transports: list[ScriptedTransport] = []

    def capturing(entries: Any, config: Any = None, **options: Any) -> Any:
        llm, transport = scripted.scripted_llm(entries, config, **options)
        transports.append(transport)
        requests.append(transport.requests)  # the runner lets go of it after the run
        return llm, transport

    with monkeypatch.context() as patch:
        patch.setattr(runner, "scripted_llm", capturing)
        yield transports


def run_file(path: Path, monkeypatch: pytest.MonkeyPatch) -> ScenarioOutcome:
    """Run one scripted scenario file through the plugin's runner and check every expectation.

    A run that stops (broken script, missing world) fails the test here, so a mutation test
    never mistakes a broken script for a failing expectation.
    """
    scenario = load_scenario(path)
    requests: list[list[RecordedRequest]] = []
    with _capture_transports(monkeypatch, requests) as transports:
        run = run_scenario(
            scenario, path, cassette=None, settings=RunSettings(), rerecord_command="-"
        )
    assert run.error is None, f"{path.name} did not run to the end: {run.error!r}"
    assert run.result is not None
    assert len(transports) == 1, "a scripted scenario runs on exactly one scripted model"
    checks = run_checks(scenario.expect, run.result, run.usage)
    return ScenarioOutcome(scenario, run.result, checks, requests[0])


def failed_keys(outcome: ScenarioOutcome) -> set[str]:
    """The expectation keys whose check failed."""
    return {key for key, check in outcome.checks.items() if not check.passed}


def verifier_inputs(requests: list[RecordedRequest]) -> list[dict[str, Any]]:
    """The ``<verifier_input>`` JSON of every verifier request, in round order."""
    inputs = []
    for request in requests:
        if request.stage != "verifier":
            continue
        texts = [str(m.get("content") or "") for m in request.body["messages"]]
        wrapped = [t for t in texts if t.startswith(f"<{_VERIFIER_TAG}>")]
        assert len(wrapped) == 1, "a verifier request carries one <verifier_input> message"
        payload = wrapped[0].removeprefix(f"<{_VERIFIER_TAG}>").removesuffix(f"</{_VERIFIER_TAG}>")
        # wrap_data writes "</" as "<\/", which is a valid JSON string escape.
        inputs.append(json.loads(payload))
    return inputs
