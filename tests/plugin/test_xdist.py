"""pytest-xdist: ``-n 2`` gives the same outcomes, summary, confusion matrix and JSON report
as one process, and every scenario runs once, on one worker, for all its items: xdist's own
``loadgroup`` distribution with one ``xdist_group`` per scenario, chosen only when the run can
collect scenarios (see also test_collection_scope for a run without any)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir

# xdist's loadgroup may append ``@<group>`` to the node ids (not under pytest 9.2: see
# harness/xdist/group_scheduler.py); the group is then the scenario id.
WORKER_LINE = re.compile(r"^\[(gw\d+)\] \[ *\d+%\] (PASSED|FAILED) ([^@\s]+)(?:@(\S+))?$")
# Worker processes import everything afresh; these unrelated costs are left out of them:
# the hypothesis plugin (imports hypothesis at the end of a run) and assertion rewriting.
LEAN = ("-p", "no:hypothesispytest", "--assert=plain")


def _outcomes(result: pytest.RunResult) -> dict[str, int]:
    return {key: value for key, value in result.parseoutcomes().items() if value}


def _json(path: Any) -> Any:
    return json.loads(path.read_text("utf-8"))


def test_two_workers_give_the_same_results_as_one_process(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()
    scenarios.count_runs()

    single = pytester.runpytest("--diageval-report", "single.json")
    single_runs = scenarios.runs()
    (pytester.path / "scenario-runs.log").unlink()
    parallel = pytester.runpytest_subprocess(
        *LEAN, "-n", "2", "-v", "--diageval-report", "parallel.json"
    )

    single.assert_outcomes(passed=13, failed=2)
    parallel.assert_outcomes(passed=13, failed=2)
    parallel.stdout.fnmatch_lines(["scheduling tests via ScenarioGroupScheduling"])
    assert _outcomes(parallel) == _outcomes(single)
    assert scenarios.summary(parallel) == scenarios.summary(single)
    assert len(scenarios.summary(single)) == 9  # header, 3 rows, blank, matrix title, 3 lines
    # The same JSON, apart from wall-clock tool durations (see test_reports for that gap).
    single_json = _json(pytester.path / "single.json")
    parallel_json = _json(pytester.path / "parallel.json")
    assert scenarios.without_durations(parallel_json) == scenarios.without_durations(single_json)
    assert len(parallel_json["scenarios"]) == 3

    # Every item of a scenario ran on one worker, and both workers got work.
    workers: defaultdict[str, set[str]] = defaultdict(set)
    outcomes: dict[str, str] = {}
    for line in parallel.outlines:
        match = WORKER_LINE.match(line.strip())
        if match:
            worker, outcome, node, group = match.groups()
            assert group in (None, node.split("::")[1])  # the scenario id is the group
            workers[node.rsplit("::", 1)[0]].add(worker)
            outcomes[node] = outcome
    assert len(outcomes) == 15
    assert sorted(workers) == [
        "scenarios/forged.yaml::forged-citation",
        "scenarios/low.yaml::memory-low-confidence",
        "scenarios/memory.yaml::high-memory-positive",
    ]
    assert all(len(used) == 1 for used in workers.values()), dict(workers)
    assert set().union(*workers.values()) == {"gw0", "gw1"}
    assert outcomes["scenarios/forged.yaml::forged-citation::verdict"] == "FAILED"
    assert outcomes["scenarios/memory.yaml::high-memory-positive::tool_calls"] == "PASSED"

    # One pipeline run per scenario, in one process as in two.
    assert sorted(single_runs) == [
        ("forged-citation", "main"),
        ("high-memory-positive", "main"),
        ("memory-low-confidence", "main"),
    ]
    parallel_runs = scenarios.runs()
    assert sorted(scenario for scenario, _ in parallel_runs) == [
        "forged-citation",
        "high-memory-positive",
        "memory-low-confidence",
    ]
    for scenario, worker in parallel_runs:
        assert workers[_node_of(scenario)] == {worker}


def _node_of(scenario_id: str) -> str:
    files = {
        "forged-citation": "scenarios/forged.yaml",
        "high-memory-positive": "scenarios/memory.yaml",
        "memory-low-confidence": "scenarios/low.yaml",
    }
    return f"{files[scenario_id]}::{scenario_id}"


def test_scenarios_run_cleanly_without_xdist_under_strict_markers(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/low.yaml", scenarios.low_confidence())

    # A subprocess: in-process, pytest.mark remembers the markers the outer run registered.
    result = pytester.runpytest_subprocess(
        *LEAN, "-p", "no:xdist", "--strict-markers", "-W", "error"
    )

    result.assert_outcomes(passed=2)
    assert "xdist_group" not in result.stdout.str()


def test_a_distribution_the_user_chose_is_kept(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/low.yaml", scenarios.low_confidence())
    scenarios.write_text("scenarios/broken.yaml", "title: [unclosed\n")

    result = pytester.runpytest_subprocess(*LEAN, "-n", "2", "-v", "--dist", "worksteal")

    # The broken file fails as its own item on a worker; the other scenario still runs.
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["scheduling tests via WorkStealingScheduling"])
    result.stdout.fnmatch_lines(["*FAILED scenarios/broken.yaml::invalid-scenario*"])


def test_a_run_whose_paths_hold_no_scenario_keeps_xdists_load(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/low.yaml", scenarios.low_confidence())
    scenarios.write_text("tests/test_one.py", "def test_one():\n    pass\n")

    only_tests = pytester.runpytest_subprocess(*LEAN, "-n", "2", "-v", "tests")
    named_file = pytester.runpytest_subprocess(*LEAN, "-n", "2", "-v", "scenarios/low.yaml")

    only_tests.assert_outcomes(passed=1)
    only_tests.stdout.fnmatch_lines(["scheduling tests via LoadScheduling"])
    named_file.assert_outcomes(passed=2)
    named_file.stdout.fnmatch_lines(["scheduling tests via ScenarioGroupScheduling"])


@pytest.mark.parametrize(
    ("nodeid", "scope"),
    [
        ("scenarios/a.yaml::high-memory::verdict", "high-memory"),
        ("scenarios/a.yml::high-memory::rounds", "high-memory"),
        ("scenarios/a.yaml::high-memory::verdict@high-memory", "high-memory"),  # xdist tagged
        ("tests/test_x.py::test_y@shared", "shared"),
        ("tests/test_x.py::TestA::test_y", "tests/test_x.py::TestA::test_y"),
        ("tests/test_x.py::test_y[a@b]", "tests/test_x.py::test_y[a@b]"),
        ("scenarios/bad.yaml::invalid-scenario", "scenarios/bad.yaml::invalid-scenario"),
    ],
)
def test_the_scheduler_scopes_scenario_items_by_scenario_and_others_as_loadgroup(
    nodeid: str, scope: str
) -> None:
    from pytest_diageval.harness.xdist.group_scheduler import ScenarioGroupScheduling

    scheduler = ScenarioGroupScheduling.__new__(ScenarioGroupScheduling)  # no config needed

    assert scheduler._split_scope(nodeid) == scope


# Logs, in every process, which reports carry their scenario's row (the trylast reporter has
# not consumed the payload yet when this plain hook runs).
ROW_COUNTER_CONFTEST = """
PROCESS = []


