"""Scenario files: the full example of issue 5 loads, and every bad file gets its own message
with the file, line, column and field path."""

# ruff: noqa: E501  (the issue's example is kept verbatim, long comments included)

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_diageval.agents.scripted.model import ScriptEntry, ScriptToolCall
from pytest_diageval.harness.format.loader import (
    ScenarioError,
    default_cassette_path,
    duplicate_ids,
    load_scenario,
    load_scenario_world,
    resolve_cassette_path,
    resolve_world_spec,
)
from pytest_diageval.harness.format.scenario import EXPECT_KEYS, Scenario

# The example of issue 5, verbatim (comments included). Line numbers below refer to it.
EXAMPLE = """\
# yaml-language-server: $schema=../scenario.schema.json
id: hikaricp-negative                 # optional, default: the file's stem; unique in a run
title: inventory-service 没有 HikariCP 证据时不得确认
tags: [hikaricp, negative, narrow]
query: 请确认 inventory-service 是否存在 HikariCP 连接池耗尽，只确认这一件事。
world: default                        # a world name, a path relative to this file, or an inline mapping
llm:                                  # optional; default: the cassette <cassette dir>/<id>.yaml
  cassette: ../cassettes/hikaricp-negative.yaml
expect:                               # every key optional; each key present becomes its own test item
  verdict: LOW_CONFID                 # or a list of allowed verdicts
  groundedness: {min: 0.0, max: 0.49}
  rounds: 2                           # verifier rounds run (1 or 2)
  answer: degraded                    # direct | disclaimer | degraded
  parse_status: valid                 # executor output: valid | failed
  gatekeeper: {severity: none, failed_rules: [], failed_rules_include: [], warnings_include: []}
  forbidden_keywords: [generic-service, HikariPool]   # none may occur in any claim_text or in the final answer
  required_keywords: [未检索到]       # each must occur in the final answer
  claims: {max: 2, types: [observation, negative_observation]}
  no_evidence:                        # no-evidence semantics, per evidence tool
    - {tool: query_logs, evidence_status: no_evidence, success: true, total: 0}
  tool_calls: {include: [query_logs], exclude: [lookup_knowledge], max: 6}   # the executor's tool calls, all rounds
"""

SCRIPT_LLM = """\
llm:
  script:
    - {stage: planner, content: {plan: "查 inventory-service 日志", steps: ["query_logs"]}}
    - {stage: executor, tool_calls: [{name: query_logs, arguments: {service: inventory-service, keywords: [HikariCP]}}]}
    - {stage: executor, raw: "not json"}
    - {stage: verifier, invalid: true, content: {verdict: LOW_CONFID}}
"""


def write(tmp_path: Path, text: str, name: str = "hikaricp-negative.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_of(tmp_path: Path, text: str, name: str = "bad.yaml") -> ScenarioError:
    path = write(tmp_path, text, name)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert caught.value.path == path
    return caught.value


# --------------------------------------------------------------------------- valid files


def test_the_issue_example_loads_with_every_value(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, EXAMPLE))
    assert scenario.scenario_id == "hikaricp-negative"
    assert scenario.title == "inventory-service 没有 HikariCP 证据时不得确认"
    assert scenario.tags == ["hikaricp", "negative", "narrow"]
    assert scenario.world == "default"
    assert scenario.llm is not None
    assert scenario.llm.cassette == "../cassettes/hikaricp-negative.yaml"
    assert scenario.llm.script is None
    expect = scenario.expect
    absent = {"answer_forbidden_keywords", "composer", "tokens", "rubric", "set_aside"}  # later
    assert expect.present_keys() == [k for k in EXPECT_KEYS if k not in absent]
    assert expect.verdict == "LOW_CONFID"
    assert expect.groundedness is not None
    assert (expect.groundedness.min, expect.groundedness.max) == (0.0, 0.49)
    assert (expect.rounds, expect.answer, expect.parse_status) == (2, "degraded", "valid")
    assert expect.gatekeeper is not None
    assert expect.gatekeeper.severity == "none"
    assert expect.gatekeeper.failed_rules == []
    assert expect.forbidden_keywords == ["generic-service", "HikariPool"]
    assert expect.required_keywords == ["未检索到"]
    assert expect.claims is not None
    assert (expect.claims.max, expect.claims.min) == (2, None)
    assert expect.claims.types == ["observation", "negative_observation"]
    assert expect.no_evidence is not None
    row = expect.no_evidence[0]
    assert (row.tool, row.evidence_status, row.success, row.total) == (
        "query_logs",
        "no_evidence",
        True,
        0,
    )
    assert expect.tool_calls is not None
    assert expect.tool_calls.include == ["query_logs"]
    assert expect.tool_calls.exclude == ["lookup_knowledge"]
    assert expect.tool_calls.max == 6


