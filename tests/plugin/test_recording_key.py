"""A recording whose endpoint answers 401/403 says that the API key is missing or refused,
and which variable sets it (real in-process pytest runs against the local fake server)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from support.fake_openai_server import FakeOpenAIServer

if TYPE_CHECKING:
    from conftest import ScenarioDir

SCENARIO = "scenarios/memory.yaml"
CASSETTE = "scenarios/cassettes/memory.yaml"
COMMITTED = "# committed cassette, must survive\ninteractions: []\nversion: 1\n"


@pytest.mark.parametrize(
    ("key", "status", "why"),
    [
        (
            None,
            401,
            "no API key is set (OPENAI_API_KEY is unset or empty), so the request carried"
            " only a placeholder",
        ),
        ("sk-wrong-0001", 401, "it refused the key in OPENAI_API_KEY"),
        ("sk-wrong-0001", 403, "it refused the key in OPENAI_API_KEY"),
    ],
)
def test_a_recording_refused_for_its_key_says_so_and_names_the_variable(
    pytester: pytest.Pytester,
    scenarios: ScenarioDir,
    monkeypatch: pytest.MonkeyPatch,
    key: str | None,
    status: int,
    why: str,
) -> None:
    if key is None:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", key)
    data = scenarios.full()
    script = scenarios.script(data)
    data["llm"] = {"cassette": "cassettes/memory.yaml"}
    scenarios.write(SCENARIO, data)
    scenarios.write_text(CASSETTE, COMMITTED)

    with FakeOpenAIServer(script, transient_errors={1: status}) as server:
        result = pytester.runpytest(
            *("--diageval-record=rewrite", "--diageval-base-url", server.base_url),
            *("--diageval-model", "m"),
        )

    result.assert_outcomes(failed=11)
    message = (
        f"KeyRefusedError: --diageval-record=rewrite: {server.base_url} answered HTTP {status}:"
        f" {why}; set OPENAI_API_KEY to a key this endpoint accepts and record again"
        " (OPENAI_API_KEY=… <the same command>). The model call said: LLM unavailable"
        f" (planner, round 1): {server.base_url} (model m) HTTP {status}:"
    )
    headlines = [
        line for line in scenarios.failures(result) if ": the scenario did not run: " in line
    ]
    assert len(headlines) == 11
    assert all(message in line for line in headlines)
    sent = server.received[0].headers["authorization"]
    assert sent == (f"Bearer {key}" if key else "Bearer replay-without-key")
    assert len(server.received) == 1  # a refused key is not retried
    assert (scenarios.root / CASSETTE).read_text("utf-8") == COMMITTED
    assert key is None or key not in result.stdout.str()


def test_a_server_error_is_not_called_a_key_problem(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    data = scenarios.full()
    script = scenarios.script(data)
    data["llm"] = {"cassette": "cassettes/memory.yaml"}
    scenarios.write(SCENARIO, data)

    with FakeOpenAIServer(script, transient_errors={1: 404}) as server:
        result = pytester.runpytest(
            *("--diageval-record=once", "--diageval-base-url", server.base_url),
            *("--diageval-model", "m"),
        )

    result.assert_outcomes(failed=11)
    assert "HTTP 404" in result.stdout.str()
    assert "OPENAI_API_KEY" not in result.stdout.str()
