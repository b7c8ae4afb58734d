"""Run one scenario: its world, its model (scripted or cassette) and the ChatService.

A scenario runs once per process; every expectation item reads the same :class:`ScenarioRun`.
Anything that stops the run (a stale cassette, a broken script, a missing world) is kept as
the run's error, so each item reports it instead of a traceback from deep inside.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_diageval.agents.chat_service import ChatService
from pytest_diageval.agents.llm import LLM, LLMConfig
from pytest_diageval.agents.results import ChatResult
from pytest_diageval.agents.scripted import scripted_llm
from pytest_diageval.core.world import World
from pytest_diageval.harness.cassettes import CassetteSession, cassette_transport
from pytest_diageval.harness.loader import load_scenario_world
from pytest_diageval.harness.scenario import Scenario
from pytest_diageval.harness.settings import RunSettings

__all__ = ["REPLAY_API_KEY", "ScenarioRun", "run_scenario"]

REPLAY_API_KEY = "replay-without-key"
"""Sent (and never recorded) when replaying without OPENAI_API_KEY: replay needs no key."""
DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"
DEFAULT_MODEL = "diageval-model"


@dataclass(frozen=True)
class ScenarioRun:
    """The outcome of one scenario run: a result, or the error that stopped it."""

    result: ChatResult | None
    error: BaseException | None = None


def run_scenario(
    scenario: Scenario,
    path: Path,
    *,
    cassette: Path | None,
    settings: RunSettings,
    rerecord_command: str,
) -> ScenarioRun:
    try:
        world = load_scenario_world(scenario, path)
        if cassette is None:
            return ScenarioRun(_run_scripted(scenario, world))
        return ScenarioRun(_run_cassette(scenario, world, cassette, settings, rerecord_command))
    except Exception as exc:  # every stop is reported by the items, with its own message
        return ScenarioRun(result=None, error=exc)


def _run_scripted(scenario: Scenario, world: World) -> ChatResult:
    assert scenario.llm is not None
    assert scenario.llm.script is not None
    llm, transport = scripted_llm(scenario.llm.script)
    with llm:
        result = ChatService().run(scenario.query, world, llm, session_id=scenario.scenario_id)
    transport.assert_exhausted()
    return result


def _run_cassette(
    scenario: Scenario,
    world: World,
    cassette: Path,
    settings: RunSettings,
    rerecord_command: str,
) -> ChatResult:
    session = CassetteSession(
        cassette,
        record_mode=settings.record_mode,
        secrets=[settings.api_key],
        rerecord_command=rerecord_command,
    )
    with session:
        config = LLMConfig(
            base_url=settings.base_url or DEFAULT_BASE_URL,
            model=settings.model or session.recorded_model or DEFAULT_MODEL,
            api_key=settings.api_key or REPLAY_API_KEY,
            timeout=settings.timeout,
            # A replay must never sleep through SDK retries; a recording may retry a server.
            max_retries=0 if settings.record_mode == "none" else 2,
        )
        with LLM(config, transport=cassette_transport()) as llm:
            result = ChatService().run(scenario.query, world, llm, session_id=scenario.scenario_id)
    session.verify()
    return result
