"""A cassette's recorded numbers cannot end the session or pass a budget wrongly (issue 41):
a usage of minus a million tokens, an infinite one, or a recorded timeout of hundreds of digits
is that scenario's failure, naming the cassette, never an INTERNALERROR (also when
``--diageval-record=stale`` reads the cassettes before anything runs). Real in-process runs of
a cassette recorded against the local fake server of tests/support, then edited."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

from support.fake_openai_server import FakeOpenAIServer

if TYPE_CHECKING:
    from conftest import ScenarioDir

SCENARIO = "scenarios/memory.yaml"
CASSETTE = "scenarios/cassettes/memory.yaml"


@pytest.fixture
def recorded(pytester: pytest.Pytester, scenarios: ScenarioDir) -> Path:
    """The example scenario with a token budget, recorded (its answers report usage), and a
    good scripted scenario beside it."""
    data = scenarios.full()
    script = scenarios.script(data)
    good = scenarios.full()
    good["id"] = "good-scripted"
    scenarios.write("scenarios/good.yaml", good)
    data["llm"] = {"cassette": "cassettes/memory.yaml"}
    data["expect"] = {"verdict": "PASS", "tokens": {"max": 100000}}
    scenarios.write(SCENARIO, data)
    with FakeOpenAIServer(script) as server:
        pytester.runpytest(
            SCENARIO,
            *("--diageval-record=once", "--diageval-base-url", server.base_url),
            *("--diageval-model", "m"),
        ).assert_outcomes(passed=2)
    return pytester.path / CASSETTE


def _edit_usage(cassette: Path, usage: str) -> None:
    """Every recorded answer's ``usage`` replaced by the JSON text ``usage``."""
    data = yaml.safe_load(cassette.read_text("utf-8"))
    for interaction in data["interactions"]:
        body = json.loads(interaction["response"]["body"]["string"])
        body["usage"] = "USAGE"
        text = json.dumps(body, indent=2).replace('"USAGE"', usage)
        interaction["response"]["body"]["string"] = text
    cassette.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), "utf-8")


USAGES = [
    pytest.param(
        '{"prompt_tokens": -1000000, "completion_tokens": 1, "total_tokens": -999999}',
        "usage.prompt_tokens is -1000000",
        id="negative",
    ),
    pytest.param(
        '{"prompt_tokens": Infinity, "completion_tokens": 1, "total_tokens": Infinity}',
        "usage.prompt_tokens is inf",
        id="infinite",
    ),
    pytest.param(
        '{"prompt_tokens": 1.5, "completion_tokens": 1, "total_tokens": 2.5}',
        "usage.prompt_tokens is 1.5",
        id="fraction",
    ),
    pytest.param(
        '{"prompt_tokens": true, "completion_tokens": 1, "total_tokens": 2}',
        "usage.prompt_tokens is True",
        id="boolean",
    ),
]


@pytest.mark.parametrize(("usage", "said"), USAGES)
def test_a_recorded_usage_that_is_no_count_fails_its_scenario_naming_the_cassette(
    pytester: pytest.Pytester, recorded: Path, usage: str, said: str
) -> None:
    _edit_usage(recorded, usage)

    result = pytester.runpytest()

    result.assert_outcomes(passed=11, failed=2)  # the good scenario passes beside it
    text = result.stdout.str()
    assert "INTERNALERROR" not in text
    assert f"cassette {recorded}: interaction #1 (planner, round 1): {said}" in text
    assert "not a count of tokens (a whole number, 0 or more)" in text
    assert "memory.yaml::high-memory-positive::tokens PASSED" not in text


