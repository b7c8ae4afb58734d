"""``--diageval-points offer``, end to end against the local fake server: the executor's
contract offers points, the cassette's metadata says so, a replay offers what was recorded
whatever the command line says, and the printed re-record command carries the option."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from pytest_diageval.agents.prompts import load_prompt
from pytest_diageval.core.contract.contract_schema import SUBMIT_CONTRACT_FUNCTION
from pytest_diageval.harness.cassettes.rerecord import read_metadata
from support.fake_openai_server import FakeOpenAIServer

if TYPE_CHECKING:
    from conftest import ScenarioDir

SCENARIO = "scenarios/pointed.yaml"


def _record(
    pytester: pytest.Pytester, scenarios: ScenarioDir, *options: str
) -> tuple[pytest.RunResult, list[dict[str, Any]]]:
    data = scenarios.full()
    data["id"] = "pointed"
    data["llm"] = {"cassette": "../cassettes/pointed.yaml"}
    scenarios.write(SCENARIO, data)
    with FakeOpenAIServer(scenarios.script(scenarios.full())) as server:
        result = pytester.runpytest(
            SCENARIO,
            "--diageval-record=once",
            *("--diageval-base-url", server.base_url, "--diageval-model", "m"),
            *options,
        )
    bodies = [
        json.loads(r.body) for r in server.received if r.headers["x-diageval-stage"] == "executor"
    ]
    return result, bodies


def _claim_properties(body: dict[str, Any]) -> dict[str, Any]:
    """The claim's schema in the request's ``submit_evidence_contract`` ({} when not offered)."""
    for tool in body.get("tools", []):
        if tool["function"]["name"] == SUBMIT_CONTRACT_FUNCTION:
            claims = tool["function"]["parameters"]["properties"]["claims"]
            return dict(claims["items"]["properties"])
    return {}


def test_a_recording_that_offers_points_says_so_and_replays_as_recorded(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    result, bodies = _record(pytester, scenarios, "--diageval-points", "offer")
    result.assert_outcomes(passed=11)
    last = bodies[-1]
    assert "points" in _claim_properties(last)
    assert load_prompt("executor_points").strip() in last["messages"][0]["content"]
    cassette = pytester.path / "cassettes" / "pointed.yaml"
    assert yaml.safe_load(cassette.read_text("utf-8"))["diageval"]["contract_points"] is True
    metadata = read_metadata(cassette)
    assert metadata is not None
    assert metadata.contract_points
    assert metadata.options()[-2:] == ["--diageval-points", "offer"]

    # The server is gone: a replay matches only if it offers points again, flag or not.
    pytester.runpytest(SCENARIO).assert_outcomes(passed=11)
    pytester.runpytest(SCENARIO, "--diageval-points", "omit").assert_outcomes(passed=11)

    # Without the metadata key the cassette reads as recorded without points: stale.
    text = cassette.read_text("utf-8")
    cassette.write_text(text.replace("  contract_points: true\n", ""), "utf-8")
    pytester.runpytest(SCENARIO).assert_outcomes(failed=11)


def test_by_default_a_recording_offers_no_points_and_writes_no_key(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    result, bodies = _record(pytester, scenarios)
    result.assert_outcomes(passed=11)
    offered = [_claim_properties(body) for body in bodies if _claim_properties(body)]
    assert offered  # the contract was offered
    assert all("points" not in claim for claim in offered)
    cassette = pytester.path / "cassettes" / "pointed.yaml"
    assert "contract_points" not in yaml.safe_load(cassette.read_text("utf-8"))["diageval"]
