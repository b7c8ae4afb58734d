"""The scenarios a new user writes from the README alone load and run: the complete PASS
example, the fabricated excerpt the README describes (REJECT), and the HikariCP no-hit."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

if TYPE_CHECKING:
    from conftest import ScenarioDir

README = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
BLOCK = re.compile(r"```yaml\n# readme-example: ([\w-]+)\n(.*?)```", re.DOTALL)
EXAMPLES: dict[str, str] = dict(BLOCK.findall(README))
FABRICATED = "HighMemoryUsage resolved, service=order-service, current=12%"


def _fabricated() -> dict[str, Any]:
    """The README's instructions for a fabricated citation, applied to the PASS example."""
    data = yaml.safe_load(EXAMPLES["pass"])
    data["id"] = "my-forged"
    binding = data["llm"]["script"][2]["content"]["claims"][0]["evidence_bindings"][0]
    binding["evidence_excerpt"] = FABRICATED
    data["expect"] = {
        "verdict": "REJECT",
        "answer": "degraded",
        "gatekeeper": {"severity": "reject", "failed_rules_include": ["evidence.excerpt_mismatch"]},
    }
    return data


def test_the_readme_has_the_two_complete_examples_and_describes_the_third() -> None:
    assert sorted(EXAMPLES) == ["no-hit", "pass"]
    assert f'(`"{FABRICATED}"`)' in README
    assert "gatekeeper: {severity: reject, failed_rules_include: [evidence.excerpt_mismatch]}" in (
        README
    )


def test_the_three_readme_scenarios_run_as_documented(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_text("scenarios/mine/high-memory.yaml", EXAMPLES["pass"])
    scenarios.write_text("scenarios/mine/hikaricp.yaml", EXAMPLES["no-hit"])
    scenarios.write("scenarios/mine/forged.yaml", _fabricated())

    result = pytester.runpytest("scenarios/mine/", "-rf")

    result.assert_outcomes(passed=11)  # 4 + 4 + 3 items, none failing
    summary = scenarios.summary_without_tokens(result)
    assert summary[-3:] == [
        "  expected \\ actual | PASS | LOW_CONFID | REJECT",
        "  PASS              | 2    | 0          | 0",
        "  REJECT            | 0    | 0          | 1",
    ]


def test_an_invalid_verifier_label_in_the_example_fails_at_collection(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    text = EXAMPLES["pass"].replace("verification: direct_evidence", "verification: supported")
    scenarios.write_text("scenarios/mine/high-memory.yaml", text)

    result = pytester.runpytest("scenarios/mine/")

    result.assert_outcomes(failed=1)  # the broken file fails as its own item (issue 12)
    assert "content.facts_checked[0].verification: 'supported' is not one of" in (
        result.stdout.str()
    )