def test_a_dumped_scenario_reloads_equal(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, EXAMPLE))
    dumped = yaml.safe_dump(scenario.model_dump(mode="json", exclude_none=True), allow_unicode=True)
    again = load_scenario(write(tmp_path, dumped, "copy.yaml"))
    assert again == scenario


def test_the_id_defaults_to_the_file_stem(tmp_path: Path) -> None:
    text = EXAMPLE.replace("id: hikaricp-negative", "# no id")
    scenario = load_scenario(write(tmp_path, text, "from-stem.yml"))
    assert scenario.id == "from-stem"
    assert scenario.scenario_id == "from-stem"


def test_a_script_replaces_the_cassette(tmp_path: Path) -> None:
    before, after = EXAMPLE.split("llm:", 1)
    text = before + SCRIPT_LLM + after.split("\n", 2)[2]
    scenario = load_scenario(write(tmp_path, text))
    assert scenario.llm is not None
    assert scenario.llm.cassette is None
    assert scenario.llm.script == [
        ScriptEntry(
            stage="planner", content={"plan": "查 inventory-service 日志", "steps": ["query_logs"]}
        ),
        ScriptEntry(
            stage="executor",
            tool_calls=[
                ScriptToolCall(
                    name="query_logs",
                    arguments={"service": "inventory-service", "keywords": ["HikariCP"]},
                )
            ],
        ),
        ScriptEntry(stage="executor", raw="not json"),
        ScriptEntry(stage="verifier", content={"verdict": "LOW_CONFID"}, invalid=True),
    ]


def test_verdict_may_be_a_list(tmp_path: Path) -> None:
    text = EXAMPLE.replace("verdict: LOW_CONFID", "verdict: [LOW_CONFID, REJECT]")
    assert load_scenario(write(tmp_path, text)).expect.verdict == ["LOW_CONFID", "REJECT"]


# --------------------------------------------------------------------------- bad files


def test_empty_file(tmp_path: Path) -> None:
    error = error_of(tmp_path, "# only a comment\n")
    assert (error.line, error.column, error.field_path) == (1, 1, "")
    assert str(error) == (
        f"{tmp_path / 'bad.yaml'}:1:1: the file is empty:"
        " a scenario needs at least title, query, world, expect"
    )


def test_list_at_top_level(tmp_path: Path) -> None:
    error = error_of(tmp_path, "- id: a\n- id: b\n")
    assert (error.line, error.column) == (1, 1)
    assert "the top level must be a mapping of scenario keys" in error.message
    assert error.message.endswith("; got a list")


def test_unknown_key_suggests_the_closest(tmp_path: Path) -> None:
    error = error_of(tmp_path, EXAMPLE.replace("expect:", "expcet:"))
    # Only the misspelt key is reported, not also a missing `expect`.
    assert len(error.problems) == 1
    assert (error.line, error.column, error.field_path) == (9, 1, "expcet")
    assert error.message.startswith("unknown key; did you mean 'expect'? (allowed keys: id, title")


def test_unknown_nested_key(tmp_path: Path) -> None:
    error = error_of(tmp_path, EXAMPLE.replace("{severity: none,", "{severty: none,"))
    assert (error.line, error.field_path) == (15, "expect.gatekeeper.severty")
    assert "did you mean 'severity'?" in error.message


