"""Cassettes through the plugin: record against a local OpenAI-compatible server with a canary
key, replay offline to the same verdict, stale prompts, unplayed interactions, key scanning.

The first recording (with the canary key in its environment) is a ``pytest`` subprocess;
the other runs are in process, which is safe because a cassette session undoes vcrpy's
patching when it ends and the prompt edit is undone at unconfigure. The server
(tests/support/fake_openai_server.py) listens on 127.0.0.1 and answers from the documented
example's script; it is stopped before any replay.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from support.fake_openai_server import FakeOpenAIServer, ReceivedRequest
from support.prompt_edit import planner_prompt_edit_conftest

if TYPE_CHECKING:
    from conftest import ScenarioDir

# Built at run time so that no key-like literal sits in the source tree.
CANARY_KEY = "sk-" + "canary-0123456789abcdefCANARY"
PLANTED_KEY = "sk-" + "planted0123456789abcdefPLANTED"
MODEL = "m"
SCENARIO = "scenarios/memory.yaml"
CASSETTE = "scenarios/cassettes/memory.yaml"
NODE = "scenarios/memory.yaml::high-memory-positive"
# Subprocesses import everything afresh; these unrelated costs are left out of them:
# the hypothesis plugin (imports hypothesis at the end of a run) and assertion rewriting.
LEAN = ("-p", "no:hypothesispytest", "--assert=plain", "-p", "no:cacheprovider")
ENDPOINT_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DIAGEVAL_MODEL")
# Response headers a real endpoint may send: two must be dropped, one carries the key.
SERVER_HEADERS = {
    "Set-Cookie": "session=abc123",
    "OpenAI-Organization": "org-private",
    "X-Echoed-Key": CANARY_KEY,
}


def _cassette_scenario(scenarios: ScenarioDir) -> dict[str, Any]:
    data = scenarios.full()
    data["llm"] = {"cassette": "cassettes/memory.yaml"}
    return data


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ENDPOINT_VARIABLES}
    return {**env, **extra}


@dataclass(frozen=True)
class Recording:
    """One real ``pytest --diageval-record=once`` run against the local server."""

    directory: Path
    output: str
    returncode: int
    received: list[ReceivedRequest]

    @property
    def cassette(self) -> Path:
        return self.directory / CASSETTE

    def report(self) -> Any:
        return json.loads((self.directory / "recorded.json").read_text("utf-8"))


def _record(directory: Path, scenario: dict[str, Any], script: list[dict[str, Any]]) -> Recording:
    path = directory / SCENARIO
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(scenario, allow_unicode=True, sort_keys=False), "utf-8")
    with FakeOpenAIServer(script, extra_headers=SERVER_HEADERS) as server:
        command = [
            *(sys.executable, "-m", "pytest", *LEAN, SCENARIO),
            *("--diageval-record=once", "--diageval-base-url", server.base_url),
            *("--diageval-model", MODEL, "--diageval-report", "recorded.json"),
        ]
        done = subprocess.run(
            command,
            cwd=directory,
            env=_clean_env(OPENAI_API_KEY=CANARY_KEY),
            capture_output=True,
            text=True,
            check=False,
        )
    return Recording(directory, done.stdout + done.stderr, done.returncode, server.received)


@pytest.fixture(scope="module")
def recording(
    tmp_path_factory: pytest.TempPathFactory, scenario_builders: type[ScenarioDir]
) -> Recording:
    scenario = scenario_builders.full()
    script = scenario_builders.script(scenario)
    scenario["llm"] = {"cassette": "cassettes/memory.yaml"}
    return _record(tmp_path_factory.mktemp("recording"), scenario, script)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No endpoint, model or key in the environment of the replays."""
    for name in ENDPOINT_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _copy_recording(recording: Recording, pytester: pytest.Pytester) -> Path:
    for relative in (SCENARIO, CASSETTE):
        target = pytester.path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(recording.directory / relative, target)
    return pytester.path / CASSETTE


# --------------------------------------------------------------------------- record


def test_recording_against_a_local_server_keeps_the_canary_key_out(
    recording: Recording,
) -> None:
    assert recording.returncode == 0, recording.output
    assert "11 passed" in recording.output
    # Four model calls (planner, executor twice, verifier), each sent with the canary key.
    assert [r.headers["x-diageval-stage"] for r in recording.received] == [
        "planner",
        "executor",
        "executor",
        "verifier",
    ]
    assert {r.headers["authorization"] for r in recording.received} == {f"Bearer {CANARY_KEY}"}

    text = recording.cassette.read_text("utf-8")
    assert CANARY_KEY not in text
    assert "<scrubbed-secret>" in text  # the echoed key header, scrubbed
    for dropped in ("authorization", "set-cookie", "abc123", "openai-organization", "org-private"):
        assert dropped not in text.lower()
    # Readable YAML: decoded JSON bodies with real Chinese characters, four interactions.
    interactions = yaml.safe_load(text)["interactions"]
    assert len(interactions) == 4
    first_body = json.loads(interactions[0]["request"]["body"])
    assert first_body["model"] == MODEL
    assert "只确认 order-service 是否存在 HighMemoryUsage 告警" in text
    assert "\\u" not in text


