"""The reference agent as a yardstick of a recorded run (agents/reference/yardstick.py): the
shipped live recordings, replayed offline, against the reference on the same question."""

from __future__ import annotations

from pathlib import Path

from pytest_diageval.agents.reference import EvidenceRecall, evidence_recall
from pytest_diageval.harness.format.loader import (
    load_scenario,
    resolve_cassette_path,
)
from pytest_diageval.harness.report.reporter import scenario_summary
from pytest_diageval.harness.runner import ScenarioRun, run_samples
from pytest_diageval.harness.settings import RunSettings

REPO = Path(__file__).resolve().parents[3]


def _replay(name: str) -> tuple[object, ScenarioRun]:
    path = REPO / "scenarios" / name
    scenario = load_scenario(path)
    cassette = resolve_cassette_path(scenario, path, REPO / "cassettes")
    (run, *_) = run_samples(
        scenario, path, cassette=cassette, settings=RunSettings(), command=lambda mode: ""
    )
    return scenario, run


def test_a_model_that_cited_the_alert_the_reference_cites_recalls_it_all() -> None:
    _, run = _replay("live/live-matrix-02-highmemory.yaml")
    assert run.result is not None
    assert run.world is not None
    recall = evidence_recall(run.result, run.world)
    assert recall == EvidenceRecall(reference=1, fetched=1, cited=1, off_subject=0)
    assert recall.text() == "cited 1/1 · fetched 1/1 · off-subject calls 0"


def test_a_model_that_fetched_the_items_but_cited_none_is_told_which() -> None:
    _, run = _replay("live/live-high-memory.yaml")
    assert run.result is not None
    assert run.world is not None
    recall = evidence_recall(run.result, run.world)
    assert (recall.reference, recall.fetched, recall.cited) == (1, 1, 0)
    assert recall.missed == ()


def test_the_report_row_of_a_recorded_scenario_carries_the_yardstick_a_scripted_one_not() -> None:
    scenario, run = _replay("live/live-matrix-03-slowresponse.yaml")
    row = scenario_summary(scenario, run)  # type: ignore[arg-type]
    assert row["reference"] == "cited 0/6 · fetched 1/6 · off-subject calls 0"
    scripted, scripted_run = _replay("routing/pass-direct.yaml")
    assert "reference" not in scenario_summary(scripted, scripted_run)  # type: ignore[arg-type]
