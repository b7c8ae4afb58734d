"""Run one scenario: its world, its model (scripted or cassette) and the ChatService.

A scenario runs once per process; every expectation item reads the same :class:`ScenarioRun`.
Anything that stops the run (a stale cassette, a broken script, a missing world) is kept as
the run's error, so each item reports it instead of a traceback from deep inside.

A scenario with a ``rubric`` expectation asks the grader (:mod:`pytest_diageval.agents.grader`)
once the pipeline has finished, through the same client and transport: a cassette records and
replays it (stage ``grader``), the script answers it, the usage meter counts it. ChatService
never sees it, so the verdict stays the code's.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_diageval.agents.chat_service import ChatService
from pytest_diageval.agents.grader import GraderRun, run_grader
from pytest_diageval.agents.llm import LLM, LLMConfig
from pytest_diageval.agents.reference import reference_llm, reference_script
from pytest_diageval.agents.results import ChatResult, RoundResult
from pytest_diageval.agents.scripted.model import (
    ScriptEntry,
    ScriptExhaustedError,
    parse_script,
    scripted_llm,
)
from pytest_diageval.agents.scripted.rounds import explain_exhaustion
from pytest_diageval.agents.scripted.token_estimate import ESTIMATE_NAME
from pytest_diageval.agents.usage import TokenUsage, UsageMeter
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.evidence.world import World
from pytest_diageval.harness.cassettes.rerecord import (
    RecordingMetadata,
    read_metadata,
    write_metadata,
)
from pytest_diageval.harness.cassettes.samples import (
    recorded_samples,
    sample_path,
    surplus_samples,
)
from pytest_diageval.harness.format.loader import (
    ScenarioError,
    load_scenario_world,
    resolve_world_spec,
)
from pytest_diageval.harness.format.scenario import Scenario
from pytest_diageval.harness.settings import RecordMode, RunSettings

if TYPE_CHECKING:
    from pytest_diageval.harness.cassettes.cassette_session import CassetteSession

__all__ = [
    "REPLAY_API_KEY",
    "MissingSampleError",
    "ScenarioRun",
    "ServerUnreachableError",
    "run_samples",
    "run_scenario",
    "script_entries",
    "unreachable_error",
]

REPLAY_API_KEY = "replay-without-key"
"""Sent (and never recorded) when replaying without OPENAI_API_KEY: replay needs no key."""
# Only for a cassette with no request at all (a replay sends the recorded endpoint); .invalid
# can never resolve, should a request ever get past the cassette.
REPLAY_BASE_URL = "http://replay.invalid/v1"
# Only for a cassette without a recognisable model; its first request then fails as stale.
UNKNOWN_MODEL = "unknown-recorded-model"


@dataclass(frozen=True)
class ScenarioRun:
    """The outcome of one scenario run: a result, or the error that stopped it, and the
    tokens the model answers reported (also up to an error)."""

    result: ChatResult | None
    error: BaseException | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    grade: GraderRun | None = None
    """The grader's answer, for a scenario with a ``rubric`` expectation that ran to the end."""
    world: World | None = None
    """The world the run was asked about (None when it could not be loaded)."""


class MissingSampleError(Exception):
    """``--diageval-repeat N`` asked a replay for a sample that was never recorded."""


def run_samples(
    scenario: Scenario,
    path: Path,
    *,
    cassette: Path | None,
    settings: RunSettings,
    command: Callable[[RecordMode], str],
    repeat: int | None = None,
) -> list[ScenarioRun]:
    """Every sample of a scenario, in order (stored as :mod:`.cassettes.samples` says).

    ``repeat`` (``--diageval-repeat``) is how many; without it, as many as are recorded (a
    recording records that many again). A scripted scenario has one sample: its script
    answers the same way every time. A recording that replaced its samples (``rewrite``,
    ``all``) removes the sample files above ``repeat``, so no older sample replays beside the
    new ones; one where any sample failed (and was abandoned) leaves them all. ``command(mode)``
    is the command that records this scenario in ``mode`` with as many samples.
    """
    if cassette is None:
        return [run_scenario(scenario, path, cassette=None, settings=settings, rerecord_command="")]
    recorded = recorded_samples(cassette)
    count = repeat or max(recorded, 1)
    runs = []
    rewrite = command("rewrite")  # reads the cassette's metadata: once, not per sample
    for sample in range(1, count + 1):
        if settings.record_mode == "none" and sample > max(recorded, 1):
            runs.append(ScenarioRun(None, error=_missing_sample(cassette, sample, count, command)))
            continue
        label = scenario.scenario_id if count == 1 else f"{scenario.scenario_id} #{sample}"
        run = run_scenario(
            scenario,
            path,
            cassette=sample_path(cassette, sample),
            settings=settings,
            rerecord_command=rewrite,
            label=label,
        )
        runs.append(run)
    if settings.record_mode in ("rewrite", "all") and all(map(_completed, runs)):
        for surplus in surplus_samples(cassette, count):
            surplus.unlink()
    return runs


