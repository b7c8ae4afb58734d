"""``--diageval-mutate`` on scenarios that do not reach PASS: each says why it was not mutated
(a skipped ``not-mutated`` item and a line of the mutation summary), never a bare "no tests
ran"."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir

REASON = "--diageval-mutate forges only scenarios that reach PASS"


def test_a_run_with_nothing_to_mutate_says_why_per_scenario(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/low.yaml", scenarios.low_confidence())
    scenarios.write("scenarios/forged.yaml", scenarios.forged_citation())

    result = pytester.runpytest("--diageval-mutate", "-q", "-rs", "--diageval-report", "out.json")

    result.assert_outcomes(skipped=2)
    assert result.ret == pytest.ExitCode.OK
    assert not any("no tests ran" in line for line in result.outlines)
    result.stdout.fnmatch_lines(
        [
            "*= diageval mutation =*",
            "scenarios not mutated (2):",
            f"  forged-citation: its verdict is REJECT (score 0); {REASON}",
            f"  memory-low-confidence: its verdict is LOW_CONFID (score 0.6); {REASON}",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "SKIPPED [1] scenarios/forged.yaml: not mutated: its verdict is REJECT (score 0);"
            f" {REASON}",
        ]
    )
    report = json.loads((pytester.path / "out.json").read_text("utf-8"))
    assert report["mutation"]["not_mutated"] == [
        {
            "scenario": "forged-citation",
            "reason": f"not mutated: its verdict is REJECT (score 0); {REASON}",
        },
        {
            "scenario": "memory-low-confidence",
            "reason": f"not mutated: its verdict is LOW_CONFID (score 0.6); {REASON}",
        },
    ]
    assert report["mutation"]["totals"]["tried"] == 0


def test_a_mutated_scenario_and_one_not_mutated_share_the_summary(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    scenarios.write("scenarios/low.yaml", scenarios.low_confidence())

    collected = pytester.runpytest("--diageval-mutate", "--collect-only", "-q", "-m", "negative")
    assert [line for line in collected.outlines if "::" in line] == [
        "scenarios/low.yaml::memory-low-confidence::not-mutated"  # tags select it too
    ]
    result = pytester.runpytest("--diageval-mutate", "-k", "digit-first or not-mutated")

    result.assert_outcomes(passed=2, skipped=1)
    section = result.outlines[
        next(i for i, line in enumerate(result.outlines) if " diageval mutation " in line) :
    ]
    assert section[1:3] == [
        "scenarios not mutated (1):",
        f"  memory-low-confidence: its verdict is LOW_CONFID (score 0.6); {REASON}",
    ]
    assert section[4].split("|")[0].strip() == "scenario"
