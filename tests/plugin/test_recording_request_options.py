"""Request options per stage, end to end: recorded against the local fake server with
``--diageval-temperature`` / ``--diageval-max-tokens`` / ``--diageval-extra-body``, written into
the cassette's metadata, replayed without flags, carried by the printed re-record command;
bad entries stop the run at startup (real pytest runs)."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from pytest_diageval.core.contract.text_bounds import functions_char_bound
from pytest_diageval.harness.cassettes.rerecord import read_metadata
from support.fake_openai_server import FakeOpenAIServer

if TYPE_CHECKING:
    from conftest import ScenarioDir

REPO = Path(__file__).resolve().parents[2]
SCENARIO = "scenarios/sampled.yaml"
OPTIONS = (
    *("--diageval-temperature", "executor=0.7"),
    *("--diageval-max-tokens", "verifier=omit"),
    *("--diageval-extra-body", '{"seed": 7}'),
)
# What the options above make of every stage's requests.
EFFECTIVE = {
    "planner": {"temperature": 0.0, "max_tokens": "schema", "extra_body": {"seed": 7}},
    "executor": {"temperature": 0.7, "max_tokens": "schema", "extra_body": {"seed": 7}},
    "verifier": {"temperature": 0.0, "max_tokens": "omit", "extra_body": {"seed": 7}},
    "grader": {"temperature": 0.0, "max_tokens": "schema", "extra_body": {"seed": 7}},
}


def _write_scenario(scenarios: ScenarioDir, query_suffix: str = "") -> None:
    data = scenarios.full()
    data["id"] = "sampled"
    data["query"] += query_suffix
    data["llm"] = {"cassette": "../cassettes/sampled.yaml"}
    scenarios.write(SCENARIO, data)


def _record(
    pytester: pytest.Pytester, scenarios: ScenarioDir, *options: str
) -> tuple[pytest.RunResult, FakeOpenAIServer]:
    _write_scenario(scenarios)
    with FakeOpenAIServer(scenarios.script(scenarios.full())) as server:
        result = pytester.runpytest(
            SCENARIO,
            "--diageval-record=once",
            *("--diageval-base-url", server.base_url, "--diageval-model", "m"),
            *options,
        )
    return result, server


def _sent(server: FakeOpenAIServer) -> list[tuple[str, dict[str, Any]]]:
    return [(r.headers["x-diageval-stage"], json.loads(r.body)) for r in server.received]


def _parameters(body: dict[str, Any]) -> dict[str, Any]:
    """Everything of a request body but the conversation and the tools; a ``max_tokens`` that
    is the longest answer the body's functions admit is shown as ``schema`` (the default)."""
    found = {k: v for k, v in body.items() if k not in ("messages", "tools", "tool_choice")}
    message = body.get("tool_choice") in (None, "auto")
    if found.get("max_tokens") == functions_char_bound(body.get("tools", []), message=message):
        found["max_tokens"] = "schema"
    return found


