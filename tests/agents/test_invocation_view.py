"""Over whole runs of the shipped scripted scenarios, the rows the executor saw each turn
(the recorder's in-memory view) are the store's rows at that moment, and at the end."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from pytest_diageval.agents import chat_service
from pytest_diageval.agents.chat_service import ChatService
from pytest_diageval.agents.scripted.model import scripted_llm
from pytest_diageval.core.contract.contracts import ToolInvocation
from pytest_diageval.core.evidence.recorder import ToolInvocationRecorder
from pytest_diageval.harness.format.loader import load_scenario, load_scenario_world
from pytest_diageval.harness.format.registry import config_checks
from support.shipped import shipped_scenario_paths

REPO = Path(__file__).resolve().parents[2]
SCRIPTED = [path for path in shipped_scenario_paths() if "live" not in path.relative_to(REPO).parts]


class _CheckedRecorder(ToolInvocationRecorder):
    """Compares every view it hands out with a fresh read of the store."""

    instances: ClassVar[list[_CheckedRecorder]] = []

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.views = 0
        _CheckedRecorder.instances.append(self)

    def invocations(self) -> list[ToolInvocation]:
        view = super().invocations()
        assert _dumped(view) == _dumped(self._store.list_invocations(self._session_id))
        self.views += 1
        return view


def _dumped(rows: list[ToolInvocation]) -> list[str]:
    return [row.model_dump_json() for row in rows]


@pytest.mark.parametrize("path", SCRIPTED, ids=lambda path: path.stem)
def test_the_executor_sees_the_stored_rows_every_turn(
    path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    scenario = load_scenario(path, config_checks(pytestconfig))  # the root conftest.py's keys
    if scenario.llm is None or scenario.llm.script is None:
        pytest.skip("replays a cassette")
    monkeypatch.setattr(chat_service, "ToolInvocationRecorder", _CheckedRecorder)
    _CheckedRecorder.instances.clear()
    service = ChatService()
    llm, _ = scripted_llm(scenario.llm.script)
    with llm:
        result = service.run(scenario.query, load_scenario_world(scenario, path), llm)

    (recorder,) = _CheckedRecorder.instances
    assert recorder.views >= 2  # the executor's turns, the verdict and the result
    assert _dumped(result.invocations) == _dumped(service.store.list_invocations(result.session_id))


def test_the_shipped_suite_has_scripted_scenarios_with_tool_calls() -> None:
    assert len(SCRIPTED) >= 40
