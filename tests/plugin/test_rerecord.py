"""Re-recording: a recording stores its endpoint, model and timeout (never the key), the
printed commands run this interpreter with them, and ``--diageval-record=stale`` records
exactly the stale scenarios after saying what that costs (real pytest runs against the local
fake server)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from pytest_diageval.harness.cassettes.rerecord import read_metadata, recorded_totals
from support.fake_openai_server import FakeOpenAIServer

if TYPE_CHECKING:
    from conftest import ScenarioDir

KEY = "sk-" + "rerecord0123456789abcdefKEY"
STALE, FRESH = "scenarios/stale.yaml", "scenarios/fresh.yaml"


def _cassette_scenario(scenarios: ScenarioDir, name: str) -> dict[str, Any]:
    data = scenarios.full()
    data["id"] = name
    data["llm"] = {"cassette": f"../cassettes/{name}.yaml"}  # a path through `..`
    return data


def _record_both(
    pytester: pytest.Pytester, scenarios: ScenarioDir, monkeypatch: pytest.MonkeyPatch
) -> str:
    for relative in (STALE, FRESH):
        scenarios.write(relative, _cassette_scenario(scenarios, Path(relative).stem))
    script = scenarios.script(scenarios.full())
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeOpenAIServer(script + script) as server:
        result = pytester.runpytest(
            "scenarios",
            "--diageval-record=once",
            *("--diageval-base-url", server.base_url, "--diageval-model", "m"),
            *("--diageval-timeout", "30"),
        )
    result.assert_outcomes(passed=22)
    monkeypatch.delenv("OPENAI_API_KEY")
    return server.base_url


def _make_stale(scenarios: ScenarioDir) -> None:
    data = _cassette_scenario(scenarios, "stale")
    data["query"] += "（请尽快）"  # the request changes: its cassette is stale
    scenarios.write(STALE, data)


def test_a_recording_stores_endpoint_model_timeout_and_world_but_never_the_key(
    pytester: pytest.Pytester, scenarios: ScenarioDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    base_url = _record_both(pytester, scenarios, monkeypatch)

    cassette = pytester.path / "cassettes" / "stale.yaml"
    text = cassette.read_text("utf-8")
    assert yaml.safe_load(text)["diageval"] == {
        "base_url": base_url,
        "model": "m",
        "timeout": 30.0,
        "world": "default",  # what `diageval scaffold` replays the cassette on
        # Every stage's request options, the defaults here: a replay sends them again.
        "request_options": {
            "planner": {"temperature": 0.0, "max_tokens": "schema"},
            "executor": {"temperature": 0.0, "max_tokens": "schema"},
            "verifier": {"temperature": 0.0, "max_tokens": "schema"},
            "grader": {"temperature": 0.0, "max_tokens": "schema"},
        },
    }
    assert KEY not in text
    # Every request's uri without the port, which changes from one local server to the next.
    uris = {line.strip() for line in text.splitlines() if line.strip().startswith("uri: ")}
    assert uris == {"uri: http://127.0.0.1/v1/chat/completions"}
    metadata = read_metadata(cassette)
    assert metadata is not None
    assert metadata.options() == [
        *("--diageval-base-url", base_url, "--diageval-model", "m", "--diageval-timeout", "30")
    ]
    # Replays read past the metadata.
    pytester.runpytest("scenarios").assert_outcomes(passed=22)


def test_a_stale_run_prints_working_commands_and_ends_with_the_stale_one(
    pytester: pytest.Pytester, scenarios: ScenarioDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    base_url = _record_both(pytester, scenarios, monkeypatch)
    _make_stale(scenarios)

    result = pytester.runpytest("scenarios")

    result.assert_outcomes(passed=11, failed=11)
    options = f"--diageval-base-url {base_url} --diageval-model m --diageval-timeout 30"
    python = shlex.quote(sys.executable)
    single = f"{python} -m pytest {STALE}::stale --diageval-record=rewrite {options}"
    assert result.outlines.count(f"Re-record this scenario with: {single}") == 1
    # The cassette path reads without `..`.
    cassette = pytester.path / "cassettes" / "stale.yaml"
    assert f"StaleCassetteError: stale cassette {cassette}:" in result.stdout.str()
    assert result.outlines[-2:] == [
        "diageval: 1 scenario file(s) have stale or missing cassettes; re-record exactly"
        " those with:",
        f"{python} -m pytest {STALE} --diageval-record=stale {options}",
    ]


def test_record_stale_rerecords_exactly_the_stale_scenario(
    pytester: pytest.Pytester, scenarios: ScenarioDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record_both(pytester, scenarios, monkeypatch)
    _make_stale(scenarios)
    fresh_before = (pytester.path / "cassettes" / "fresh.yaml").read_bytes()
    requests, tokens = recorded_totals(pytester.path / "cassettes" / "stale.yaml")
    script = scenarios.script(scenarios.full())

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeOpenAIServer(script) as server:
        result = pytester.runpytest(
            "scenarios",
            "--diageval-record=stale",
            *("--diageval-base-url", server.base_url, "--diageval-model", "m"),
        )
    monkeypatch.delenv("OPENAI_API_KEY")

    result.assert_outcomes(passed=22)
    assert (requests, len(server.received)) == (4, 4)  # the stale scenario only
    assert tokens > 0
    announced = result.outlines.index(
        f"diageval: re-recording 1 of 2 cassette scenario(s): {requests} request(s) and"
        f" {tokens} token(s) as last recorded"
    )
    assert result.outlines[announced + 1] == (
        f"  stale: cassettes/stale.yaml ({requests} request(s), {tokens} token(s))"
    )
    assert (pytester.path / "cassettes" / "fresh.yaml").read_bytes() == fresh_before
    assert "（请尽快）" in (pytester.path / "cassettes" / "stale.yaml").read_text("utf-8")
    pytester.runpytest("scenarios").assert_outcomes(passed=22)


def test_record_stale_with_nothing_stale_records_nothing(
    pytester: pytest.Pytester, scenarios: ScenarioDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record_both(pytester, scenarios, monkeypatch)

    result = pytester.runpytest("scenarios", "--diageval-record=stale")

    result.assert_outcomes(passed=22)
    assert "diageval: none of the 2 cassette scenario(s) is stale: nothing to record" in (
        result.outlines
    )


def test_record_stale_refuses_xdist(pytester: pytest.Pytester, scenarios: ScenarioDir) -> None:
    scenarios.write(FRESH, _cassette_scenario(scenarios, "fresh"))

    result = pytester.runpytest("-p", "xdist", "-n", "2", "--diageval-record=stale")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--diageval-record=stale runs in one process (drop -n)" in result.stderr.str()
