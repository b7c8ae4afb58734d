"""Recording never corrupts the committed cassette (issue 12): every mode that records goes
through a staging file, written before the first model call, and a replay that stops says why
before it counts what was left unplayed. Real recordings against the local fake server."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_diageval.agents.llm import LLM, LLMConfig
from pytest_diageval.agents.planner import run_planner
from pytest_diageval.harness.cassettes.cassette_session import (
    CassetteError,
    CassetteReplayError,
    CassetteSession,
    cassette_transport,
)
from pytest_diageval.harness.settings import RecordMode

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/, for the support package
from support.fake_openai_server import FakeOpenAIServer

QUERY = "只确认 order-service 是否存在 HighMemoryUsage 告警"
FIRST_PLAN = {"stage": "planner", "content": {"plan": "第一次录制", "steps": ["query_metrics"]}}
SECOND_PLAN = {"stage": "planner", "content": {"plan": "第二次录制", "steps": ["query_logs"]}}


def _llm(base_url: str) -> LLM:
    config = LLMConfig(base_url=base_url, model="m", api_key="replay-without-key")
    return LLM(config, transport=cassette_transport())


def _plan_twice(llm: LLM) -> list[str]:
    """Two planner requests (rounds 1 and 2): two interactions in the cassette."""
    plans = [run_planner(llm, QUERY, round=number).plan for number in (1, 2)]
    return [plan.plan for plan in plans if plan is not None]


def _record(path: Path, script: list[dict[str, Any]], mode: RecordMode) -> list[str]:
    with FakeOpenAIServer(script) as server:
        with CassetteSession(path, record_mode=mode) as handle, _llm(server.base_url) as llm:
            plans = _plan_twice(llm)
        handle.verify()
    return plans


@pytest.fixture
def committed(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "cassettes" / "memory.yaml"
    assert _record(path, [FIRST_PLAN, FIRST_PLAN], "once") == ["第一次录制", "第一次录制"]
    return path, path.read_bytes()


def _staging(path: Path) -> Path:
    return path.with_name(f".{path.name}.recording")


@pytest.mark.parametrize("mode", ["all", "new_episodes"])
def test_an_interrupted_recording_leaves_the_committed_cassette_as_it_was(
    committed: tuple[Path, bytes], mode: RecordMode
) -> None:
    path, before = committed
    # new_episodes records only what the cassette lacks: a request it has never seen.
    staged: list[bool] = []

    def interrupted_recording(base_url: str) -> None:
        with CassetteSession(path, record_mode=mode), _llm(base_url) as llm:
            run_planner(llm, "另一个问题", round=1)  # recorded into the staging file
            staged.append(_staging(path).is_file())
            raise KeyboardInterrupt  # Ctrl-C in the middle of the recording

    with FakeOpenAIServer([SECOND_PLAN, SECOND_PLAN]) as server, pytest.raises(KeyboardInterrupt):
        interrupted_recording(server.base_url)

    assert staged == [True]

    assert len(server.received) == 1
    assert path.read_bytes() == before
    assert not _staging(path).exists()


@pytest.mark.parametrize("mode", ["all", "new_episodes"])
def test_a_failed_run_leaves_the_committed_cassette_as_it_was(
    committed: tuple[Path, bytes], mode: RecordMode
) -> None:
    path, before = committed
    with (
        FakeOpenAIServer([SECOND_PLAN]) as server,
        CassetteSession(path, record_mode=mode) as handle,
        _llm(server.base_url) as llm,
    ):
        run_planner(llm, "另一个问题", round=1)
        handle.abandon()  # what the runner says when the run did not complete

    assert path.read_bytes() == before
    assert not _staging(path).exists()


def test_a_completed_all_recording_replaces_the_cassette_whole(
    committed: tuple[Path, bytes],
) -> None:
    path, before = committed

    assert _record(path, [SECOND_PLAN, SECOND_PLAN], "all") == ["第二次录制", "第二次录制"]

    text = path.read_text("utf-8")
    assert text != before.decode("utf-8")
    assert len(yaml.safe_load(text)["interactions"]) == 2
    assert "第二次录制" in text
    assert "第一次录制" not in text
    assert not _staging(path).exists()


def test_new_episodes_with_nothing_new_leaves_the_file_untouched(
    committed: tuple[Path, bytes],
) -> None:
    path, before = committed
    stat = path.stat()

    assert _record(path, [], "new_episodes") == ["第一次录制", "第一次录制"]  # all replayed

    assert path.read_bytes() == before
    assert path.stat().st_mtime_ns == stat.st_mtime_ns
    assert not _staging(path).exists()


@pytest.mark.parametrize("mode", ["once", "rewrite", "all", "new_episodes"])
def test_a_cassette_folder_that_cannot_be_written_fails_before_the_first_model_call(
    tmp_path: Path, mode: RecordMode
) -> None:
    (tmp_path / "cassettes").write_text("a file where the folder should be", "utf-8")
    path = tmp_path / "cassettes" / "memory.yaml"

    with FakeOpenAIServer([FIRST_PLAN]) as server:
        session = CassetteSession(path, record_mode=mode)
        with pytest.raises(CassetteError) as excinfo, session, _llm(server.base_url) as llm:
            run_planner(llm, QUERY, round=1)

    assert server.received == []
    assert str(excinfo.value).startswith(
        f"cannot record cassette {path}: {path.parent} is not writable ("
    )
    assert str(excinfo.value).endswith("); nothing was sent to the model")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_cassette_folder_fails_before_the_first_model_call(tmp_path: Path) -> None:
    folder = tmp_path / "cassettes"
    folder.mkdir()
    folder.chmod(0o555)
    path = folder / "memory.yaml"
    try:
        with FakeOpenAIServer([FIRST_PLAN]) as server:
            session = CassetteSession(path, record_mode="once")
            with (
                pytest.raises(CassetteError, match="is not writable \\(Permission denied\\)"),
                session,
                _llm(server.base_url) as llm,
            ):
                run_planner(llm, QUERY, round=1)
    finally:
        folder.chmod(0o755)
    assert server.received == []


def test_a_replay_that_stopped_names_its_error_before_the_unplayed_count(
    committed: tuple[Path, bytes],
) -> None:
    path, _ = committed
    with CassetteSession(path) as handle, _llm("http://replay.invalid/v1") as llm:
        run_planner(llm, QUERY, round=1)  # the run stops after its first request

    with pytest.raises(CassetteReplayError) as excinfo:
        handle.verify(run_error="LLM unavailable (executor, round 1): bad answer")

    assert str(excinfo.value) == (
        f"cassette {path}: the replay stopped after 1 of 2 recorded interaction(s): LLM"
        " unavailable (executor, round 1): bad answer; 1 recorded interaction(s) were then"
        " left unplayed"
    )
