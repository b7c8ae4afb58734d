"""Beyond one machine: pytest-xdist's own ``--tx`` gateways and distribution modes.

Two ``popen`` gateways stand in for two remote machines (``--tx ssh=host//python=…`` runs
the same protocol over ssh): each is a separate interpreter that collects the suite itself
and runs the scenario groups the controller sends it. The outcomes, the terminal summary and
the merged JSON report must equal a single process's, and every scenario must run once, on
one gateway, for all its items.

``--dist loadscope`` groups by everything before the last ``::``, which for a scenario item is
its scenario. ``--dist loadgroup`` groups by the items' ``xdist_group`` marker; with pytest 9.2
and pytest-xdist 3.8 xdist's own grouping is broken (pytest-dev/pytest-xdist#1386), and the
plugin's ``harness/xdist/group_scheduler.py`` keeps each scenario together under loadgroup.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir

# Under loadgroup, xdist appends "@<group>" to the node ids it reports.
WORKER_LINE = re.compile(r"^\[(gw\d+)\] \[ *\d+%\] (PASSED|FAILED) (\S+?)(@\S+)?$")
LEAN = ("-p", "no:hypothesispytest", "--assert=plain")


def _json(path: Any) -> Any:
    return json.loads(path.read_text("utf-8"))


@pytest.mark.parametrize("dist", ["loadscope", "loadgroup"])
def test_two_popen_gateways_give_one_processs_results(
    pytester: pytest.Pytester, scenarios: ScenarioDir, dist: str
) -> None:
    scenarios.write_trio()
    scenarios.count_runs()
    single = pytester.runpytest("--diageval-report", "single.json")
    (pytester.path / "scenario-runs.log").unlink()

    spread = pytester.runpytest_subprocess(
        *LEAN,
        *("--tx", "popen", "--tx", "popen", "--dist", dist),
        *("-v", "--diageval-report", "spread.json"),
    )

    spread.assert_outcomes(passed=13, failed=2)
    assert "2 workers [15 items]" in spread.stdout.str()
    assert scenarios.summary(spread) == scenarios.summary(single)
    merged, alone = _json(pytester.path / "spread.json"), _json(pytester.path / "single.json")
    assert scenarios.without_durations(merged) == scenarios.without_durations(alone)
    assert [entry["id"] for entry in merged["scenarios"]] == [
        "forged-citation",
        "high-memory-positive",
        "memory-low-confidence",
    ]
    assert all(entry["result"]["rounds"] for entry in merged["scenarios"])

    gateways: defaultdict[str, set[str]] = defaultdict(set)
    for line in spread.outlines:
        match = WORKER_LINE.match(line.strip())
        if match:
            gateway, _, node, _ = match.groups()
            gateways[node.rsplit("::", 1)[0].rsplit("::", 1)[1]].add(gateway)
    assert sorted(gateways) == ["forged-citation", "high-memory-positive", "memory-low-confidence"]
    assert all(len(used) == 1 for used in gateways.values()), dict(gateways)
    runs = scenarios.runs()
    assert sorted(scenario for scenario, _ in runs) == sorted(gateways)  # once each
    for scenario, gateway in runs:
        assert gateways[scenario] == {gateway}
