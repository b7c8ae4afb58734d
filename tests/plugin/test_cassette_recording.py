"""Recording through the plugin when things go wrong: a flaky server, no endpoint, a failed
rewrite (real in-process pytest runs against the local fake server of tests/support)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from support.fake_openai_server import FakeOpenAIServer

if TYPE_CHECKING:
    from conftest import ScenarioDir

SCENARIO = "scenarios/memory.yaml"
CASSETTE = "scenarios/cassettes/memory.yaml"
# What a committed cassette holds does not matter here, only that it is left byte for byte.
COMMITTED = "# committed cassette, must survive\ninteractions: []\nversion: 1\n"
BASE_URL_HINT = "give --diageval-base-url or set OPENAI_BASE_URL"
MODEL_HINT = "give --diageval-model or set DIAGEVAL_MODEL"


def _cassette_scenario(scenarios: ScenarioDir) -> Path:
    data = scenarios.full()
    data["llm"] = {"cassette": "cassettes/memory.yaml"}
    scenarios.write(SCENARIO, data)
    return scenarios.root / CASSETTE


def _recorded_once(pytester: pytest.Pytester, scenarios: ScenarioDir) -> Path:
    """The example scenario's cassette, recorded in mode once against a fake server."""
    cassette = _cassette_scenario(scenarios)
    script = scenarios.script(scenarios.full())
    with FakeOpenAIServer(script) as server:
        pytester.runpytest(
            *("--diageval-record=once", "--diageval-base-url", server.base_url),
            *("--diageval-model", "m"),
        ).assert_outcomes(passed=11)
    return cassette


def _interactions(cassette: Path) -> list[dict[str, Any]]:
    return list(yaml.safe_load(cassette.read_text("utf-8"))["interactions"])


