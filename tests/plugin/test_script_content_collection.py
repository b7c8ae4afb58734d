"""A scripted answer its agent would refuse is a collection error naming the field."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir


def test_an_invalid_verifier_label_fails_at_collection_with_the_field_named(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    data = scenarios.example()
    data["llm"]["script"][3]["content"]["facts_checked"][0]["verification"] = "supported"
    path = scenarios.write("scenarios/bad.yaml", data)
    line = next(
        number
        for number, text in enumerate(path.read_text("utf-8").splitlines(), start=1)
        if "verification: supported" in text
    )

    result = pytester.runpytest()

    result.assert_outcomes(failed=1)  # the broken file fails as its own item (issue 12)
    output = result.stdout.str()
    field = "llm.script[3].content.facts_checked[0].verification"
    allowed = "direct_evidence, indirect_support, no_evidence, contradicted"
    assert f"{path}:{line}:" in output
    assert f"{field}: 'supported' is not one of {allowed}" in output
    assert "ScriptError" not in output