def test_replay_offline_without_endpoint_options_reaches_the_recorded_verdict(
    recording: Recording, pytester: pytest.Pytester, scenarios: ScenarioDir, offline: None
) -> None:
    _copy_recording(recording, pytester)

    # The server is gone, no base URL, model or key given: the model name comes from the
    # cassette, and any network access would fail the run.
    result = pytester.runpytest("-v", "--diageval-report", "replayed.json")

    result.assert_outcomes(passed=11)
    result.stdout.fnmatch_lines([f"{NODE}::verdict PASSED*"])
    replayed = json.loads((pytester.path / "replayed.json").read_text("utf-8"))
    (recorded_entry,) = recording.report()["scenarios"]
    (replayed_entry,) = replayed["scenarios"]
    assert replayed_entry["summary"]["verdict"] == "PASS"
    assert replayed_entry["summary"] == recorded_entry["summary"]
    # The whole audit trail is the recorded one (tool durations are wall-clock, left out).
    assert scenarios.without_durations(replayed_entry["result"]) == scenarios.without_durations(
        recorded_entry["result"]
    )


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("--diageval-model", "other-model"),
        ("--diageval-base-url", "https://gateway.example/openai/v1"),
        ("--diageval-record=once",),
    ],
)
def test_a_replay_sends_the_recorded_model_and_endpoint_whatever_the_options_say(
    recording: Recording,
    pytester: pytest.Pytester,
    offline: None,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
) -> None:
    _copy_recording(recording, pytester)
    # Exported for `diageval ask`; a replay (none, or once with a cassette) must not use them.
    # The path is matched: /openai/v1/chat/completions would miss /v1/chat/completions.
    monkeypatch.setenv("DIAGEVAL_MODEL", "other-model")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://gateway.example/openai/v1")

    result = pytester.runpytest(*args)

    result.assert_outcomes(passed=11)


def _without_llm(recording: Recording, scenarios: ScenarioDir, cassette: str) -> None:
    data = scenarios.full()
    del data["llm"]  # default: <cassette dir>/<id>.yaml
    scenarios.write(SCENARIO, data)
    target = scenarios.root / cassette / "high-memory-positive.yaml"
    target.parent.mkdir(parents=True)
    shutil.copyfile(recording.cassette, target)


def test_a_scenario_without_llm_replays_its_default_cassette(
    recording: Recording, pytester: pytest.Pytester, scenarios: ScenarioDir, offline: None
) -> None:
    _without_llm(recording, scenarios, "scenarios/cassettes")

    result = pytester.runpytest()

    result.assert_outcomes(passed=11)


def test_the_cassette_dir_option_moves_the_default_cassettes(
    recording: Recording, pytester: pytest.Pytester, scenarios: ScenarioDir, offline: None
) -> None:
    _without_llm(recording, scenarios, "shared/cassettes")
    pytester.makeini("[pytest]\ndiageval_cassette_dir = shared/cassettes\n")

    result = pytester.runpytest()

    result.assert_outcomes(passed=11)


def test_a_configured_cassette_dir_is_never_collected(
    recording: Recording, pytester: pytest.Pytester, scenarios: ScenarioDir, offline: None
) -> None:
    _without_llm(recording, scenarios, "recorded")
    pytester.makeini("[pytest]\ndiageval_cassette_dir = recorded\n")

    result = pytester.runpytest()

    result.assert_outcomes(passed=11)


# --------------------------------------------------------------------------- stale


STALE_PROMPT_CONFTEST = planner_prompt_edit_conftest("steps 最多 4 条", "steps 最多 3 条")


def test_a_prompt_change_fails_as_a_stale_cassette_with_diff_and_command(
    recording: Recording, pytester: pytest.Pytester, scenarios: ScenarioDir, offline: None
) -> None:
    cassette = _copy_recording(recording, pytester)
    scenarios.write_text("conftest.py", STALE_PROMPT_CONFTEST)

    result = pytester.runpytest()

    result.assert_outcomes(failed=11)
    # This interpreter, the node, and the endpoint, model and timeout of the recording.
    command = (
        f"{shlex.quote(sys.executable)} -m pytest {NODE} --diageval-record=rewrite"
        " --diageval-base-url http://127.0.0.1:*/v1 --diageval-model m --diageval-timeout 60"
    )
    result.stdout.fnmatch_lines(
        [
            "scenario high-memory-positive (HighMemoryUsage 证据存在时 PASS) — expectation"
            " 'verdict': the scenario did not run to the end",
            f"StaleCassetteError: stale cassette {cassette}: request #1 of this run"
            " (stage planner, round 1) matches no recorded interaction; the recorded request"
            " at the same position (stage planner, round 1) differs from it:",
            "--- recorded",
            "+++ this run",
            "@@ *",
            "-1. steps 最多 4 条，*",
            "+1. steps 最多 3 条，*",
            f"Re-record this scenario with: {command}",
        ]
    )
    # The diff and the command are shown once, on the first item; the others refer to it.
    hints = [line for line in result.outlines if line.startswith("Re-record this scenario")]
    assert len(hints) == 1
    assert result.outlines.count("+++ this run") == 1
    assert result.outlines.count(f"(the full message is shown once, under {NODE}::verdict)") == 10