def test_a_recording_sends_the_options_per_stage_and_keeps_them_in_the_metadata(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    result, server = _record(pytester, scenarios, *OPTIONS)

    result.assert_outcomes(passed=11)
    assert [(stage, _parameters(body)) for stage, body in _sent(server)] == [
        ("planner", {"model": "m", "max_tokens": "schema", "temperature": 0.0, "seed": 7}),
        ("executor", {"model": "m", "max_tokens": "schema", "temperature": 0.7, "seed": 7}),
        ("executor", {"model": "m", "max_tokens": "schema", "temperature": 0.7, "seed": 7}),
        ("verifier", {"model": "m", "temperature": 0.0, "seed": 7}),
    ]
    # The extra body comes last, where the SDK's own extra_body merge puts a new key.
    assert all(list(body)[-1] == "seed" for _, body in _sent(server))
    cassette = pytester.path / "cassettes" / "sampled.yaml"
    assert yaml.safe_load(cassette.read_text("utf-8"))["diageval"]["request_options"] == EFFECTIVE
    metadata = read_metadata(cassette)
    assert metadata is not None
    assert metadata.options()[-6:] == [
        *("--diageval-temperature", "executor=0.7", "--diageval-max-tokens", "verifier=omit"),
        *("--diageval-extra-body", '{"seed":7}'),
    ]


def test_a_replay_without_flags_sends_the_recorded_options(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    _record(pytester, scenarios, *OPTIONS)[0].assert_outcomes(passed=11)

    # The server is gone: any request the cassette does not match fails as stale.
    pytester.runpytest(SCENARIO).assert_outcomes(passed=11)
    # In replay the cassette's options win over the command line's, like its model does.
    pytester.runpytest(SCENARIO, "--diageval-temperature", "0.2").assert_outcomes(passed=11)


def test_the_options_decide_the_match_so_a_cassette_without_them_replays_stale(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    """Without its metadata (an old cassette: the defaults) the executor's requests at
    temperature 0.7 and with a seed no longer match: the diff names both."""
    _record(pytester, scenarios, *OPTIONS)[0].assert_outcomes(passed=11)
    cassette = pytester.path / "cassettes" / "sampled.yaml"
    text = cassette.read_text("utf-8")
    cassette.write_text(text[text.index("interactions:") :], "utf-8")

    result = pytester.runpytest(SCENARIO)

    result.assert_outcomes(failed=11)
    output = result.stdout.str()
    assert "stage planner, round 1" in output
    assert "-seed: 7" in output


def test_a_stale_cassette_prints_a_rerecord_command_with_its_options(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    result, server = _record(pytester, scenarios, *OPTIONS)
    result.assert_outcomes(passed=11)
    _write_scenario(scenarios, "（请尽快）")  # the request changes: the cassette is stale

    result = pytester.runpytest(SCENARIO)

    result.assert_outcomes(failed=11)
    options = shlex.join(
        [
            *("--diageval-base-url", server.base_url, "--diageval-model", "m"),
            *("--diageval-timeout", "60", *OPTIONS[:4]),
            *("--diageval-extra-body", '{"seed":7}'),
        ]
    )
    python = shlex.quote(sys.executable)
    single = f"{python} -m pytest {SCENARIO}::sampled --diageval-record=rewrite {options}"
    assert result.outlines.count(f"Re-record this scenario with: {single}") == 1
    assert result.outlines[-1] == f"{python} -m pytest {SCENARIO} --diageval-record=stale {options}"


def test_the_default_options_leave_requests_as_before_and_the_command_without_flags(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    result, server = _record(pytester, scenarios)

    result.assert_outcomes(passed=11)
    assert [(stage, _parameters(body)) for stage, body in _sent(server)] == [
        ("planner", {"model": "m", "max_tokens": "schema", "temperature": 0.0}),
        ("executor", {"model": "m", "max_tokens": "schema", "temperature": 0.0}),
        ("executor", {"model": "m", "max_tokens": "schema", "temperature": 0.0}),
        ("verifier", {"model": "m", "max_tokens": "schema", "temperature": 0.0}),
    ]
    metadata = read_metadata(pytester.path / "cassettes" / "sampled.yaml")
    assert metadata is not None
    assert metadata.options() == [
        *("--diageval-base-url", server.base_url, "--diageval-model", "m"),
        *("--diageval-timeout", "60"),
    ]


def test_ini_entries_apply_and_the_command_line_replaces_them(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    pytester.makeini(
        """
        [pytest]
        diageval_temperature = 0.3 verifier=0.1
        diageval_extra_body = executor={"reasoning_effort": "low", "note": "a b"}
        """
    )
    result, server = _record(pytester, scenarios, "--diageval-temperature", "planner=0.9")

    result.assert_outcomes(passed=11)
    sent = [
        (stage, body["temperature"], body.get("reasoning_effort")) for stage, body in _sent(server)
    ]
    # The command line's temperature replaces the ini's entries; the ini's extra body stays.
    assert sent == [
        ("planner", 0.9, None),
        ("executor", 0.0, "low"),
        ("executor", 0.0, "low"),
        ("verifier", 0.0, None),
    ]
    assert json.loads(server.received[1].body)["note"] == "a b"


def test_the_readme_toml_example_records_what_it_says(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    readme = (REPO / "docs" / "guide.md").read_text("utf-8")
    (toml,) = [
        block
        for block in re.findall(r"```toml\n(.*?)```", readme, re.DOTALL)
        if "diageval_extra_body" in block
    ]
    pytester.makepyprojecttoml(toml)

    result, server = _record(pytester, scenarios)

    result.assert_outcomes(passed=11)
    sent = [(stage, _parameters(body)) for stage, body in _sent(server)]
    assert sent == [
        ("planner", {"model": "m", "max_tokens": "schema", "temperature": 0.0, "seed": 7}),
        ("executor", {"model": "m", "max_tokens": "schema", "temperature": 0.7, "seed": 7}),
        ("executor", {"model": "m", "max_tokens": "schema", "temperature": 0.7, "seed": 7}),
        (
            "verifier",
            {
                **{"model": "m", "max_tokens": "schema", "temperature": 0.0},
                **{"seed": 7, "reasoning_effort": "high"},
            },
        ),
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--diageval-temperature", "exec=0.7"],
            "argument --diageval-temperature: 'exec=0.7': unknown stage"
            " 'exec'; allowed: planner, executor, verifier, grader (or no STAGE= for every stage)",
        ),
        (
            ["--diageval-max-tokens", "verifier=1.5"],
            "argument --diageval-max-tokens: 'verifier=1.5': expected a whole number >= 1,"
            " schema or omit",
        ),
        (
            ["--diageval-extra-body", "executor={seed: 7}"],
            "argument --diageval-extra-body: 'executor={seed: 7}': not JSON"
            " (Expecting property name enclosed in double quotes: line 1 column 2 (char 1));"
            " expected a JSON object",
        ),
        (
            ["--diageval-extra-body", '{"messages": []}'],
            "argument --diageval-extra-body: '{\"messages\": []}': the extra"
            " body may not set 'messages' (the client builds the conversation); keys it may not"
            " set: model, messages, tools, tool_choice, response_format, stream, n, temperature,"
            " max_tokens",
        ),
    ],
)
def test_a_bad_entry_on_the_command_line_stops_the_run_at_startup(
    pytester: pytest.Pytester, scenarios: ScenarioDir, arguments: list[str], message: str
) -> None:
    _write_scenario(scenarios)

    result = pytester.runpytest(SCENARIO, *arguments)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    # pytest names itself ``pytest.main()`` in process: the line's end is the message.
    assert any(line.endswith(f": error: {message}") for line in result.stderr.lines)


def test_a_bad_ini_entry_stops_the_run_at_startup(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    _write_scenario(scenarios)
    pytester.makeini("[pytest]\ndiageval_temperature = executor=-1\n")

    result = pytester.runpytest(SCENARIO)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "ERROR: ini diageval_temperature 'executor=-1': -1.0 is not a number >= 0 or omit"
        in result.stderr.lines
    )
    assert "collected" not in result.stdout.str()


def test_a_cassette_with_unusable_recorded_options_says_which_field(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    _record(pytester, scenarios, *OPTIONS)[0].assert_outcomes(passed=11)
    cassette = pytester.path / "cassettes" / "sampled.yaml"
    cassette.write_text(
        cassette.read_text("utf-8").replace("temperature: 0.7", "temperature: warm"), "utf-8"
    )

    result = pytester.runpytest(SCENARIO)

    result.assert_outcomes(failed=11)
    shown = Path("cassettes") / "sampled.yaml"
    assert (
        f"RequestOptionsError: cassette {shown}: diageval.request_options.executor.temperature:"
        " 'warm' is not a number >= 0 or omit; fix it or re-record the cassette"
    ) in result.stdout.str()
