"""Memory stays flat with the suite: a collected scenario keeps its outline and its scenario
packed, not as objects; once its last item has run, its run and its parse are released (only the
summary row stays), and the audits of ``--diageval-report`` wait on disk, not on the reports
pytest keeps to the end."""

from __future__ import annotations

import gc
import json
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_diageval.harness.format.loader import load_scenario

if TYPE_CHECKING:
    from conftest import ScenarioDir


class RunWatcher:
    """Holds a weak reference to each scenario's ChatResult and looks at it as items run."""

    def __init__(self) -> None:
        self.refs: dict[str, weakref.ref[Any]] = {}
        self.scenario_refs: dict[str, weakref.ref[Any]] = {}
        self.scenario_alive_after_last_item: dict[str, bool] = {}
        self.alive_between_items: dict[str, list[bool]] = {}
        self.alive_after_last_item: dict[str, bool] = {}
        self.outline_packed_after_last_item: dict[str, bool] = {}
        self.reports_holding_an_audit = 0
        self.reports: list[pytest.TestReport] = []
        self.payloads_seen = 0

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        try:
            return (yield)
        finally:  # also after a failing item
            node = item.parent
            # The node's run as the item just used it (cached: this does not run it again).
            self.refs.setdefault(node.nodeid, weakref.ref(node.run().result))
            self.scenario_refs.setdefault(node.nodeid, weakref.ref(node.scenario))

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
            self.outline_packed_after_last_item[node.nodeid] = node.outline.packed is not None
            scenario_alive = self.scenario_refs[node.nodeid]() is not None
            self.scenario_alive_after_last_item[node.nodeid] = scenario_alive
        return result

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.reports.append(report)  # as pytest's terminal stats keep them
        self.payloads_seen += hasattr(report, "diageval")  # before the reporter consumes it

    def kept_payloads(self) -> list[dict[str, Any]]:
        return [report.diageval for report in self.reports if hasattr(report, "diageval")]


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
    # The parsed scenario goes with the run, and the outline lets its packed copy go.
    assert list(watcher.scenario_alive_after_last_item.values()) == [False] * 3
    assert list(watcher.outline_packed_after_last_item.values()) == [False] * 3
    # Every call report carried its payload to the reporter; the audits went to the report
    # file, and no kept report still holds a payload (the reporter has one row per scenario).
    assert watcher.payloads_seen == 15
    assert watcher.kept_payloads() == []
    report = json.loads((pytester.path / "report.json").read_text("utf-8"))
    assert [entry["id"] for entry in report["scenarios"]] == scenario_ids
    assert all(entry["result"]["rounds"] for entry in report["scenarios"])
    assert [c["name"] for c in report["scenarios"][2]["check_results"]] == ["verdict", "answer"]


