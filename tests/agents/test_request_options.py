"""Request options per stage: entries parsed (good and bad), which entry wins, what each
stage's requests then send (re-asks included), the cassette metadata form and the command
line that gives the same requests again."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from pydantic import BaseModel

from pytest_diageval.agents.llm import STAGE_MAX_TOKENS, LLMConfig
from pytest_diageval.agents.request_options import (
    RequestOptions,
    RequestOptionsError,
    StageOptions,
    configured_options,
    parse_entries,
    split_ini_entries,
)
from pytest_diageval.agents.scripted.model import SCRIPTED_BASE_URL, scripted_llm
from pytest_diageval.core.contract.text_bounds import answer_char_bound

QUERY = [{"role": "user", "content": "只确认 order-service 是否存在 HighMemoryUsage 告警"}]
GOOD_PLAN = {"plan": "确认告警", "steps": ["查询告警"]}


class Plan(BaseModel):
    plan: str
    steps: list[str]


def _options(**entries: list[str]) -> RequestOptions:
    return configured_options(entries, {})  # type: ignore[arg-type]


# ------------------------------------------------------------------ parsing


@pytest.mark.parametrize(
    ("kind", "entries", "parsed"),
    [
        ("temperature", ["0.7"], {None: 0.7}),
        ("temperature", ["1"], {None: 1.0}),
        ("temperature", ["executor=0.7", "verifier=omit"], {"executor": 0.7, "verifier": None}),
        ("temperature", [" grader = 0 "], {"grader": 0.0}),
        ("temperature", ["executor=0.7", "executor=0.2"], {"executor": 0.2}),  # later wins
        ("max_tokens", ["omit", "planner=256"], {None: None, "planner": 256}),
        ("extra_body", ['{"seed": 7}'], {None: {"seed": 7}}),
        (
            "extra_body",
            ['executor={"reasoning_effort": "low", "x": "a=b"}'],
            {"executor": {"reasoning_effort": "low", "x": "a=b"}},
        ),
        # Two entries for one stage: their keys are merged, the later's win.
        ("extra_body", ['{"seed": 7, "top_p": 1}', '{"seed": 8}'], {None: {"seed": 8, "top_p": 1}}),
    ],
)
def test_good_entries(kind: Any, entries: list[str], parsed: dict[Any, Any]) -> None:
    assert parse_entries(kind, entries, "--x") == parsed


ALL = "planner, executor, verifier, grader"


@pytest.mark.parametrize(
    ("kind", "entry", "message"),
    [
        (
            "temperature",
            "exec=0.7",
            f"--x 'exec=0.7': unknown stage 'exec'; allowed: {ALL} (or no STAGE= for every stage)",
        ),
        ("temperature", "warm", "--x 'warm': expected a number >= 0 or omit"),
        ("temperature", "-0.1", "--x '-0.1': -0.1 is not a number >= 0 or omit"),
        ("temperature", "nan", "--x 'nan': nan is not a number >= 0 or omit"),
        ("temperature", "executor=OMIT", "--x 'executor=OMIT': expected a number >= 0 or omit"),
        ("max_tokens", "1.5", "--x '1.5': expected a whole number >= 1, schema or omit"),
        (
            "max_tokens",
            "verifier=0",
            "--x 'verifier=0': 0 is not a whole number >= 1, schema or omit",
        ),
        ("extra_body", "[1]", "--x '[1]': [1] is not a JSON object"),
        ("extra_body", "seed=7", f"--x 'seed=7': unknown stage 'seed'; allowed: {ALL}"),
        (
            "extra_body",
            "{seed: 7}",
            "--x '{seed: 7}': not JSON (Expecting property name enclosed in double quotes:",
        ),
        (
            "extra_body",
            '{"model": "other"}',
            "--x '{\"model\": \"other\"}': the extra body may not set 'model' (the client sends"
            " the recorded or configured model)",
        ),
        (
            "extra_body",
            'verifier={"max_tokens": 9}',
            "the extra body may not set 'max_tokens' (use --diageval-max-tokens)",
        ),
    ],
)
def test_bad_entries_name_the_option_the_entry_and_what_is_allowed(
    kind: Any, entry: str, message: str
) -> None:
    with pytest.raises(RequestOptionsError) as raised:
        parse_entries(kind, [entry], "--x")
    assert message in str(raised.value)


def test_ini_entries_split_on_whitespace_but_not_inside_json() -> None:
    lines = ['0.5 executor={"a": "x y", "b": [1, 2]}', '  planner={"q": "say \\"hi } \\""}  ']
    assert split_ini_entries(lines) == [
        "0.5",
        'executor={"a": "x y", "b": [1, 2]}',
        'planner={"q": "say \\"hi } \\""}',
    ]


def test_the_command_line_replaces_the_ini_entries_of_its_option_only() -> None:
    options = configured_options(
        {"temperature": ["planner=0.9"], "max_tokens": None},
        {"temperature": ["0.3 verifier=0.1"], "max_tokens": ["executor=100"]},
    )
    assert options.temperature == {"planner": 0.9}
    assert options.max_tokens == {"executor": 100}
    with pytest.raises(RequestOptionsError, match=r"^ini diageval_max_tokens 'x': expected"):
        configured_options({}, {"max_tokens": ["x"]})


# ------------------------------------------------------------------ what each stage sends


def test_a_staged_entry_wins_over_the_entry_for_every_stage() -> None:
    options = _options(
        temperature=["0.4", "executor=0.7"],
        max_tokens=["verifier=omit"],
        extra_body=['{"seed": 7}', 'executor={"seed": 8, "reasoning_effort": "low"}'],
    )
    assert options.stage("planner") == StageOptions(0.4, "schema", {"seed": 7})
    assert options.stage("executor") == StageOptions(
        0.7, "schema", {"seed": 8, "reasoning_effort": "low"}
    )
    assert options.stage("verifier") == StageOptions(0.4, None, {"seed": 7})
    assert RequestOptions().stage("grader") == StageOptions(0.0, "schema", {})


def _bodies(options: RequestOptions) -> list[dict[str, Any]]:
    """The bodies of a planner answer re-asked once and one executor chat."""
    config = LLMConfig(
        base_url=SCRIPTED_BASE_URL,
        model="m",
        api_key="k",
        max_retries=0,
        request_options=options,
    )
    llm, transport = scripted_llm(
        [
            {"stage": "planner", "raw": "不是 JSON"},
            {"stage": "planner", "content": GOOD_PLAN},
            {"stage": "executor", "raw": "好"},
        ],
        config,
    )
    with llm:
        llm.structured(Plan, QUERY, stage="planner", round=1)
        llm.chat(QUERY, stage="executor", round=1)
    transport.assert_exhausted()
    return [json.loads(request.content) for request in transport.requests]


def test_each_stage_sends_its_options_and_a_re_ask_sends_them_again() -> None:
    options = _options(
        temperature=["planner=omit"],
        max_tokens=["executor=omit", "planner=64"],
        extra_body=['planner={"seed": 7}'],
    )
    planner, reask, executor = _bodies(options)
    for body in (planner, reask):
        assert "temperature" not in body
        assert (body["max_tokens"], body["seed"]) == (64, 7)
        assert list(body)[-1] == "seed"  # merged last, as the SDK merges extra_body
    assert "max_tokens" not in executor
    assert (executor["temperature"], "seed" in executor) == (0.0, False)


def test_by_default_max_tokens_is_the_longest_answer_the_offered_functions_admit() -> None:
    planner, _, executor = _bodies(RequestOptions())
    parameters = planner["tools"][0]["function"]["parameters"]
    # plan (128 characters) and steps (96 each; an array with no maxItems counts one), in JSON
    assert answer_char_bound(parameters) == 2 + (6 + 4 + 130) + (7 + 4 + 2 + (98 + 2))
    assert [(b["temperature"], b["max_tokens"]) for b in (planner, executor)] == [
        (0.0, answer_char_bound(parameters)),
        (0.0, STAGE_MAX_TOKENS["executor"]),  # a request that offers no function
    ]
    assert set(planner) == {
        "messages",
        "model",
        "max_tokens",
        "temperature",
        "tool_choice",
        "tools",
    }


def test_the_config_temperature_is_the_default_the_options_fall_back_on() -> None:
    planner, _, executor = _bodies(_options(temperature=["executor=0.7"]))
    assert (planner["temperature"], executor["temperature"]) == (0.0, 0.7)
    assert RequestOptions().stage("planner", temperature=0.3).temperature == 0.3


# ------------------------------------------------------------------ metadata, command line


def test_the_metadata_holds_every_stage_and_reads_back_to_the_same_requests() -> None:
    options = _options(
        temperature=["executor=0.7"], max_tokens=["verifier=omit"], extra_body=['{"seed": 7}']
    )
    block = options.to_metadata()
    assert block["verifier"] == {
        "temperature": 0.0,
        "max_tokens": "omit",
        "extra_body": {"seed": 7},
    }
    assert block["planner"] == {
        "temperature": 0.0,
        "max_tokens": "schema",
        "extra_body": {"seed": 7},
    }
    again = RequestOptions.from_metadata(block)
    for stage in ("planner", "executor", "verifier", "grader"):
        assert again.stage(stage) == options.stage(stage)  # type: ignore[arg-type]
    assert again.command_line() == options.command_line()


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ([], "request_options: expected a mapping of stages, got []"),
        ({"critic": {}}, f"request_options.critic: unknown stage; allowed: {ALL}"),
        ({"planner": 1}, "request_options.planner: expected a mapping, got 1"),
        (
            {"planner": {"top_p": 1}},
            "request_options.planner.top_p: unknown field; allowed: temperature, max_tokens,"
            " extra_body",
        ),
        (
            {"planner": {"max_tokens": "512"}},
            "request_options.planner.max_tokens: '512' is not a whole number >= 1, schema or omit",
        ),
        (
            {"planner": {"temperature": True}},
            "request_options.planner.temperature: True is not a number >= 0 or omit",
        ),
    ],
)
def test_unusable_metadata_names_the_field(block: object, message: str) -> None:
    with pytest.raises(RequestOptionsError) as raised:
        RequestOptions.from_metadata(block)
    assert str(raised.value).startswith(message)


def test_a_stage_missing_from_the_metadata_keeps_the_defaults() -> None:
    options = RequestOptions.from_metadata({"executor": {"temperature": 0.7}})
    assert options.stage("executor") == StageOptions(0.7, "schema", {})
    assert options.stage("verifier") == StageOptions(0.0, "schema", {})
    recorded = RequestOptions.from_metadata({"executor": {"max_tokens": 2048}})
    assert recorded.stage("executor") == StageOptions(0.0, 2048, {})  # an older recording


@pytest.mark.parametrize(
    ("entries", "flags"),
    [
        ({}, []),
        ({"temperature": ["0"], "max_tokens": ["executor=schema"]}, []),  # the defaults
        ({"temperature": ["0.7"]}, ["--diageval-temperature", "0.7"]),
        (
            {"temperature": ["grader=0.123456789"]},
            ["--diageval-temperature", "grader=0.123456789"],
        ),
        (
            {"max_tokens": ["omit", "executor=4096"]},
            [
                *("--diageval-max-tokens", "planner=omit", "--diageval-max-tokens"),
                *("executor=4096", "--diageval-max-tokens", "verifier=omit"),
                *("--diageval-max-tokens", "grader=omit"),
            ],
        ),
        ({"max_tokens": ["omit"]}, ["--diageval-max-tokens", "omit"]),
        (
            {"extra_body": ['{"reasoning_effort": "低"}']},
            ["--diageval-extra-body", '{"reasoning_effort":"低"}'],
        ),
    ],
)
def test_the_command_line_names_only_what_differs_from_the_defaults(
    entries: dict[str, list[str]], flags: list[str]
) -> None:
    options = _options(**entries)
    assert options.command_line() == flags
    again = _options(**_grouped(flags))
    for stage in ("planner", "executor", "verifier", "grader"):
        assert again.stage(stage) == options.stage(stage)  # type: ignore[arg-type]


def test_the_old_default_number_an_older_recording_kept_is_re_recorded_with_todays() -> None:
    # Recorded before max_tokens followed the schema: the metadata holds 512 / 2048 / 1536.
    old = RequestOptions.from_metadata(
        {"planner": {"max_tokens": 512}, "executor": {"max_tokens": 2048, "temperature": 0.7}}
    )
    assert old.command_line() == ["--diageval-temperature", "executor=0.7"]
    other = RequestOptions.from_metadata({"executor": {"max_tokens": 2047}})
    assert other.command_line() == ["--diageval-max-tokens", "executor=2047"]


def _grouped(flags: list[str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for flag, value in zip(flags[::2], flags[1::2], strict=True):
        grouped.setdefault(flag.removeprefix("--diageval-").replace("-", "_"), []).append(value)
    return grouped


def test_the_settings_parse_the_options_without_loading_the_model_libraries() -> None:
    """The plugin reads the options at startup of every pytest run: only the standard library."""
    code = (
        "import sys; import pytest_diageval.harness.settings;"
        " print(sorted(m for m in ('openai', 'instructor', 'pydantic', 'httpx2', 'vcr')"
        " if m in sys.modules))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert shown.strip() == "[]"
