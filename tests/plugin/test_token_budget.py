"""``expect: {tokens: {max: N}}`` is its own item; the table and the JSON report carry the
tokens of every scenario (real pytest runs on the scripted example)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from pytest_diageval.agents.scripted.token_estimate import ESTIMATE_NAME

if TYPE_CHECKING:
    from conftest import ScenarioDir


def test_token_budget_item_and_token_reporting(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    within = scenarios.example()
    within["expect"] = {"verdict": "PASS", "tokens": {"max": 1_000_000}}
    scenarios.write("scenarios/within.yaml", within)
    over = scenarios.example()
    over["id"] = "over-budget"
    over["expect"] = {"tokens": {"max": 10}}
    scenarios.write("scenarios/over.yaml", over)

    result = pytester.runpytest("--diageval-report", "report.json", "-rf")

    result.assert_outcomes(passed=2, failed=1)
    report = json.loads((pytester.path / "report.json").read_text("utf-8"))
    usage = {entry["id"]: entry["summary"]["usage"] for entry in report["scenarios"]}
    total = usage["over-budget"]["total"]
    stages = usage["over-budget"]["stages"]
    assert total["requests"] == 4
    assert usage["over-budget"]["source"] == f"estimated by {ESTIMATE_NAME}"
    assert total["total_tokens"] > 10
    headline = (
        f"tokens: expected at most 10 tokens, got {total['total_tokens']} tokens estimated by"
        f" {ESTIMATE_NAME} (planner"
        f" {stages['planner']['total_tokens']}, executor {stages['executor']['total_tokens']},"
        f" verifier {stages['verifier']['total_tokens']})"
    )
    assert headline in scenarios.failures(result)
    row = next(line for line in scenarios.summary(result) if "over-budget" in line)
    cells = [cell.strip() for cell in row.split("|")]
    assert cells[6] == f"{total['prompt_tokens']}+{total['completion_tokens']}"
    assert scenarios.summary(result)[0].split("|")[6].strip() == "tokens"
