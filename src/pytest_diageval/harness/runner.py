"""Run one scenario: its world, its model (scripted or cassette) and the ChatService.

A scenario runs once per process; every expectation item reads the same :class:`ScenarioRun`.
Anything that stops the run (a stale cassette, a broken script, a missing world) is kept as
the run's error, so each item reports it instead of a traceback from deep inside.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from pytest_diageval.agents.chat_service import ChatService
from pytest_diageval.agents.llm import LLM, LLMConfig
from pytest_diageval.agents.results import ChatResult
from pytest_diageval.agents.scripted import scripted_llm
from pytest_diageval.core.world import World
from pytest_diageval.harness.cassettes import CassetteSession, RecordMode, cassette_transport
from pytest_diageval.harness.loader import load_scenario_world
from pytest_diageval.harness.scenario import Scenario

__all__ = ["REPLAY_API_KEY", "RunSettings", "ScenarioRun", "recorded_model", "run_scenario"]

REPLAY_API_KEY = "replay-without-key"
"""Sent (and never recorded) when replaying without OPENAI_API_KEY: replay needs no key."""
DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"
DEFAULT_MODEL = "diageval-model"


@dataclass(frozen=True)
class RunSettings:
    """What the command line and environment say about the model endpoint and cassettes."""

    record_mode: RecordMode = "none"
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None

    @classmethod
    def from_env(
        cls, record_mode: RecordMode, base_url: str | None, model: str | None
    ) -> RunSettings:
        return cls(
            record_mode=record_mode,
            base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
            model=model or os.environ.get("DIAGEVAL_MODEL"),
            api_key=os.environ.get("OPENAI_API_KEY") or None,
        )


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
    config = LLMConfig(
        base_url=settings.base_url or DEFAULT_BASE_URL,
        model=settings.model or recorded_model(cassette) or DEFAULT_MODEL,
        api_key=settings.api_key or REPLAY_API_KEY,
        # A replay must never sleep through SDK retries; a recording may retry a flaky server.
        max_retries=0 if settings.record_mode == "none" else 2,
    )
    session = CassetteSession(
        cassette,
        record_mode=settings.record_mode,
        secrets=[settings.api_key],
        rerecord_command=rerecord_command,
    )
    with session, LLM(config, transport=cassette_transport()) as llm:
        result = ChatService().run(scenario.query, world, llm, session_id=scenario.scenario_id)
    session.verify()
    return result


def recorded_model(cassette: Path) -> str | None:
    """The model a cassette was recorded with, so a replay needs no ``--diageval-model``."""
    if not cassette.is_file():
        return None
    data = yaml.safe_load(cassette.read_text("utf-8")) or {}
    for interaction in data.get("interactions", []):
        body = interaction.get("request", {}).get("body")
        if isinstance(body, str):
            body = json.loads(body)
        if isinstance(body, dict) and isinstance(body.get("model"), str):
            return str(body["model"])
    return None
