"""``expect.gatekeeper`` rule names are checked at load against the gatekeeper's rule table
(issue 12): a misspelt rule is an error at its line with a did-you-mean, never a check that
passes or fails for the wrong reason."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_diageval.core.contract import gatekeeper_rules, rules
from pytest_diageval.harness.format.loader import ScenarioError, load_scenario
from pytest_diageval.harness.format.rule_names import gatekeeper_rule_names

EXAMPLE = Path(__file__).resolve().parents[2] / "plugin" / "data" / "example-scenario.yaml"


def _scenario_with(tmp_path: Path, gatekeeper: dict[str, object]) -> Path:
    data = yaml.safe_load(EXAMPLE.read_text("utf-8"))
    data["expect"] = {"gatekeeper": gatekeeper}
    path = tmp_path / "gate.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), "utf-8")
    return path


def _position(path: Path, text: str) -> tuple[int, int]:
    lines = path.read_text("utf-8").splitlines()
    return next((n, line.index(text) + 1) for n, line in enumerate(lines, 1) if text in line)


@pytest.mark.parametrize(
    ("key", "name", "suggestion"),
    [
        ("failed_rules", "evidence.excerpt_mismatc", "evidence.excerpt_mismatch"),
        ("failed_rules_include", "evidence.rawpath", "evidence.raw_path"),
        (
            "warnings_include",
            "evidence.invocation_autobackfill",
            "evidence.invocation_auto_backfill",
        ),
    ],
)
def test_a_misspelt_rule_is_an_error_with_a_suggestion(
    tmp_path: Path, key: str, name: str, suggestion: str
) -> None:
    path = _scenario_with(tmp_path, {key: ["executor.parse_failed", name]})

    with pytest.raises(ScenarioError) as excinfo:
        load_scenario(path)

    line, column = _position(path, name)
    assert str(excinfo.value).startswith(
        f"{path}:{line}:{column}: expect.gatekeeper.{key}[1]: {name!r} is not a gatekeeper rule;"
        f" did you mean {suggestion!r}? (rules: evidence.bindings_empty,"
    )


def test_a_name_like_no_rule_gets_no_suggestion(tmp_path: Path) -> None:
    path = _scenario_with(tmp_path, {"failed_rules": ["completely-different"]})

    with pytest.raises(ScenarioError) as excinfo:
        load_scenario(path)

    assert "'completely-different' is not a gatekeeper rule (rules: " in str(excinfo.value)
    assert "did you mean" not in str(excinfo.value)


def test_every_rule_of_the_table_is_accepted(tmp_path: Path) -> None:
    rules = sorted(gatekeeper_rules.REJECT_RULES | gatekeeper_rules.LOW_CONFID_RULES)
    path = _scenario_with(tmp_path, {"failed_rules": rules})

    scenario = load_scenario(path)

    assert scenario.expect.gatekeeper is not None
    assert scenario.expect.gatekeeper.failed_rules == rules
    assert gatekeeper_rule_names() == frozenset(rules)


def test_a_rule_added_to_the_table_is_accepted_without_another_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _scenario_with(tmp_path, {"failed_rules_include": ["composer.new_rule"]})
    with pytest.raises(ScenarioError, match=r"'composer\.new_rule' is not a gatekeeper rule"):
        load_scenario(path)

    added = rules.Rule("composer.new_rule", "gatekeeper", "low_confid", "a new thing")
    monkeypatch.setattr(rules, "RULES", (*rules.RULES, added))

    scenario = load_scenario(path)
    assert scenario.expect.gatekeeper is not None
    assert scenario.expect.gatekeeper.failed_rules_include == ["composer.new_rule"]
