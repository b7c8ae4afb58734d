"""The JSON Schema of scenario files: the committed copy is in sync and describes the format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_diageval.harness.format.scenario import EXPECT_KEYS, Scenario
from pytest_diageval.harness.format.schema import (
    JSON_SCHEMA_DIALECT,
    REGENERATE_COMMAND,
    main,
    render_schema,
    scenario_json_schema,
    write_schema,
)

COMMITTED = Path(__file__).resolve().parents[3] / "scenarios" / "scenario.schema.json"


def test_the_committed_schema_is_in_sync() -> None:
    assert COMMITTED.is_file(), f"{COMMITTED} is missing; create it with `{REGENERATE_COMMAND}`"
    committed = COMMITTED.read_text(encoding="utf-8")
    assert committed == render_schema(), (
        f"{COMMITTED} is out of date with the scenario models; regenerate it with"
        f" `{REGENERATE_COMMAND}` (or"
        " `python -m pytest_diageval.harness.format.schema scenarios/scenario.schema.json`)"
    )


def test_render_is_stable_readable_json() -> None:
    text = render_schema()
    assert text == render_schema()
    assert text.endswith("}\n")
    assert text.startswith('{\n  "$defs": {\n')
    assert "最终判定" in text  # Chinese descriptions are kept as characters, not \\u escapes
    assert json.loads(text) == scenario_json_schema()


def test_the_schema_describes_the_format() -> None:
    schema = scenario_json_schema()
    assert schema["$schema"] == JSON_SCHEMA_DIALECT
    assert schema["title"] == "pytest-diageval scenario"
    assert list(schema["properties"]) == list(Scenario.model_fields)
    assert schema["required"] == ["title", "query", "world", "expect"]
    assert schema["additionalProperties"] is False
    expect = schema["$defs"]["Expect"]
    assert list(expect["properties"]) == list(EXPECT_KEYS)
    assert expect["minProperties"] == 1
    verdict = expect["properties"]["verdict"]["anyOf"]
    assert verdict[0]["enum"] == ["PASS", "LOW_CONFID", "REJECT"]
    assert verdict[1]["items"]["enum"] == ["PASS", "LOW_CONFID", "REJECT"]
    assert schema["$defs"]["LLMSpec"]["oneOf"] == [
        {"required": ["cassette"]},
        {"required": ["script"]},
    ]
    # Empty values are refused by the loader, so the schema never offers null for them.
    assert '"type": "null"' not in json.dumps(schema["$defs"]["Expect"])


def test_write_schema_and_the_module_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out" / "scenario.schema.json"
    assert write_schema(target) is True
    assert target.read_text(encoding="utf-8") == render_schema()
    assert write_schema(target) is False
    assert main([]) == 0
    assert capsys.readouterr().out == render_schema()
    assert main([str(target)]) == 0
    assert capsys.readouterr().out == f"{target}: already up to date\n"
