"""``docs/live_pin.py`` writes a live scenario's pins and notes from its replayed samples."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from pytest_diageval.harness.format.loader import load_scenario
from support.chat_results import highcpu_pass, hikaricp_negative

REPOSITORY = Path(__file__).resolve().parents[1]
SCENARIO = """\
# yaml-language-server: $schema=../scenario.schema.json
id: live-matrix-01-highcpu-narrow
title: 真实小模型
tags: [live]
notes: >-
  Why this scenario exists. Re-recorded on 2026-01-01 against an older model: verdicts PASS.
query: 只确认 payment-service 的 HighCPUUsage 告警
world: default
llm:
  cassette: ../../cassettes/live-matrix-01-highcpu-narrow.yaml
expect:
  verdict: PASS
  answer_forbidden_keywords: [内存泄漏]
"""


@pytest.fixture
def live_pin(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.syspath_prepend(str(REPOSITORY / "docs"))
    yield importlib.import_module("live_pin")
    sys.modules.pop("live_pin", None)
    sys.modules.pop("live_scope", None)


def test_samples_that_disagree_pin_every_verdict_and_the_notes_keep_the_purpose(
    live_pin: ModuleType, tmp_path: Path
) -> None:
    text = live_pin.pinned(SCENARIO, [highcpu_pass(), hikaricp_negative()], "Recorded on X")
    written = tmp_path / "scenarios" / "live" / "live.yaml"
    written.parent.mkdir(parents=True)
    written.write_text(text, "utf-8")
    document = yaml.safe_load(text)
    assert document["expect"]["verdict"] == ["PASS", "LOW_CONFID"]
    # Matrix 01's full 004 list replaces the kept answer list of a matrix scenario.
    matrix = yaml.safe_load(
        next((REPOSITORY / "scenarios" / "matrix").glob("01-*.yaml")).read_text("utf-8")
    )
    assert document["expect"]["forbidden_keywords"] == matrix["expect"]["forbidden_keywords"]
    assert "answer_forbidden_keywords" not in document["expect"]
    notes = document["notes"]
    assert notes.startswith("Why this scenario exists. Recorded on X, 2 sample(s): verdicts")
    assert "PASS · LOW_CONFID. Sample 1, stage by stage: Round 1:" in notes
    assert "older model" not in notes
    assert document["expect"]["set_aside"] == {"claims": [], "calls": [], "plan_steps": []}
    assert load_scenario(written).scenario_id == "live-matrix-01-highcpu-narrow"


def test_a_scenario_outside_the_matrix_keeps_its_answer_list(live_pin: ModuleType) -> None:
    text = SCENARIO.replace("live-matrix-01-highcpu-narrow", "live-high-memory")
    document = yaml.safe_load(live_pin.pinned(text, [highcpu_pass()], "Recorded on X"))
    assert document["expect"]["verdict"] == "PASS"
    assert document["expect"]["answer_forbidden_keywords"] == ["内存泄漏"]
