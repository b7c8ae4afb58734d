"""Token usage per stage: read from the recorded ``usage`` of a cassette's answers, or the
scripted model's deterministic estimate; and the ``tokens`` budget check."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import yaml

from pytest_diageval.agents.scripted.model import estimated_tokens
from pytest_diageval.agents.scripted.token_estimate import ESTIMATE_NAME
from pytest_diageval.agents.usage import TokenUsage
from pytest_diageval.harness.checks.evaluators import run_check
from pytest_diageval.harness.format.loader import load_scenario
from pytest_diageval.harness.format.scenario import TokensExpectation
from pytest_diageval.harness.runner import run_scenario
from pytest_diageval.harness.settings import RunSettings

REPO = Path(__file__).resolve().parents[3]
LIVE = REPO / "scenarios" / "live" / "live-high-memory.yaml"
CASSETTE = REPO / "cassettes" / "live-high-memory.yaml"
EXAMPLE = REPO / "tests" / "plugin" / "data" / "example-scenario.yaml"


def _recorded_usage(cassette: Path) -> dict[str, list[int]]:
    """Prompt and completion tokens per stage, summed straight from the cassette file."""
    totals: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for interaction in yaml.safe_load(cassette.read_text("utf-8"))["interactions"]:
        (stage,) = interaction["request"]["headers"]["x-diageval-stage"]
        usage = json.loads(interaction["response"]["body"]["string"])["usage"]
        totals[stage][0] += usage["prompt_tokens"]
        totals[stage][1] += usage["completion_tokens"]
        totals[stage][2] += 1
    return dict(totals)


def test_a_replay_reports_the_recorded_usage_per_stage() -> None:
    run = run_scenario(
        load_scenario(LIVE), LIVE, cassette=CASSETTE, settings=RunSettings(), rerecord_command=""
    )
    assert run.error is None
    measured = {
        stage: [u.prompt_tokens, u.completion_tokens, u.requests]
        for stage, u in run.usage.ordered().items()
    }
    assert measured == _recorded_usage(CASSETTE)
    assert run.usage.source == "reported by the endpoint (gemma3-270m)"
    assert run.usage.as_dict()["source"] == "reported by the endpoint (gemma3-270m)"
    assert list(measured) == ["planner", "executor", "verifier"]
    assert run.usage.total.total_tokens == sum(p + c for p, c, _ in measured.values())


def test_the_scripted_model_reports_a_deterministic_estimate() -> None:
    scenario = load_scenario(EXAMPLE)
    first = run_scenario(
        scenario, EXAMPLE, cassette=None, settings=RunSettings(), rerecord_command=""
    )
    second = run_scenario(
        scenario, EXAMPLE, cassette=None, settings=RunSettings(), rerecord_command=""
    )
    assert first.usage.as_dict() == second.usage.as_dict()
    planner = first.usage.stages["planner"]
    assert planner.requests == 1
    assert planner.prompt_tokens > 100  # the planner prompt alone is several hundred characters


def test_the_estimate_counts_an_answers_text() -> None:
    # Its rule per kind of character: tests/agents/scripted/test_token_estimate.py.
    # 告警 two tokens; HighMemoryUsage one, and a quarter for each of its nine letters past six
    assert estimated_tokens({"role": "assistant", "content": "告警 HighMemoryUsage"}) == 6
    assert estimated_tokens({"content": None}) == 0


def test_the_budget_check() -> None:
    scenario = load_scenario(EXAMPLE)
    run = run_scenario(
        scenario, EXAMPLE, cassette=None, settings=RunSettings(), rerecord_command=""
    )
    assert run.result is not None
    total = run.usage.total.total_tokens
    within = run_check("tokens", TokensExpectation(max=total), run.result, run.usage)
    over = run_check("tokens", TokensExpectation(max=total - 1), run.result, run.usage)
    assert within.passed
    assert not over.passed
    stages = run.usage.stages
    assert over.headline("tokens") == (
        f"tokens: expected at most {total - 1} tokens, got {total} tokens estimated by"
        f" {ESTIMATE_NAME} (planner {stages['planner'].total_tokens}, executor"
        f" {stages['executor'].total_tokens}, verifier {stages['verifier'].total_tokens})"
    )
    assert over.details[-2].startswith(f"total: {run.usage.total.prompt_tokens} prompt + ")
    assert over.details[-1] == f"tokens estimated by {ESTIMATE_NAME}"
    nothing = run_check("tokens", TokensExpectation(max=1), run.result, TokenUsage())
    assert not nothing.passed
    assert nothing.actual == "no token usage was reported by any model answer"
