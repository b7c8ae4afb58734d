"""What the question's scope kept out reaches the reports: the JSON summary lists the plan
steps withheld from the executor and the calls refused before they ran, and the HTML page shows
the withheld step beside the plan (run by pytest itself on two shipped scope scenarios)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

if TYPE_CHECKING:
    from conftest import ScenarioDir

SHIPPED = Path(__file__).resolve().parents[2] / "scenarios" / "scope"
WITHHELD = "用 query_logs 查询 inventory-service 的 HikariCP 连接池耗尽日志"


def _write(scenarios: ScenarioDir, *names: str) -> None:
    for name in names:
        data = yaml.safe_load((SHIPPED / f"{name}.yaml").read_text("utf-8"))
        scenarios.write(f"scenarios/{name}.yaml", data)


def test_the_json_summary_lists_withheld_steps_and_refused_calls(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    _write(scenarios, "plan-names-out-of-scope-service", "out-of-scope-call-refused")
    result = pytester.runpytest("--diageval-report", "report.json")
    result.assert_outcomes(passed=13)
    report = json.loads((pytester.path / "report.json").read_text("utf-8"))
    summaries = {entry["id"]: entry["summary"] for entry in report["scenarios"]}
    plan = summaries["scope-plan-names-out-of-scope-service"]
    assert plan["withheld_plan_steps"] == [
        {"round": 1, "step": WITHHELD, "rule": "scope.out_of_scope_plan_step"}
    ]
    assert plan["refused_calls"] == []
    refused = summaries["scope-out-of-scope-call-refused"]
    assert refused["refused_calls"] == [{"round": 1, "call": "query_logs service=payment-service"}]
    assert refused["withheld_plan_steps"] == []


def test_the_html_page_shows_the_withheld_step_beside_the_plan(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    _write(scenarios, "plan-names-out-of-scope-service")
    pytester.runpytest("--diageval-html", "report.html")
    page = (pytester.path / "report.html").read_text("utf-8")
    assert "plan step withheld from the executor" in page
    row = page[page.index("plan step withheld from the executor") :]
    assert WITHHELD in row[:2000]
    assert "<code>scope.out_of_scope_plan_step</code>" in row[:2000]
