"""Memory stays flat with the suite: once a scenario's last item has run, its run is released
(only the summary row stays), and the audits of ``--diageval-report`` wait on disk, not on the
reports pytest keeps to the end."""

from __future__ import annotations

import gc
import json
import weakref
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir


class RunWatcher:
    """Holds a weak reference to each scenario's ChatResult and looks at it as items run."""

    def __init__(self) -> None:
        self.refs: dict[str, weakref.ref[Any]] = {}
        self.alive_between_items: dict[str, list[bool]] = {}
        self.alive_after_last_item: dict[str, bool] = {}
        self.reports_holding_an_audit = 0
        self.reports: list[pytest.TestReport] = []

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        try:
            return (yield)
        finally:  # also after a failing item
            node = item.parent
            # The node's run as the item just used it (cached: this does not run it again).
            self.refs.setdefault(node.nodeid, weakref.ref(node.run().result))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None) -> Any:
        result = yield
        node = item.parent
        gc.collect()
        alive = self.refs[node.nodeid]() is not None
        if nextitem is not None and nextitem.parent is node:
            self.alive_between_items.setdefault(node.nodeid, []).append(alive)
        else:
            self.alive_after_last_item[node.nodeid] = alive
        return result

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.reports.append(report)  # as pytest's terminal stats keep them

    def audits_left_on_reports(self) -> int:
        payloads = [getattr(report, "diageval", None) for report in self.reports]
        return sum(1 for payload in payloads if payload and payload["audit"] is not None)


def test_a_finished_scenarios_run_is_released_after_its_last_item(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()
    scenarios.count_runs()
    watcher = RunWatcher()

    result = pytester.runpytest_inprocess(
        "-p", "no:randomly", "--diageval-report", "report.json", plugins=[watcher]
    )

    result.assert_outcomes(passed=13, failed=2)
    scenario_ids = ["forged-citation", "high-memory-positive", "memory-low-confidence"]
    assert sorted(run for run, _ in scenarios.runs()) == scenario_ids  # each ran once
    alive_after = {
        node.rsplit("::", 1)[1]: alive for node, alive in watcher.alive_after_last_item.items()
    }
    between = {
        node.rsplit("::", 1)[1]: alive for node, alive in watcher.alive_between_items.items()
    }
    # Shared by the items while the scenario runs (11, 2 and 2 items), gone after its last.
    assert between == {
        "high-memory-positive": [True] * 10,
        "memory-low-confidence": [True],
        "forged-citation": [True],
    }
    assert alive_after == dict.fromkeys(scenario_ids, False)
    # The audits went to the report file, and no kept report still holds one.
    assert watcher.audits_left_on_reports() == 0
    report = json.loads((pytester.path / "report.json").read_text("utf-8"))
    assert [entry["id"] for entry in report["scenarios"]] == scenario_ids
    assert all(entry["result"]["rounds"] for entry in report["scenarios"])