def _closed_port() -> int:
    """A local port nothing listens on: connecting to it is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --------------------------------------------------------------------------- flaky server


@pytest.mark.parametrize(
    ("failing", "status", "attempts"),
    [
        # The planner's call meets a rate limit once.
        (1, 429, ["planner 0", "planner 1", "executor 0", "executor 0", "verifier 0"]),
        # The executor's first call meets a 503 once.
        (2, 503, ["planner 0", "executor 0", "executor 1", "executor 0", "verifier 0"]),
    ],
)
def test_a_request_the_sdk_retried_keeps_only_its_answer_and_replays_offline(
    pytester: pytest.Pytester,
    scenarios: ScenarioDir,
    failing: int,
    status: int,
    attempts: list[str],
) -> None:
    cassette = _cassette_scenario(scenarios)
    script = scenarios.script(scenarios.full())

    with FakeOpenAIServer(script, transient_errors={failing: status}) as server:
        recorded = pytester.runpytest(
            *("--diageval-record=once", "--diageval-base-url", server.base_url),
            *("--diageval-model", "flaky-model"),
        )
    replayed = pytester.runpytest()  # the server is gone: any network access would fail

    recorded.assert_outcomes(passed=11)
    sent = [
        f"{r.headers['x-diageval-stage']} {r.headers['x-stainless-retry-count']}"
        for r in server.received
    ]
    assert sent == attempts
    kept = [
        (i["request"]["headers"]["x-diageval-stage"], i["response"]["status"]["code"])
        for i in _interactions(cassette)
    ]
    assert kept == [
        (["planner"], 200),
        (["executor"], 200),
        (["executor"], 200),
        (["verifier"], 200),
    ]
    assert {json.loads(i["request"]["body"])["model"] for i in _interactions(cassette)} == {
        "flaky-model"
    }
    replayed.assert_outcomes(passed=11)


def test_new_episodes_sends_a_retry_to_the_server_not_the_error_it_just_recorded(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    cassette = _recorded_once(pytester, scenarios)
    script = scenarios.script(scenarios.full())
    data = yaml.safe_load(cassette.read_text("utf-8"))
    del data["interactions"][1:]  # only the planner's answer stays recorded
    cassette.write_text(yaml.safe_dump(data, allow_unicode=True), "utf-8")

    # The first new request (the executor's) meets a 503 once.
    with FakeOpenAIServer(script[1:], transient_errors={1: 503}) as server:
        recorded = pytester.runpytest(
            *("--diageval-record=new_episodes", "--diageval-base-url", server.base_url),
            *("--diageval-model", "m"),
        )
    replayed = pytester.runpytest()

    recorded.assert_outcomes(passed=11)
    sent = [
        f"{r.headers['x-diageval-stage']} {r.headers['x-stainless-retry-count']}"
        for r in server.received
    ]
    assert sent == ["executor 0", "executor 1", "executor 0", "verifier 0"]
    assert [i["response"]["status"]["code"] for i in _interactions(cassette)] == [200] * 4
    replayed.assert_outcomes(passed=11)


# --------------------------------------------------------------------------- no endpoint


@pytest.mark.parametrize(
    ("mode", "committed"),
    [("once", False), ("new_episodes", True), ("all", True), ("rewrite", True)],
)
@pytest.mark.parametrize(
    ("given", "missing"),
    [
        (("--diageval-model", "m"), f"no endpoint is set: {BASE_URL_HINT}"),
        (("--diageval-base-url", "http://127.0.0.1:9/v1"), f"no model is set: {MODEL_HINT}"),
        ((), f"no endpoint and no model are set: {BASE_URL_HINT}; {MODEL_HINT}"),
    ],
)
def test_recording_without_endpoint_or_model_fails_before_touching_the_cassette(
    pytester: pytest.Pytester,
    scenarios: ScenarioDir,
    mode: str,
    committed: bool,
    given: tuple[str, ...],
    missing: str,
) -> None:
    cassette = _cassette_scenario(scenarios)
    if committed:
        scenarios.write_text(CASSETTE, COMMITTED)

    result = pytester.runpytest(f"--diageval-record={mode}", *given)

    result.assert_outcomes(failed=11)
    message = (
        f"MissingEndpointError: --diageval-record={mode} would record {cassette}, but {missing}"
    )
    assert scenarios.failures(result).count(message) == 11
    assert sorted(p.name for p in cassette.parent.glob("*")) == (
        ["memory.yaml"] if committed else []
    )
    if committed:
        assert cassette.read_text("utf-8") == COMMITTED


def test_a_replay_needs_no_endpoint_even_in_mode_once(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    cassette = _recorded_once(pytester, scenarios)

    result = pytester.runpytest("--diageval-record=once")

    result.assert_outcomes(passed=11)
    assert len(_interactions(cassette)) == 4


# --------------------------------------------------------------------------- failed recording


def test_a_rewrite_against_a_refusing_endpoint_keeps_the_committed_cassette(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    cassette = _cassette_scenario(scenarios)
    scenarios.write_text(CASSETTE, COMMITTED)

    result = pytester.runpytest(
        "--diageval-record=rewrite",
        *("--diageval-base-url", f"http://127.0.0.1:{_closed_port()}/v1", "--diageval-model", "m"),
    )

    result.assert_outcomes(failed=11)
    result.stdout.fnmatch_lines(["*LLM unavailable (planner, round 1): *connection failed*"])
    assert cassette.read_text("utf-8") == COMMITTED
    assert sorted(p.name for p in cassette.parent.iterdir()) == ["memory.yaml"]


def test_a_rewrite_that_fails_after_recording_some_answers_keeps_the_committed_cassette(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    cassette = _cassette_scenario(scenarios)
    scenarios.write_text(CASSETTE, COMMITTED)
    script = scenarios.script(scenarios.full())

    # The planner is answered (and recorded); the executor's call and both retries get 500s.
    with FakeOpenAIServer(script, transient_errors={2: 500, 3: 500, 4: 500}) as server:
        result = pytester.runpytest(
            *("--diageval-record=rewrite", "--diageval-base-url", server.base_url),
            *("--diageval-model", "m"),
        )

    result.assert_outcomes(failed=11)
    assert [r.headers["x-diageval-stage"] for r in server.received] == [
        "planner",
        *["executor"] * 3,
    ]
    result.stdout.fnmatch_lines(["*LLM unavailable (*, round 1): *HTTP 500*"])
    assert cassette.read_text("utf-8") == COMMITTED
    assert sorted(p.name for p in cassette.parent.iterdir()) == ["memory.yaml"]


def test_a_first_recording_in_mode_once_that_fails_leaves_no_partial_cassette(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    cassette = _cassette_scenario(scenarios)
    script = scenarios.script(scenarios.full())

    # The planner is answered; the executor's call and both retries get 500s.
    with FakeOpenAIServer(script, transient_errors={2: 500, 3: 500, 4: 500}) as server:
        failed = pytester.runpytest(
            *("--diageval-record=once", "--diageval-base-url", server.base_url),
            *("--diageval-model", "m"),
        )
    failed.assert_outcomes(failed=11)
    assert not cassette.parent.exists() or list(cassette.parent.iterdir()) == []

    # So the next `once` records from scratch instead of replaying a stale half.
    with FakeOpenAIServer(script) as server:
        recorded = pytester.runpytest(
            *("--diageval-record=once", "--diageval-base-url", server.base_url),
            *("--diageval-model", "m"),
        )
    recorded.assert_outcomes(passed=11)
    assert [i["response"]["status"]["code"] for i in _interactions(cassette)] == [200] * 4