@pytest.mark.parametrize("prompt_changed", [False, True], ids=["current", "stale-too"])
@pytest.mark.parametrize(("usage", "said"), USAGES[:2])
def test_stale_rerecording_reads_a_cassette_of_no_count_usage_without_internal_error(
    pytester: pytest.Pytester, recorded: Path, usage: str, said: str, prompt_changed: bool
) -> None:
    _edit_usage(recorded, usage)
    if prompt_changed:  # the cassette no longer matches either: its usage counted for the cost
        scenario = pytester.path / SCENARIO
        text = scenario.read_text("utf-8")
        scenario.write_text(text.replace("只确认 order-service", "请只确认 order-service"), "utf-8")

    result = pytester.runpytest("--diageval-record=stale", "-p", "no:randomly")

    text = result.stdout.str()
    assert "INTERNALERROR" not in text
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # Not stale (nothing would match better if recorded again): unreadable, and said so.
    assert "diageval: none of the 1 cassette scenario(s) is stale: nothing to record" in text
    assert f"cassette {recorded}: interaction #1 (planner, round 1): {said}" in text


@pytest.mark.parametrize("digits", [400, 5000])
@pytest.mark.parametrize("record", [[], ["--diageval-record=stale"]])
def test_a_recorded_timeout_of_hundreds_of_digits_fails_its_scenario_naming_the_limit(
    pytester: pytest.Pytester, recorded: Path, record: list[str], digits: int
) -> None:
    """The cassette is read within the YAML limits (core.evidence.yaml_limits): an integer
    over the digit limit fails its scenario at its line, never the session."""
    text = recorded.read_text("utf-8")
    assert "  timeout: 60.0\n" in text
    recorded.write_text(text.replace("  timeout: 60.0\n", f"  timeout: {'9' * digits}\n"))

    result = pytester.runpytest(*record)

    assert "INTERNALERROR" not in result.stdout.str()
    result.assert_outcomes(passed=11, failed=2)
    assert (
        f"cassette {recorded} is not valid YAML: line 4, column 12: an integer of {digits:,}"
        " digits, over the integer limit of 20 digits"
    ) in result.stdout.str()


@pytest.mark.parametrize("staged", [".memory.yaml.recording", ".memory.yaml.metadata"])
@pytest.mark.parametrize("mode", ["rewrite", "all", "once"])
def test_a_recording_writes_nothing_through_a_symlink_planted_beside_the_cassette(
    pytester: pytest.Pytester,
    scenarios: ScenarioDir,
    tmp_path_factory: pytest.TempPathFactory,
    staged: str,
    mode: str,
) -> None:
    outside = tmp_path_factory.mktemp("outside") / "precious.txt"
    outside.write_text("outside the project, never written\n", encoding="utf-8")
    data = scenarios.full()
    script = scenarios.script(data)
    data["llm"] = {"cassette": "cassettes/memory.yaml"}
    scenarios.write(SCENARIO, data)
    link = pytester.path / "scenarios" / "cassettes" / staged
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)

    with FakeOpenAIServer(script) as server:
        result = pytester.runpytest(
            *(f"--diageval-record={mode}", "--diageval-base-url", server.base_url),
            *("--diageval-model", "m"),
        )

    result.assert_outcomes(passed=11)
    assert outside.read_text("utf-8") == "outside the project, never written\n"
    assert "interactions:" in (pytester.path / CASSETTE).read_text("utf-8")
    pytester.runpytest().assert_outcomes(passed=11)


def test_a_mutation_run_reports_a_cassette_it_cannot_mutate_and_runs_the_rest(
    pytester: pytest.Pytester, recorded: Path
) -> None:
    # Valid JSON (the replay reads it and reaches PASS), but no YAML: a tab starts a token.
    data = yaml.safe_load(recorded.read_text("utf-8"))
    answer = data["interactions"][0]["response"]["body"]
    answer["string"] = json.dumps(json.loads(answer["string"]), indent="\t")
    recorded.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), "utf-8")
    pytester.runpytest(SCENARIO).assert_outcomes(passed=2)  # the cassette replays

    result = pytester.runpytest("--diageval-mutate")

    text = result.stdout.str()
    assert "error during collection" not in text
    assert "INTERNALERROR" not in text
    result.assert_outcomes(passed=41, skipped=13, failed=1)  # the good scenario's mutants ran
    assert "FAILED scenarios/memory.yaml::high-memory-positive::mutation-setup" in text
    assert f"{recorded}" in text
