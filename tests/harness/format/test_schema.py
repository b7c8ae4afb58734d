"""The JSON Schema of scenario files: the committed copy is in sync and describes the format."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
import yaml

from pytest_diageval.harness.format.registry import config_checks
from pytest_diageval.harness.format.scenario import EXPECT_KEYS, Scenario
from pytest_diageval.harness.format.schema import (
    JSON_SCHEMA_DIALECT,
    REGENERATE_COMMAND,
    WORLD_REGENERATE_COMMAND,
    main,
    render_schema,
    render_world_schema,
    scenario_json_schema,
    world_json_schema,
    write_schema,
)
from support.shipped import shipped_files

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "scenarios" / "scenario.schema.json"
COMMITTED_WORLD = ROOT / "scenarios" / "world.schema.json"
SUITE_WORLD_FILES = shipped_files("scenarios", "**/worlds/*.y*ml")
"""The suite's world files: each names the committed world schema on its first line."""
WORLD_FILES = sorted([*SUITE_WORLD_FILES, *(ROOT / "src").rglob("worlds/*.yaml")])
"""Also the packaged worlds, which name no schema: an installed package has no
``scenarios/world.schema.json`` beside it to point at."""


def test_the_committed_schema_is_in_sync(pytestconfig: pytest.Config) -> None:
    """What ``diageval schema`` prints here: the built-in keys and this project's own (the root
    conftest.py registers ``max_answer_chars``; see tests/plugin/test_registered_checks.py)."""
    assert COMMITTED.is_file(), f"{COMMITTED} is missing; create it with `{REGENERATE_COMMAND}`"
    committed = COMMITTED.read_text(encoding="utf-8")
    assert committed == render_schema(config_checks(pytestconfig)), (
        f"{COMMITTED} is out of date with the scenario models; regenerate it with"
        f" `{REGENERATE_COMMAND}`"
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
        {"required": ["reference"]},
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


def test_the_committed_world_schema_is_in_sync() -> None:
    assert COMMITTED_WORLD.read_text(encoding="utf-8") == render_world_schema(), (
        f"{COMMITTED_WORLD} is out of date with the world models; regenerate it with"
        f" `{WORLD_REGENERATE_COMMAND}`"
    )


def test_a_world_file_and_an_inline_world_have_one_definition() -> None:
    world = world_json_schema()
    inline = scenario_json_schema()["$defs"]
    assert world["$schema"] == JSON_SCHEMA_DIALECT
    assert world["title"] == "pytest-diageval world"
    assert {key: value for key, value in world.items() if key not in ("$schema", "title")} == {
        **{key: value for key, value in inline["World"].items() if key != "title"},
        "$defs": {name: inline[name] for name in world["$defs"]},
    }
    assert sorted(world["properties"]) == sorted(
        ["now", "description", "alerts", "logs", "knowledge", "failures", "aliases"]
    )


@pytest.mark.parametrize("path", WORLD_FILES, ids=lambda path: path.name)
def test_every_shipped_world_file_passes_the_world_schema(path: Path) -> None:
    validator = jsonschema.Draft202012Validator(world_json_schema())
    data = yaml.safe_load(path.read_text("utf-8"))
    data["now"] = str(data["now"])  # YAML may read an unquoted time as a datetime
    assert [error.message for error in validator.iter_errors(data)] == []


@pytest.mark.parametrize("path", SUITE_WORLD_FILES, ids=lambda path: path.name)
def test_every_suite_world_file_names_the_world_schema_first(path: Path) -> None:
    first = path.read_text("utf-8").splitlines()[0]
    schema = Path(os.path.relpath(COMMITTED_WORLD, path.parent)).as_posix()
    assert first == f"# yaml-language-server: $schema={schema}"
    assert (path.parent / schema).resolve() == COMMITTED_WORLD


def test_the_suite_has_world_files_and_the_package_its_default() -> None:
    assert [path.name for path in SUITE_WORLD_FILES] == [
        "default-injected-instruction.yaml",
        "default-query-logs-timeout.yaml",
        "injected-evidence.yaml",
        "injection-techniques.yaml",
        "logistics.yaml",
        "structure-claims.yaml",
    ]
    assert [path.relative_to(ROOT).as_posix() for path in WORLD_FILES if "src" in path.parts] == [
        "src/pytest_diageval/worlds/default.yaml"
    ]


def test_the_world_schema_refuses_a_wrong_key_where_it_is() -> None:
    validator = jsonschema.Draft202012Validator(world_json_schema())
    world = {
        "now": "2026-07-08T11:20:00+08:00",
        "logs": [
            {
                "timestamp": "2026-07-08T11:20:00+08:00",
                "level": "INFO",
                "service": "s",
                "mesage": "m",
            }
        ],
        "failures": {"query_trace": "timeout"},
        "aliases": {"order-service": "订单服务"},
    }
    refused = sorted(
        "/".join(str(part) for part in error.absolute_path) or "<top>"
        for error in validator.iter_errors(world)
    )
    assert refused == ["aliases/order-service", "failures", "logs/0", "logs/0"]
