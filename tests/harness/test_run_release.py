"""A finished run frees its database and its recorded requests by itself.

A sqlite3 connection (its statement cache points back at it) sits in a reference cycle, and
so would an openai client whose ``client.chat`` had been touched (it points back at the
client): what they hold is freed only by a full garbage collection, which comes rarer as a
suite grows. The runner therefore closes the run's store, and the model's requests go out
without ``client.chat``; these tests run with the cycle collector off, so only what is
released without it counts.
"""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_diageval.agents.scripted.model import ScriptedTransport
from pytest_diageval.harness.format.loader import load_scenario
from pytest_diageval.harness.runner import ScenarioRun, run_scenario
from pytest_diageval.harness.settings import RunSettings

REPO = Path(__file__).resolve().parents[2]
SCRIPTED = REPO / "tests" / "plugin" / "data" / "example-scenario.yaml"
LIVE = REPO / "scenarios" / "live" / "live-high-memory.yaml"
CASSETTE = REPO / "cassettes" / "live-high-memory.yaml"


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _new_objects(kind: type, before: set[int]) -> list[object]:
    return [o for o in gc.get_objects() if isinstance(o, kind) and id(o) not in before]


def _ids(kind: type) -> set[int]:
    return {id(o) for o in gc.get_objects() if isinstance(o, kind)}


def _is_open(connection: sqlite3.Connection) -> bool:
    try:
        connection.execute("SELECT 1")
    except sqlite3.ProgrammingError:  # "Cannot operate on a closed database."
        return False
    return True


def _run(path: Path, cassette: Path | None) -> ScenarioRun:
    run = run_scenario(
        load_scenario(path), path, cassette=cassette, settings=RunSettings(), rerecord_command=""
    )
    assert run.error is None
    assert run.result is not None
    assert run.result.status == "completed"
    return run


@pytest.mark.usefixtures("collector_off")
@pytest.mark.parametrize(("path", "cassette"), [(SCRIPTED, None), (LIVE, CASSETTE)])
def test_a_finished_run_leaves_no_open_database(path: Path, cassette: Path | None) -> None:
    before = _ids(sqlite3.Connection)

    _run(path, cassette)

    # Left open, the store's connection would still be here (in its cycle, collector off).
    connections = _new_objects(sqlite3.Connection, before)
    assert [c for c in connections if _is_open(c)] == []


@pytest.mark.usefixtures("collector_off")
def test_a_finished_scripted_run_lets_go_of_its_recorded_requests() -> None:
    before = _ids(ScriptedTransport)

    run = _run(SCRIPTED, None)

    # The transport, with every request it recorded, went with the client: no cycle held it.
    assert _new_objects(ScriptedTransport, before) == []
    assert run.usage.total.requests > 0
