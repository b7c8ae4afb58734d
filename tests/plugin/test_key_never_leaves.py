"""The key in ``OPENAI_API_KEY`` never leaves the process (issue 41, item 6): whatever its
length, and even when the endpoint echoes it back (a 401 body, or in every answer), it is in no
cassette, report, page, summary, JUnit XML or terminal line. Real in-process recordings against
the local fake server of tests/support, which here repeats the key it was sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from support.fake_openai_server import FakeOpenAIServer, ReceivedRequest

if TYPE_CHECKING:
    from conftest import ScenarioDir

SCENARIO = "scenarios/memory.yaml"
CASSETTE = "scenarios/cassettes/memory.yaml"
MARKER = "ECHO-THE-KEY"
"""Text in the scripted answers that the echoing server replaces with the key it was sent."""
OUTPUTS = ("out/report.json", "out/report.html", "out/junit.xml", "out/summary.md")
KEYS = [
    pytest.param("k3y", id="short"),
    pytest.param("Zq9", id="three-characters"),
    pytest.param("sk-test-0123456789abcdefghijklmn", id="sk-shaped"),
    pytest.param("local-model-key", id="no-digit"),
]


class EchoingServer(FakeOpenAIServer):
    """Answers as the fake server does, then writes the key it received wherever the answer
    says :data:`MARKER`, and in a response header; ``refuse`` answers 401 with the key."""

    def __init__(self, script: list[dict[str, Any]], *, refuse: bool = False) -> None:
        super().__init__(script)
        self.refuse = refuse

    def answer(self, received: ReceivedRequest) -> tuple[int, dict[str, str], bytes]:
        key = received.headers.get("authorization", "").removeprefix("Bearer ")
        if self.refuse:
            self.received.append(received)
            error = {"error": {"message": f"Incorrect API key provided: {key}", "code": key}}
            return 401, {"content-type": "application/json"}, json.dumps(error).encode()
        status, headers, body = super().answer(received)
        headers["x-echoed-key"] = key
        return status, headers, body.replace(MARKER.encode(), key.encode())


def _echoing_scenario(scenarios: ScenarioDir) -> list[dict[str, Any]]:
    """A cassette scenario whose plan and verifier rationale the server fills with the key,
    and one expectation that fails, so the terminal shows the audit trail (with the plan)."""
    data = scenarios.full()
    script = scenarios.script(data)
    for entry in script:
        content = entry.get("content")
        if entry["stage"] == "planner":
            content["plan"] = f"查询告警与日志 {MARKER}"
        if entry["stage"] == "verifier":
            content["rationale"] = f"ok {MARKER}"
    data["llm"] = {"cassette": "cassettes/memory.yaml"}
    data["expect"]["required_keywords"] = ["HighMemoryUsage", "不会出现的词"]
    scenarios.write(SCENARIO, data)
    return script


def _record(pytester: pytest.Pytester, server: FakeOpenAIServer) -> pytest.RunResult:
    return pytester.runpytest(
        *("--diageval-record=rewrite", "--diageval-base-url", server.base_url),
        *("--diageval-model", "m", "-rA", "--tb=long"),
        *("--diageval-report", OUTPUTS[0], "--diageval-html", OUTPUTS[1]),
        *("--junitxml", OUTPUTS[2], "--diageval-summary", OUTPUTS[3]),
    )


def _everything_written(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): path.read_text("utf-8", errors="replace")
        for path in root.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def _assert_nowhere(key: str, result: pytest.RunResult, root: Path) -> None:
    for name, text in _everything_written(root).items():
        assert key not in text, f"the key is in {name}"
    assert key not in result.stdout.str()
    assert key not in result.stderr.str()


@pytest.mark.parametrize("key", KEYS)
def test_a_key_echoed_in_every_answer_is_in_no_file_and_no_terminal_line(
    pytester: pytest.Pytester,
    scenarios: ScenarioDir,
    monkeypatch: pytest.MonkeyPatch,
    key: str,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", key)
    script = _echoing_scenario(scenarios)

    with EchoingServer(script) as server:
        result = _record(pytester, server)

    result.assert_outcomes(passed=10, failed=1)  # the recording completed
    assert server.received[0].headers["authorization"] == f"Bearer {key}"  # it was sent
    for output in OUTPUTS:
        assert (pytester.path / output).is_file(), output
    cassette = (pytester.path / CASSETTE).read_text("utf-8")
    assert "<scrubbed-secret>" in cassette  # where the echo was
    _assert_nowhere(key, result, pytester.path)
    # The scrubbed cassette replays, without a key.
    monkeypatch.delenv("OPENAI_API_KEY")
    pytester.runpytest().assert_outcomes(passed=10, failed=1)


@pytest.mark.parametrize("key", KEYS)
def test_a_key_echoed_in_a_401_answer_is_in_no_file_and_no_terminal_line(
    pytester: pytest.Pytester,
    scenarios: ScenarioDir,
    monkeypatch: pytest.MonkeyPatch,
    key: str,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", key)
    script = _echoing_scenario(scenarios)
    committed = "# committed cassette, must survive\ninteractions: []\nversion: 1\n"
    scenarios.write_text(CASSETTE, committed)

    with EchoingServer(script, refuse=True) as server:
        result = _record(pytester, server)

    result.assert_outcomes(failed=11)
    assert "it refused the key in OPENAI_API_KEY" in result.stdout.str()
    assert "Incorrect API key provided: <scrubbed-secret>" in result.stdout.str()
    for output in OUTPUTS:
        assert (pytester.path / output).is_file(), output
    assert (pytester.path / CASSETTE).read_text("utf-8") == committed
    _assert_nowhere(key, result, pytester.path)
