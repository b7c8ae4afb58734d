"""A recording shows a line per answered request (stage, round, tokens, seconds) to a person
at a terminal, and nothing under ``-q``, with ``CI`` set or when the output is not a tty
(real in-process pytest runs that record from the local fake server of tests/support)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from support.fake_openai_server import FakeOpenAIServer

if TYPE_CHECKING:
    from conftest import ScenarioDir

# pytester's output is no tty: this conftest makes the inner run's terminal reporter one.
A_TERMINAL = """
import pytest


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    config.pluginmanager.get_plugin("terminalreporter").isatty = lambda: True
"""
LINE = re.compile(
    r"^diageval recording high-memory-positive: request (\d+), (\w+) round (\d+):"
    r" (\d+)\+(\d+) tokens, (\d+\.\d) s$"
)


def _record(
    pytester: pytest.Pytester, scenarios: ScenarioDir, *options: str
) -> tuple[pytest.RunResult, Path]:
    data = scenarios.full()
    data["llm"] = {"cassette": "cassettes/memory.yaml"}
    scenarios.write("scenarios/memory.yaml", data)
    with FakeOpenAIServer(scenarios.script(scenarios.full())) as server:
        result = pytester.runpytest(
            *("--diageval-record=rewrite", "--diageval-base-url", server.base_url),
            *("--diageval-model", "m", "-p", "no:cacheprovider", *options),
        )
    result.assert_outcomes(passed=11)
    return result, pytester.path / "scenarios" / "cassettes" / "memory.yaml"


def _recorded(cassette: Path) -> list[tuple[str, str, dict[str, Any]]]:
    interactions = yaml.safe_load(cassette.read_text("utf-8"))["interactions"]
    return [
        (
            i["request"]["headers"]["x-diageval-stage"][0],
            i["request"]["headers"]["x-diageval-round"][0],
            json.loads(i["response"]["body"]["string"])["usage"],
        )
        for i in interactions
    ]


def test_each_answered_request_is_a_line_on_a_terminal(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    pytester.makeconftest(A_TERMINAL)

    result, cassette = _record(pytester, scenarios)

    shown = [LINE.match(line) for line in result.outlines if line.startswith("diageval recording")]
    assert all(shown), result.outlines
    lines = [m.groups() for m in shown if m is not None]
    recorded = _recorded(cassette)
    assert [(n, stage, round_) for n, stage, round_, *_ in lines] == [
        (str(n), stage, round_) for n, (stage, round_, _) in enumerate(recorded, start=1)
    ]
    # The tokens are the ones the answers reported, as the cassette keeps them.
    assert [(int(p), int(c)) for *_, p, c, _ in lines] == [
        (usage["prompt_tokens"], usage["completion_tokens"]) for *_, usage in recorded
    ]
    assert [stage for _, stage, *_ in lines] == ["planner", "executor", "executor", "verifier"]


@pytest.mark.parametrize(
    ("terminal", "environment", "options"),
    [
        (True, {}, ("-q",)),
        (True, {"CI": "true"}, ()),
        (False, {}, ()),  # not a tty (pytester's own output)
    ],
    ids=["quiet", "ci", "no-tty"],
)
def test_no_progress_under_q_in_ci_or_without_a_tty(
    pytester: pytest.Pytester,
    scenarios: ScenarioDir,
    monkeypatch: pytest.MonkeyPatch,
    terminal: bool,
    environment: dict[str, str],
    options: tuple[str, ...],
) -> None:
    if terminal:
        pytester.makeconftest(A_TERMINAL)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)

    result, cassette = _record(pytester, scenarios, *options)

    assert len(_recorded(cassette)) == 4  # it did record
    assert not [line for line in result.outlines if "diageval recording" in line]


def test_a_replay_shows_no_progress(pytester: pytest.Pytester, scenarios: ScenarioDir) -> None:
    _record(pytester, scenarios)
    pytester.makeconftest(A_TERMINAL)

    # Mode once with the cassette there replays it: nothing is recorded, nothing is shown.
    result = pytester.runpytest("-p", "no:cacheprovider", "--diageval-record=once")

    result.assert_outcomes(passed=11)
    assert not [line for line in result.outlines if "diageval recording" in line]
