"""The ``set_aside`` expectation on a shipped scope scenario, run by pytest itself: it passes as
shipped, and a wrong claim id or rule fails its own item with what was set aside and why."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

if TYPE_CHECKING:
    from conftest import ScenarioDir

SHIPPED = Path(__file__).resolve().parents[2] / "scenarios" / "scope"
NODE = "scenarios/scope.yaml::scope-out-of-scope-verified-claim::set_aside"


def _scenario(**set_aside: list[str]) -> dict[str, object]:
    data = yaml.safe_load((SHIPPED / "out-of-scope-verified-claim.yaml").read_text("utf-8"))
    assert isinstance(data, dict)
    if set_aside:
        data["expect"]["set_aside"] = set_aside
    return data


def test_the_shipped_expectation_passes(pytester: pytest.Pytester, scenarios: ScenarioDir) -> None:
    scenarios.write("scenarios/scope.yaml", _scenario())
    result = pytester.runpytest("-v")
    result.stdout.fnmatch_lines([f"{NODE} PASSED*"])


def test_a_wrong_claim_and_rule_fail_with_what_was_set_aside(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    wrong = _scenario(claims=["claim-1"], rules=["scope.excluded_topic"])
    scenarios.write("scenarios/scope.yaml", wrong)
    result = pytester.runpytest("-v")
    result.stdout.fnmatch_lines(
        [
            f"{NODE} FAILED*",
            "*claims: missing claim-1; unexpected claim-2*",
            "*rules: missing scope.excluded_topic; unexpected scope.out_of_scope*",
            "*set aside claim-2 (scope.out_of_scope): the claim is about payment-service*",
        ]
    )


def test_an_unknown_rule_is_refused_when_the_file_loads(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/scope.yaml", _scenario(rules=["scope.elsewhere"]))
    result = pytester.runpytest("-v")
    result.stdout.fnmatch_lines(["*invalid-scenario FAILED*", "*scope.out_of_scope*"])