def test_wrong_verdict_lists_the_allowed_values(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    error = error_of(tmp_path, EXAMPLE.replace("verdict: LOW_CONFID", "verdict: PAS"))
    assert (
        str(error) == f"{path}:10:3: expect.verdict: 'PAS' is not one of PASS, LOW_CONFID, REJECT"
    )


def test_wrong_verdict_inside_a_list_points_at_the_item(tmp_path: Path) -> None:
    error = error_of(tmp_path, EXAMPLE.replace("verdict: LOW_CONFID", "verdict: [PASS, PAS]"))
    assert (error.line, error.column, error.field_path) == (10, 19, "expect.verdict[1]")
    assert error.message == "'PAS' is not one of PASS, LOW_CONFID, REJECT"


def test_verdict_of_no_allowed_kind(tmp_path: Path) -> None:
    error = error_of(tmp_path, EXAMPLE.replace("verdict: LOW_CONFID", "verdict: {a: 1}"))
    assert error.message == "must be one of PASS, LOW_CONFID, REJECT or a list; got a mapping"


def test_missing_expect(tmp_path: Path) -> None:
    error = error_of(tmp_path, EXAMPLE.split("expect:")[0])
    assert (error.line, error.column, error.field_path) == (2, 1, "expect")
    assert error.message.startswith("required key is missing: list at least one expectation")


def test_empty_expect(tmp_path: Path) -> None:
    error = error_of(tmp_path, EXAMPLE.split("expect:")[0] + "expect: {}\n")
    assert (error.line, error.field_path) == (9, "expect")
    assert error.message.startswith("no expectation given: list at least one of verdict, ")


def test_an_expectation_without_value_is_refused(tmp_path: Path) -> None:
    # `verdict:` with nothing after it would otherwise silently drop the verdict item.
    error = error_of(tmp_path, EXAMPLE.replace("verdict: LOW_CONFID", "verdict:"))
    assert (error.line, error.field_path) == (10, "expect.verdict")
    assert error.message == "has no value: give one or remove the key"


def test_yaml_syntax_error_has_its_line(tmp_path: Path) -> None:
    error = error_of(tmp_path, EXAMPLE.replace("  rounds: 2", "  rounds: 2: 3"))
    assert (error.line, error.column) == (12, 12)
    # libyaml says "… allowed in this context", the pure-Python parser "… allowed here".
    assert error.message.startswith("invalid YAML: mapping values are not allowed ")


def test_a_tab_is_named(tmp_path: Path) -> None:
    error = error_of(tmp_path, EXAMPLE.replace("  rounds: 2", "\trounds: 2"))
    assert (error.line, error.column) == (12, 1)
    assert error.message.endswith("; a tab: indent YAML with spaces")


def test_llm_with_both_cassette_and_script(tmp_path: Path) -> None:
    text = EXAMPLE.replace(
        "  cassette: ../cassettes/hikaricp-negative.yaml\n",
        "  cassette: x.yaml\n  script:\n    - {stage: planner, content: {plan: x}}\n",
    )
    error = error_of(tmp_path, text)
    assert (error.line, error.column, error.field_path) == (7, 1, "llm")
    assert (
        error.message
        == "give exactly one of 'cassette', 'script' or 'reference: true' (cassette, script given)"
    )


def test_bad_script_entries_each_get_a_line(tmp_path: Path) -> None:
    text = EXAMPLE.replace(
        "  cassette: ../cassettes/hikaricp-negative.yaml\n",
        "  script:\n"
        "    - {stage: planer, content: {plan: x}}\n"
        "    - {stage: executor, content: {a: 1}, raw: x}\n",
    )
    error = error_of(tmp_path, text)
    assert [(p.line, p.field_path) for p in error.problems] == [
        (9, "llm.script[0].stage"),
        (10, "llm.script[1]"),
    ]
    assert error.problems[0].message == "'planer' is not one of planner, executor, verifier, grader"
    assert "exactly one of content, tool_calls, raw, raw_arguments (found: content, raw)" in str(
        error
    )
    assert len(str(error).splitlines()) == 2


def test_duplicate_key(tmp_path: Path) -> None:
    error = error_of(tmp_path, EXAMPLE + "expect: {rounds: 1}\n")
    assert (error.line, error.field_path) == (22, "expect")
    assert error.message.startswith("duplicate key (first given on line 9)")


def test_bad_tag_and_reserved_tag(tmp_path: Path) -> None:
    error = error_of(tmp_path, EXAMPLE.replace("[hikaricp, negative, narrow]", "[hikari-cp]"))
    assert (error.line, error.field_path) == (4, "tags[0]")
    assert "'hikari-cp' is not allowed: a tag is an identifier" in error.message
    error = error_of(tmp_path, EXAMPLE.replace("[hikaricp, negative, narrow]", "[skip]"))
    assert error.field_path == "tags"
    assert error.message.startswith("skip cannot be a tag")


def test_a_file_name_that_is_no_valid_default_id(tmp_path: Path) -> None:
    text = EXAMPLE.replace("id: hikaricp-negative", "")
    error = error_of(tmp_path, text, name="bad name.yaml")
    assert (error.line, error.field_path) == (1, "id")
    assert "the file name gives the default id 'bad name'" in error.message


def test_strict_types(tmp_path: Path) -> None:
    error = error_of(tmp_path, EXAMPLE.replace("success: true", "success: 'true'"))
    assert error.field_path == "expect.no_evidence[0].success"
    assert error.message == "must be true or false; got 'true'"
    error = error_of(tmp_path, EXAMPLE.replace("rounds: 2 ", "rounds: 3 "))
    assert error.message == "3 (a number) is not one of 1, 2"


def test_impossible_range(tmp_path: Path) -> None:
    error = error_of(tmp_path, EXAMPLE.replace("{min: 0.0, max: 0.49}", "{min: 0.6, max: 0.4}"))
    assert (error.line, error.field_path) == (11, "expect.groundedness")
    assert error.message == "min (0.6) is greater than max (0.4): no value could pass"


def test_several_problems_come_one_per_line_in_file_order(tmp_path: Path) -> None:
    text = (
        EXAMPLE.replace("verdict: LOW_CONFID", "verdict: PAS")
        .replace("answer: degraded", "answer: degrade")
        .replace("query:", "qury:")
    )
    error = error_of(tmp_path, text)
    assert [(p.line, p.field_path) for p in error.problems] == [
        (5, "qury"),
        (10, "expect.verdict"),
        (13, "expect.answer"),
    ]
    assert (
        str(error)
        .splitlines()[2]
        .endswith("expect.answer: 'degrade' is not one of direct, disclaimer, degraded")
    )


def test_unreadable_and_non_utf8_files(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read the file"):
        load_scenario(tmp_path / "missing.yaml")
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"title: ok\nquery: caf\xe9\n")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert (caught.value.line, caught.value.message) == (
        2,
        "not UTF-8 text: invalid continuation byte",
    )


# --------------------------------------------------------------------------- worlds


def test_world_name_and_mapping_resolve(tmp_path: Path) -> None:
    path = write(tmp_path, EXAMPLE)
    scenario = load_scenario(path)
    assert resolve_world_spec(scenario, path) == "default"
    world = load_scenario_world(scenario, path)
    assert world.now.isoformat() == "2026-07-08T11:17:00+08:00"
    inline = scenario.model_copy(update={"world": {"now": "2026-07-08T11:17:00+08:00"}})
    assert resolve_world_spec(inline, path) == {"now": "2026-07-08T11:17:00+08:00"}
    assert load_scenario_world(inline, path).alerts == []


def test_unknown_world_name_points_at_the_world_line(tmp_path: Path) -> None:
    path = write(tmp_path, EXAMPLE.replace("world: default ", "world: defualt "))
    with pytest.raises(ScenarioError) as caught:
        resolve_world_spec(load_scenario(path), path)
    assert (caught.value.line, caught.value.column, caught.value.field_path) == (6, 1, "world")
    assert caught.value.message.startswith("unknown world name 'defualt'; packaged worlds: default")


def test_world_file_relative_to_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "worlds").mkdir()
    path = write(tmp_path, EXAMPLE.replace("world: default ", "world: worlds/mine.yaml "))
    scenario = load_scenario(path)
    with pytest.raises(ScenarioError) as caught:
        resolve_world_spec(scenario, path)
    assert (caught.value.line, caught.value.field_path) == (6, "world")
    assert caught.value.message == (
        f"world file not found: worlds/mine.yaml (looked for {tmp_path / 'worlds/mine.yaml'})"
    )
    (tmp_path / "worlds" / "mine.yaml").write_text("now: '2026-07-08T11:17:00+08:00'\nlogs: 5\n")
    assert resolve_world_spec(scenario, path) == tmp_path / "worlds" / "mine.yaml"
    with pytest.raises(ScenarioError) as caught:
        load_scenario_world(scenario, path)
    assert caught.value.line == 6
    assert caught.value.message.startswith("invalid world: invalid world ")
    assert "logs" in caught.value.message