def _run_trio(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> tuple[pytest.RunResult, RunWatcher]:
    """The trio of scenario files, run in process with a :class:`RunWatcher` (13 pass, 2 fail)."""
    scenarios.write_trio()
    watcher = RunWatcher()
    result = pytester.runpytest_inprocess("-p", "no:randomly", plugins=[watcher])
    result.assert_outcomes(passed=13, failed=2)
    return result, watcher


def test_without_a_report_option_the_check_records_are_not_held(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    result, _ = _run_trio(pytester, scenarios)

    reporter = result.reprec.getcall("pytest_sessionfinish").session.config.pluginmanager
    summaries = reporter.get_plugin("diageval-reporter").summaries
    assert summaries.results == {}  # only the JSON report and the HTML page list them
    # Each row keeps the table's columns and the run's total tokens, not each stage's.
    assert summaries.rows["memory-low-confidence"] == {
        "id": "memory-low-confidence",
        "expected_verdict": "LOW_CONFID",
        "verdict": "LOW_CONFID",
        "score": 0.6,
        "severity": "none",
        "rounds": 1,
        "usage": {
            "total": {
                "prompt_tokens": 9217,
                "completion_tokens": 425,
                "total_tokens": 9642,
                "requests": 4,
            }
        },
    }
    assert sorted(summaries.passed.items()) == [
        ("high-memory-positive", 11),
        ("memory-low-confidence", 2),
    ]
    assert dict(summaries.failed) == {"forged-citation": 2}
    result.stdout.fnmatch_lines(["*memory-low-confidence*LOW_CONFID*2/2*"])


def _alive_scenarios() -> list[Any]:
    from pytest_diageval.harness.format.scenario import Scenario

    gc.collect()
    return [obj for obj in gc.get_objects() if isinstance(obj, Scenario)]


class CollectionWatcher:
    """At the end of collection: which parsed scenarios are alive, what the nodes hold."""

    def __init__(self, edit: Callable[[Path], None] | None = None) -> None:
        self.edit = edit
        # Scenarios already alive are not this collection's: an earlier in-process run on this
        # worker can outlive its test (a module it first imported keeps that run's assertion
        # rewriting hook as its loader, and so that run's config, nodes and runs).
        self.earlier = _alive_scenarios()
        self.parsed_alive: list[str] = []
        self.outlines: dict[str, Any] = {}
        self.item_markers: list[str] = []
        self.node_markers: dict[str, list[str]] = {}

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        nodes = {item.parent.nodeid: item.parent for item in session.items}
        ours = {node.outline.scenario_id for node in nodes.values()}
        earlier = {id(obj) for obj in self.earlier}  # held alive, so no id is reused
        alive = (obj for obj in _alive_scenarios() if id(obj) not in earlier)
        self.parsed_alive = [obj.scenario_id for obj in alive if obj.scenario_id in ours]
        self.outlines = {node.name: node.outline for node in nodes.values()}
        self.item_markers = [mark.name for item in session.items for mark in item.own_markers]
        self.node_markers = {
            node.name: [mark.name for mark in node.own_markers] for node in nodes.values()
        }
        if self.edit is not None:
            self.edit(session.config.rootpath)


def test_a_collected_scenario_keeps_its_outline_and_its_scenario_packed(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    paths = scenarios.write_trio()
    watcher = CollectionWatcher()

    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:xdist", plugins=[watcher])

    result.assert_outcomes(passed=13, failed=2)
    assert watcher.parsed_alive == []
    memory = watcher.outlines["high-memory-positive"]
    assert memory.scenario() == load_scenario(paths[0])  # what the run gets
    assert memory.scenario() is not memory.scenario()  # unpacked anew, never held
    assert memory.title == scenarios.full()["title"]
    assert memory.expect_keys == scenarios.expect_order
    low = watcher.outlines["memory-low-confidence"]
    assert (low.tags, low.expect_keys) == (("memory", "negative"), ("verdict", "answer"))
    # Tags are marked once on the scenario node; its items inherit them (``-m`` below).
    assert watcher.item_markers == []
    assert watcher.node_markers["memory-low-confidence"] == ["memory", "negative"]
    selected = pytester.runpytest_inprocess("-p", "no:randomly", "-m", "negative")
    selected.assert_outcomes(passed=2, deselected=13)


def test_a_scenario_file_edited_after_collection_runs_as_collected(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    """The chosen behaviour: the run checks the scenario whose items were collected (as it
    was read then), as pytest runs a Python module as it was imported; the edit counts
    from the next run on."""
    scenarios.write_trio()
    reversed_expectation = scenarios.low_confidence()
    reversed_expectation["expect"] = {"verdict": "PASS", "rounds": 2}

    def edit(root: Path) -> None:
        scenarios.write("scenarios/low.yaml", reversed_expectation)
        (root / "scenarios" / "forged.yaml").unlink()

    result = pytester.runpytest_inprocess(
        "-p", "no:randomly", "-p", "no:xdist", "-rA", plugins=[CollectionWatcher(edit)]
    )

    result.assert_outcomes(passed=13, failed=2)  # exactly as unedited (first test)
    result.stdout.fnmatch_lines(
        [
            "PASSED scenarios/low.yaml::memory-low-confidence::verdict",
            "PASSED scenarios/low.yaml::memory-low-confidence::answer",
            "FAILED scenarios/forged.yaml::forged-citation::verdict*",
        ]
    )
    again = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:xdist", "-rA")
    again.assert_outcomes(passed=11, failed=2)  # the edit, from the next run on
    again.stdout.fnmatch_lines(["FAILED scenarios/low.yaml::memory-low-confidence::verdict*"])


def test_the_reports_of_an_item_share_their_keywords_properties_and_sections(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    _, watcher = _run_trio(pytester, scenarios)

    by_item: dict[str, list[pytest.TestReport]] = {}
    for report in watcher.reports:
        by_item.setdefault(report.nodeid, []).append(report)
    assert len(by_item) == 15
    assert {len(reports) for reports in by_item.values()} == {3}
    for nodeid, (setup, call, teardown) in by_item.items():
        assert setup.keywords is call.keywords is teardown.keywords
        assert nodeid.rsplit("::", 1)[1] in call.keywords  # still the item's own keywords
        assert setup.user_properties == []
        assert call.user_properties is teardown.user_properties
        assert [name for name, _ in call.user_properties] == [
            "diageval_verdict",
            "diageval_score",
            "diageval_severity",
            "diageval_rounds",
        ]
    # One set of property tuples per scenario, whatever its number of items.
    tuples = {id(prop) for reports in by_item.values() for prop in reports[1].user_properties}
    assert len(tuples) == 3 * 4
    # Reports without sections share one empty list; a report with one keeps its own.
    with_audit = [nodeid for nodeid, reports in by_item.items() if reports[1].sections]
    assert with_audit == ["scenarios/forged.yaml::forged-citation::verdict"]  # first failure
    for nodeid, (setup, call, teardown) in by_item.items():
        if nodeid in with_audit:  # a call section is on the call and teardown reports
            assert setup.sections == []
            titles = ["Captured diageval audit trail call"]
            assert [title for title, _ in call.sections] == titles
            assert [title for title, _ in teardown.sections] == titles
        else:
            assert setup.sections is call.sections is teardown.sections
            assert setup.sections == []


class MoveFirstItemLast:
    """A plugin that reorders one item away from its scenario's others."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        items.append(items.pop(0))


def test_an_item_run_after_its_scenarios_teardown_replays_it_from_the_file(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()
    scenarios.count_runs()

    result = pytester.runpytest_inprocess(
        "-p", "no:randomly", "-p", "no:xdist", "-v", plugins=[MoveFirstItemLast()]
    )

    # The same outcomes as in file order: the moved item (forged-citation's first) found its
    # scenario torn down (its outline emptied), ran it again read from its file, and checked
    # the same result.
    result.assert_outcomes(passed=13, failed=2)
    runs = sorted(run for run, _ in scenarios.runs())
    assert runs == [
        "forged-citation",
        "forged-citation",
        "high-memory-positive",
        "memory-low-confidence",
    ]


class AddExtraKeyword:
    """Gives the items of one scenario an extra ``-k`` name, as a plugin may."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.held_before = [item._extra_keyword_matches_made for item in items]  # type: ignore[attr-defined]
        for item in items:
            if item.parent is not None and item.parent.name == "memory-low-confidence":
                item.extra_keyword_matches.add("night-shift")


def test_scenario_nodes_make_their_extra_keyword_set_only_when_it_is_used(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()
    plugin = AddExtraKeyword()

    result = pytester.runpytest_inprocess(
        "-p", "no:randomly", "-p", "no:xdist", "-k", "night-shift", plugins=[plugin]
    )

    # No node held a set of its own until one was asked for; the names given then select.
    assert plugin.held_before == [None] * 15
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*13 deselected*"])


def test_a_scripted_suite_never_imports_vcrpy(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()  # scripted scenarios only
    pytester.makeconftest(
        """
        import sys

        def pytest_sessionfinish(session):
            print("vcr imported:", "vcr" in sys.modules)
        """
    )

    result = pytester.runpytest_subprocess("-p", "no:randomly", "-s")  # a fresh interpreter

    result.assert_outcomes(passed=13, failed=2)  # every item ran and reported
    result.stdout.fnmatch_lines(["*vcr imported: False*"])