def test_the_printed_command_re_records_the_stale_scenario(
    recording: Recording, pytester: pytest.Pytester, scenarios: ScenarioDir, offline: None
) -> None:
    cassette = _copy_recording(recording, pytester)
    scenarios.write_text("conftest.py", STALE_PROMPT_CONFTEST)
    script = scenarios.script(scenarios.full())

    with FakeOpenAIServer(script) as server, pytest.MonkeyPatch.context() as patch:
        # The command names no endpoint: it comes from the environment, as the issue says.
        patch.setenv("OPENAI_BASE_URL", server.base_url)
        patch.setenv("DIAGEVAL_MODEL", MODEL)
        rerecord = pytester.runpytest(NODE, "--diageval-record=rewrite")
    replay = pytester.runpytest()

    rerecord.assert_outcomes(passed=11)
    assert len(server.received) == 4
    assert "steps 最多 3 条" in cassette.read_text("utf-8")
    replay.assert_outcomes(passed=11)


# --------------------------------------------------------------------------- unplayed


def test_recorded_interactions_left_unplayed_fail_the_items(
    recording: Recording, pytester: pytest.Pytester, offline: None
) -> None:
    cassette = _copy_recording(recording, pytester)
    data = yaml.safe_load(cassette.read_text("utf-8"))
    data["interactions"].append(data["interactions"][-1])  # a second verifier answer
    cassette.write_text(yaml.safe_dump(data, allow_unicode=True), "utf-8")

    result = pytester.runpytest()

    result.assert_outcomes(failed=11)
    result.stdout.fnmatch_lines(
        [
            f"UnplayedInteractionsError: cassette {cassette}: 1 of 5 recorded interaction(s)"
            " were never replayed: #5 stage verifier, round 1. The run took a shorter path"
            " than when it was recorded.",
            f"Re-record this scenario with: {shlex.quote(sys.executable)} -m pytest {NODE}"
            " --diageval-record=rewrite --diageval-base-url * --diageval-model m*",
        ]
    )


def test_a_request_beyond_the_recording_fails_without_touching_the_network(
    recording: Recording, pytester: pytest.Pytester, offline: None
) -> None:
    cassette = _copy_recording(recording, pytester)
    data = yaml.safe_load(cassette.read_text("utf-8"))
    del data["interactions"][-1]  # the verifier's answer was never recorded
    cassette.write_text(yaml.safe_dump(data, allow_unicode=True), "utf-8")

    result = pytester.runpytest()

    result.assert_outcomes(failed=11)
    result.stdout.fnmatch_lines(
        [
            f"StaleCassetteError: stale cassette {cassette}: request #4 of this run"
            " (stage verifier, round 1) matches no recorded interaction; the cassette holds"
            " only 3 recorded request(s): this run makes more requests than when it was"
            " recorded.",
        ]
    )
    assert "Connection" not in result.stdout.str()


# --------------------------------------------------------------------------- secrets


def test_a_key_like_string_in_a_new_cassette_fails_the_recording(
    pytester: pytest.Pytester, scenarios: ScenarioDir, offline: None
) -> None:
    scenario = _cassette_scenario(scenarios)
    script = scenarios.script(scenarios.full())
    script[0]["content"]["plan"] = f"查询告警与日志（调试用密钥 {PLANTED_KEY}）"
    scenarios.write(SCENARIO, scenario)

    with FakeOpenAIServer(script) as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", CANARY_KEY)
        result = pytester.runpytest(
            *("--diageval-record=once", "--diageval-base-url", server.base_url),
            *("--diageval-model", MODEL),
        )

    result.assert_outcomes(failed=11)
    # A first recording is staged: the leak stops it beside the cassette's path, never at it.
    assert not (pytester.path / CASSETTE).exists()
    cassette = (pytester.path / CASSETTE).with_name(".memory.yaml.recording")
    text = cassette.read_text("utf-8")
    line = next(n for n, row in enumerate(text.splitlines(), 1) if PLANTED_KEY in row)
    result.stdout.fnmatch_lines(
        [
            f"SecretLeakError: {cassette}:{line}: the cassette contains an sk-… API key"
            " (sk-pla…); it was written to disk: fix or delete it, and do not commit it",
        ]
    )
    assert PLANTED_KEY not in result.stdout.str()
    assert CANARY_KEY not in text
