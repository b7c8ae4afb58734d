"""The scenarios a new user writes from the README and its docs alone load and run: the README's
complete PASS example and the fabricated excerpt it describes (REJECT), the guide's HikariCP
no-hit; the reference's complete world is a valid world with every key, a scenario on it runs,
and the guide's ``diageval_run`` example passes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema
import pytest
import yaml

from pytest_diageval.core.evidence.world import World, WorldError, load_world

if TYPE_CHECKING:
    from conftest import ScenarioDir

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text("utf-8")
GUIDE = (ROOT / "docs" / "guide.md").read_text("utf-8")
REFERENCE = (ROOT / "docs" / "reference.md").read_text("utf-8")
BLOCK = re.compile(r"```yaml\n# readme-example: ([\w-]+)\n(.*?)```", re.DOTALL)
EXAMPLES: dict[str, str] = dict(BLOCK.findall(README + GUIDE + REFERENCE))
PYTHON_BLOCK = re.compile(r"```python\n# readme-example: ([\w-]+)\n(.*?)```", re.DOTALL)
PYTHON_EXAMPLES: dict[str, str] = dict(PYTHON_BLOCK.findall(README + GUIDE + REFERENCE))
# The world example as a user copies it, its marker line included (line numbers count it).
WORLD = "# readme-example: world\n" + EXAMPLES["world"]
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
    assert sorted(EXAMPLES) == ["five-lines", "no-hit", "pass", "world"]
    assert "pass" in dict(BLOCK.findall(README))  # the newcomer's example stays in the README
    assert sorted(PYTHON_EXAMPLES) == ["run-fixture"]
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


def on_the_readme_world(data: dict[str, Any]) -> dict[str, Any]:
    """The PASS example on the README's world, saved as scenarios/mine/worlds/shop.yaml: the
    same calls, the log line cited where that world's result has it."""
    data = {**data, "id": "my-high-memory-shop", "world": "worlds/shop.yaml"}
    binding = data["llm"]["script"][2]["content"]["claims"][0]["evidence_bindings"][1]
    assert binding["raw_path"] == "$.logs[4]"
    binding["raw_path"] = "$.logs[0]"
    return data


def test_the_readme_world_is_a_valid_world_with_every_key(tmp_path: Path) -> None:
    path = tmp_path / "shop.yaml"
    path.write_text(WORLD, "utf-8")

    world = load_world(path)

    assert set(yaml.safe_load(WORLD)) == set(World.model_fields)  # complete: every key shown
    assert [(a.alert_name, a.service, a.current) for a in world.alerts] == [
        ("HighMemoryUsage", "order-service", "91%")
    ]
    assert [(log.level, log.service) for log in world.logs] == [
        ("WARN", "order-service"),
        ("INFO", "payment-service"),
    ]
    assert [section.heading for section in world.knowledge[0].sections] == ["排查步骤"]
    assert world.failures == {"lookup_knowledge": "timeout"}
    assert world.entity_aliases() == {"订单服务": "order-service", "order service": "order-service"}
    schema = json.loads((ROOT / "scenarios" / "world.schema.json").read_text("utf-8"))
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(yaml.safe_load(WORLD))) == []


def test_a_misspelt_key_in_the_readme_world_reads_as_the_readme_says(tmp_path: Path) -> None:
    path = tmp_path / "shop.yaml"
    path.write_text(WORLD.replace("    message: ", "    mesage: ", 1), "utf-8")

    with pytest.raises(WorldError) as caught:
        load_world(path)

    said = str(caught.value).splitlines()[2].removeprefix("  - ")
    assert said.startswith("logs[0].mesage (line 19): unknown key 'mesage'")
    assert f"`{said}`" in " ".join(REFERENCE.split())


def test_a_scenario_on_the_readme_world_runs_as_documented(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_text("scenarios/mine/worlds/shop.yaml", WORLD)
    scenarios.write(
        "scenarios/mine/high-memory.yaml", on_the_readme_world(yaml.safe_load(EXAMPLES["pass"]))
    )

    result = pytester.runpytest("scenarios/mine/", "-rf")

    result.assert_outcomes(passed=4)  # the world file is not collected as a scenario


def test_the_readme_diageval_run_example_passes(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_text("scenarios/mine/high-memory.yaml", EXAMPLES["pass"])
    pytester.makepyfile(test_mine=PYTHON_EXAMPLES["run-fixture"])

    result = pytester.runpytest("test_mine.py")

    result.assert_outcomes(passed=1)


def test_the_five_line_example_runs_offline_beside_the_shipped_suite(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    """Issue 39: a new five-line scenario written from the README passes with no model, no
    cassette and no script; it is the shipped reference scenario under another id."""
    example = EXAMPLES["five-lines"]
    assert len([line for line in example.splitlines() if line.strip()]) == 6
    shipped = yaml.safe_load((ROOT / "scenarios/reference/highmemory-alert.yaml").read_text())
    assert {**yaml.safe_load(example), "id": shipped["id"], "title": shipped["title"]} == shipped
    scenarios.write_text("scenarios/mine/memory-alert.yaml", example)

    result = pytester.runpytest("scenarios/", "-q")

    result.assert_outcomes(passed=2)  # verdict and required_keywords