def _completed(run: ScenarioRun) -> bool:
    """The run reached its end (a session that errored was abandoned: its cassette kept)."""
    return run.result is not None and run.result.status == "completed"


def _missing_sample(
    cassette: Path, sample: int, count: int, command: Callable[[RecordMode], str]
) -> MissingSampleError:
    return MissingSampleError(
        f"--diageval-repeat {count} replays sample {sample}, but {sample_path(cassette, sample)}"
        f" is not recorded ({recorded_samples(cassette)} sample(s) are); record the missing"
        f" samples (the recorded ones replay as they are) with:\n{command('once')}"
    )


def run_scenario(
    scenario: Scenario,
    path: Path,
    *,
    cassette: Path | None,
    settings: RunSettings,
    rerecord_command: str,
    label: str | None = None,
) -> ScenarioRun:
    """One run of the scenario (one sample); ``label`` names it in a recording's progress."""
    usage = TokenUsage()
    try:
        world = load_scenario_world(scenario, path)
        if cassette is None:
            result, grade = _run_scripted(scenario, world, usage)
            return ScenarioRun(result, usage=usage, grade=grade, world=world)
        recorded_world = _recorded_world(scenario, path, cassette)
        result, grade = _run_cassette(
            scenario, world, cassette, settings, rerecord_command, usage, recorded_world, label
        )
        return ScenarioRun(result, usage=usage, grade=grade, world=world)
    except Exception as exc:  # every stop is reported by the items, with its own message
        return ScenarioRun(result=None, error=exc, usage=usage)


def script_entries(scenario: Scenario, world: World) -> list[ScriptEntry]:
    """The answers of a run without cassette, one round of them for the reference agent (a
    mutation replays a run that passed in its first round): the scenario's script, else the
    reference agent's (``llm: {reference: true}`` or ``--diageval-model reference``)."""
    if scenario.llm is not None and scenario.llm.script is not None:
        return scenario.llm.script
    return parse_script(reference_script(scenario.query, world), source="reference agent")


def _run_scripted(
    scenario: Scenario, world: World, usage: TokenUsage
) -> tuple[ChatResult, GraderRun | None]:
    """A run answered by the scenario's script, else by the reference agent."""
    usage.source = f"estimated by {ESTIMATE_NAME}"
    meter = functools.partial(UsageMeter, usage=usage)
    llm, transport = (
        scripted_llm(scenario.llm.script, wrap=meter)
        if scenario.llm is not None and scenario.llm.script is not None
        else reference_llm(scenario.query, world, wrap=meter)
    )
    finished: list[RoundResult] = []
    try:
        with llm:
            result = _diagnose(scenario, world, llm, finished)
            grade = _grade(scenario, result, llm)
        transport.assert_exhausted()
    except ScriptExhaustedError as exc:
        # Out of entries after a round that asked for a retry: say why the round was asked.
        explanation = explain_exhaustion(finished, exc.stage)
        if explanation is None:
            raise
        raise ScriptExhaustedError(
            f"{exc}{explanation}", stage=exc.stage, request=exc.request
        ) from None
    return result, grade


def _grade(scenario: Scenario, result: ChatResult, llm: LLM) -> GraderRun | None:
    """The grader of the scenario's ``rubric``, asked after a run that finished its rounds."""
    rubric = scenario.expect.rubric
    if rubric is None or result.status != "completed" or not result.rounds:
        return None
    return run_grader(llm, rubric.criteria, result)


def _diagnose(
    scenario: Scenario, world: World, llm: LLM, finished: list[RoundResult] | None = None
) -> ChatResult:
    """One ChatService run on a fresh store, closed as soon as the run ends.

    A sqlite3 connection (with its statement cache) sits in a reference cycle, so what it
    holds is freed only by a full garbage collection, and those come rarer as the suite grows
    (about every 80 scenarios at 1,000): the runs' databases piled up between them and peak
    memory grew with the suite. Closing frees the database at once. (The openai client is in
    no cycle as long as nothing touches ``client.chat``, which points back at the client:
    :func:`~pytest_diageval.agents.llm.post_completion` does not.)
    """
    with closing(Store()) as store:
        service = ChatService(store=store)
        try:
            return service.run(scenario.query, world, llm, session_id=scenario.scenario_id)
        finally:
            if finished is not None:  # the rounds before a stop, for its message
                finished.extend(service.last_rounds)