def pytest_configure(config):
    PROCESS.append(config.workerinput["workerid"] if hasattr(config, "workerinput") else "main")


def pytest_runtest_logreport(report):
    payload = getattr(report, "diageval", None)
    if payload is not None:
        process = PROCESS[0]
        with open("rows.log", "a", encoding="utf-8") as log:
            log.write(f"{process} {payload['scenario']} {'summary' in payload}\\n")
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "two workers"])
def test_each_scenario_row_goes_with_one_report_only(
    pytester: pytest.Pytester, scenarios: ScenarioDir, workers: list[str]
) -> None:
    scenarios.write_trio()
    scenarios.write_text("conftest.py", ROW_COUNTER_CONFTEST)

    result = pytester.runpytest_subprocess(*LEAN, *workers, "-p", "no:cacheprovider")

    result.assert_outcomes(passed=13, failed=2)
    assert len(scenarios.summary(result)) == 9  # every row in the table
    lines = (pytester.path / "rows.log").read_text("utf-8").split()
    logged = list(zip(lines[::3], lines[1::3], lines[2::3], strict=True))
    rows: defaultdict[tuple[str, str], list[bool]] = defaultdict(list)
    for process, scenario, carries_row in logged:
        rows[process if process == "main" else "worker", scenario].append(carries_row == "True")
    expected_processes = {"main"} if not workers else {"main", "worker"}
    assert {process for process, _ in rows} == expected_processes
    for (_, scenario), carried in rows.items():
        assert carried.count(True) == 1, (scenario, carried)
        assert carried[0] is True  # the first report of the scenario brings its row
    for process in expected_processes:  # every item's report, in every process
        assert sum(len(c) for (p, _), c in rows.items() if p == process) == 15
