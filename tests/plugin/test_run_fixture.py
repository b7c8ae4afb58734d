"""The public ``diageval_run`` fixture runs a scenario file from a Python test."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir

USER_TESTS = """
import pytest


def test_the_forged_citation_is_rejected(diageval_run):
    run = diageval_run("scenarios/forged.yaml")
    assert run.result.final_verdict == "REJECT"
    assert list(run.failures) == ["verdict", "answer"]
    with pytest.raises(AssertionError) as caught:
        run.assert_expectations()
    assert str(caught.value) == (
        "scenario forged-citation: verdict: expected PASS, got REJECT"
        " (gatekeeper reject: evidence.excerpt_mismatch); answer: expected direct, got degraded"
    )


def test_a_true_scenario_passes(diageval_run):
    run = diageval_run("scenarios/memory.yaml")
    run.assert_expectations()
    assert len(run.checks) == 11
    assert run.usage.total.requests == 4
"""


def test_diageval_run_gives_a_python_test_the_result_and_the_checks(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()
    pytester.makepyfile(test_user=USER_TESTS)

    result = pytester.runpytest("test_user.py")

    result.assert_outcomes(passed=2)


def test_diageval_run_is_listed_among_the_fixtures(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--fixtures")
    result.stdout.fnmatch_lines(["diageval_run*", "*Run a scenario file from a Python test*"])