def _run_cassette(
    scenario: Scenario,
    world: World,
    cassette: Path,
    settings: RunSettings,
    rerecord_command: str,
    usage: TokenUsage,
    world_spec: str | None = None,
    label: str | None = None,
) -> tuple[ChatResult, GraderRun | None]:
    # vcrpy (and what it patches) only for suites that replay cassettes.
    from pytest_diageval.harness.cassettes.cassette_session import (
        CassetteSession,
        cassette_transport,
    )

    session = CassetteSession(
        cassette,
        record_mode=settings.record_mode,
        secrets=[settings.api_key],
        rerecord_command=rerecord_command,
    )
    # Checked before the session touches any file: a recording needs a real endpoint.
    endpoint = settings.require_endpoint(cassette) if session.may_record else None
    with session:
        if endpoint is None:
            config = _replay_config(session, settings)
        else:
            config = _record_config(*endpoint, settings)
        listener = None
        if endpoint is not None and settings.progress is not None:
            listener = functools.partial(settings.progress, label or scenario.scenario_id)
        usage.source = f"reported by the endpoint ({config.model})"
        meter = UsageMeter(cassette_transport(session.secrets), usage, on_answer=listener)
        with LLM(config, transport=meter) as llm:
            result = _diagnose(scenario, world, llm)
            grade = _grade(scenario, result, llm)
        if result.status != "completed" or (grade is not None and grade.unavailable):
            # The model failed the run (connection refused, errors after the SDK's retries):
            # rewrite must not replace the committed cassette with what little it recorded.
            session.abandon()
    session.verify(run_error=result.error if result.status != "completed" else None)
    if endpoint is not None and result.status != "completed":
        # A 401/403 says what is wrong with the key, and where it is set.
        refused = settings.refused_key_error(result.error, endpoint[0])
        if refused is not None:
            raise refused
        unreachable = unreachable_error(settings.record_mode, result.error, endpoint[0])
        if unreachable is not None:  # nothing listens there: say how to start a server
            raise unreachable
    if endpoint is not None and not session.abandoned and session.path.is_file():
        # What the printed re-record command needs; vcrpy rewrote the file without it.
        recorded = RecordingMetadata(
            *endpoint,
            settings.timeout,
            world_spec,
            settings.request_options,
            contract_points=settings.contract_points,
        )
        write_metadata(session.path, recorded)
    return result, grade


class ServerUnreachableError(Exception):
    """A recording could not connect to its endpoint: no model server is running there."""


_CONNECTION_FAILED = "connection failed: "
"""How ``LLM`` describes a request that never reached a server (agents/llm.py)."""


def unreachable_error(
    record_mode: RecordMode, run_error: str | None, base_url: str
) -> ServerUnreachableError | None:
    """When a recording stopped because nothing answered at ``base_url``: the error that
    names the commands that start a server or point at one; else None."""
    if _CONNECTION_FAILED not in (run_error or ""):
        return None
    return ServerUnreachableError(
        f"--diageval-record={record_mode}: nothing answered at {base_url} (the connection"
        " failed): start a model server first, e.g. `diageval serve-local` (the local model;"
        " it prints the OPENAI_BASE_URL and DIAGEVAL_MODEL to export), or give"
        " --diageval-base-url (or OPENAI_BASE_URL) the URL of a running OpenAI-compatible"
        f" server. The model call said: {run_error}"
    )


def _recorded_world(scenario: Scenario, path: Path, cassette: Path) -> str | None:
    """The scenario's world as the cassette's metadata names it: a packaged name, or its file
    relative to the cassette's folder (None for an inline world)."""
    if not isinstance(scenario.world, str):
        return None
    try:
        spec = resolve_world_spec(scenario, path)
    except ScenarioError:
        return None
    if not isinstance(spec, Path):
        return str(spec)
    return Path(os.path.relpath(spec, cassette.absolute().parent)).as_posix()


def _replay_config(session: CassetteSession, settings: RunSettings) -> LLMConfig:
    # The recorded model and endpoint, whatever the options or environment say: a
    # DIAGEVAL_MODEL or OPENAI_BASE_URL exported for `diageval ask` must not turn every
    # replay stale (the path is matched; the host is not). The recorded request options
    # likewise: a cassette recorded at temperature 0.7 replays without flags.
    metadata = read_metadata(session.path) or RecordingMetadata()
    return LLMConfig(
        base_url=session.recorded_base_url or REPLAY_BASE_URL,
        model=session.recorded_model or UNKNOWN_MODEL,
        api_key=settings.api_key or REPLAY_API_KEY,
        timeout=settings.timeout,
        max_retries=0,  # a replay must never sleep through SDK retries
        request_options=metadata.replay_options(session.path),
        contract_points=metadata.contract_points,
    )


def _record_config(base_url: str, model: str, settings: RunSettings) -> LLMConfig:
    return LLMConfig(
        base_url=base_url,
        model=model,
        api_key=settings.api_key or REPLAY_API_KEY,
        timeout=settings.timeout,
        max_retries=2,  # a recording may retry a flaky server; only final answers are kept
        request_options=settings.request_options,
        contract_points=settings.contract_points,
    )