def test_a_wrong_key_in_an_inline_world_names_its_field_and_line_in_the_scenario(
    tmp_path: Path,
) -> None:
    inline = (
        "world:\n"
        "  now: '2026-07-08T11:17:00+08:00'\n"
        "  alerts:\n"
        "    - {alert_name: A, service: s, state: up, current: '1', threshold: '2',\n"
        "       duration: 1m, description: d}\n"
        "  failure: {query_logs: timeout}\n"
    )
    path = write(tmp_path, EXAMPLE.replace("world: default ", inline + "#"))
    with pytest.raises(ScenarioError) as caught:
        load_scenario_world(load_scenario(path), path)
    assert (caught.value.line, caught.value.field_path) == (6, "world")
    problems = caught.value.message.splitlines()[1:]
    assert problems == [
        "  - world.alerts[0].state (line 9): Input should be 'firing', 'pending' or 'resolved';"
        " got 'up'",
        "  - world.failure (line 11): unknown key 'failure'; allowed keys: now, description,"
        " alerts, logs, knowledge, failures, aliases",
    ]


# --------------------------------------------------------------------------- cassettes, ids


def test_cassette_paths(tmp_path: Path) -> None:
    path = write(tmp_path, EXAMPLE)
    scenario = load_scenario(path)
    explicit = resolve_cassette_path(scenario, path, tmp_path / "cassettes")
    assert explicit == tmp_path / "../cassettes/hikaricp-negative.yaml"
    without_llm = scenario.model_copy(update={"llm": None})
    assert resolve_cassette_path(without_llm, path, tmp_path / "c") == (
        tmp_path / "c" / "hikaricp-negative.yaml"
    )
    assert default_cassette_path("x", "cas") == Path("cas/x.yaml")


def test_a_scripted_scenario_has_no_cassette(tmp_path: Path) -> None:
    text = EXAMPLE.replace("  cassette: ../cassettes/hikaricp-negative.yaml\n", SCRIPT_LLM[5:])
    path = write(tmp_path, text)
    assert resolve_cassette_path(load_scenario(path), path, tmp_path, must_exist=True) is None


def test_a_missing_cassette_points_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, EXAMPLE)
    scenario = load_scenario(path)
    with pytest.raises(ScenarioError) as caught:
        resolve_cassette_path(scenario, path, tmp_path, must_exist=True)
    assert (caught.value.line, caught.value.column) == (8, 3)
    assert caught.value.field_path == "llm.cassette"
    assert caught.value.message.startswith("cassette not found: ")
    assert "--diageval-record=once" in caught.value.message
    without_llm = scenario.model_copy(update={"llm": None})
    with pytest.raises(ScenarioError) as caught:
        resolve_cassette_path(without_llm, path, tmp_path / "cassettes", must_exist=True)
    assert (caught.value.line, caught.value.field_path) == (2, "id")


def test_duplicate_ids_name_every_file() -> None:
    messages = duplicate_ids(
        [("a", "s/one.yaml"), ("b", "s/two.yaml"), ("a", "s/three.yaml"), ("a", "x/a.yaml")]
    )
    assert messages == [
        "duplicate scenario id 'a' in s/one.yaml and s/three.yaml and x/a.yaml:"
        " ids must be unique in a run (give all but one of them a distinct `id:`)"
    ]
    assert duplicate_ids([("a", "one.yaml"), ("b", "two.yaml")]) == []


def test_a_scenario_built_without_the_loader_has_no_id() -> None:
    scenario = Scenario.model_validate(
        {"title": "t", "query": "q", "world": "default", "expect": {"rounds": 1}}
    )
    with pytest.raises(ValueError, match="load it with load_scenario"):
        _ = scenario.scenario_id


def test_an_alias_bomb_in_a_scenario_file_is_refused_at_its_line(tmp_path: Path) -> None:
    """The loader walks the aliases of any file with a ``*`` (the walk is skipped only for
    text that cannot hold an alias)."""
    levels = ["l0: &l0 [x, x, x, x, x, x, x, x, x]\n"]
    levels += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]\n" for n in range(1, 9)]
    path = tmp_path / "bomb.yaml"
    path.write_text("".join(levels), encoding="utf-8")

    with pytest.raises(ScenarioError) as excinfo:
        load_scenario(path)

    assert excinfo.value.line == 6
    assert "YAML aliases expand this value to more than 200,000 values" in str(excinfo.value)
