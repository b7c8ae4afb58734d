"""What ``diageval scaffold`` learns from replaying a cassette: its world and the code's verdict.

A scaffolded scenario must pass as written, so its ``expect: verdict`` is the verdict the code
derives from the recording (the plugin's own replay, offline), never the verdict the model
wrote; and its world is the one the cassette was recorded on, since the recorded requests carry
that world's tool output and a replay on another world is stale at the first tool result.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = ["RecordingWorld", "Replayed", "recording_world", "replay_cassette"]

_SKIPPED_FOLDERS = frozenset({"cassettes", "worlds", "node_modules", "build", "dist"})
_MAX_FILES = 5000  # scenario files read while looking for the one that names a cassette


@dataclass(frozen=True)
class RecordingWorld:
    """The world a cassette was recorded on: a packaged name, a file or an inline mapping."""

    spec: str | Path | dict[str, Any]
    origin: str  # how it was found, for the scaffold's header

    def written(self, base: Path) -> str | dict[str, Any]:
        """The ``world:`` value of a scenario file in ``base``."""
        if isinstance(self.spec, Path):
            return Path(os.path.relpath(self.spec, base)).as_posix()
        return self.spec

    def as_scenario_value(self) -> str | dict[str, Any]:
        return str(self.spec) if isinstance(self.spec, Path) else self.spec


@dataclass(frozen=True)
class Replayed:
    """The cassette's session as the code judged it."""

    verdict: str
    score: float | None
    model_verdict: str | None
    rounds: int

    def describe(self) -> str:
        score = "-" if self.score is None else f"{self.score:g}"
        model = self.model_verdict or "no verdict"
        plural = "" if self.rounds == 1 else "s"
        return (
            f"{self.verdict} (score {score}, {self.rounds} round{plural}; the model's verifier"
            f" said {model})"
        )


def recording_world(cassette: Path, given: str | None = None) -> RecordingWorld:
    """The cassette's world: ``given`` (a name, or a path from the working directory), else
    the one its metadata names, else that of a scenario naming it, else ``default``."""
    from pytest_diageval.harness.cassettes.rerecord import read_metadata

    if given is not None:
        return _spec(given, Path.cwd(), f"{given} (--world)")
    metadata = read_metadata(cassette)
    if metadata is not None and metadata.world:
        return _spec(metadata.world, cassette.absolute().parent, f"{metadata.world} (recorded)")
    for path, data in _scenarios_naming(cassette):
        world = data.get("world")
        label = f"of {_shown(path)}"
        if isinstance(world, dict):
            return RecordingWorld(world, f"inline, {label}")
        if isinstance(world, str) and world:
            return _spec(world, path.parent, f"{world} ({label})")
    return RecordingWorld("default", "default (the cassette names none)")


def replay_cassette(
    cassette: Path, world: RecordingWorld, scenario_id: str, query: str
) -> Replayed:
    """Replay ``cassette`` offline through the pipeline, as the plugin does; a replay that
    stops (a stale request: another world, another prompt) is a :class:`ValueError`."""
    from pytest_diageval.harness.format.scenario import Scenario
    from pytest_diageval.harness.runner import run_scenario
    from pytest_diageval.harness.settings import RunSettings

    scenario = Scenario.model_validate(
        {
            "id": scenario_id,
            "title": "scaffold replay",
            "query": query,
            "world": world.as_scenario_value(),
            "llm": {"cassette": str(cassette.absolute())},
            "expect": {"verdict": "PASS"},
        }
    )
    run = run_scenario(
        scenario,
        cassette.absolute(),
        cassette=cassette.absolute(),
        settings=RunSettings(api_key=os.environ.get("OPENAI_API_KEY") or None),
        rerecord_command="",
    )
    result = run.result
    if run.error is not None or result is None or result.final_verdict is None:
        reason = str(run.error or (result.error if result else None) or "no verdict").strip()
        raise ValueError(
            f"{cassette} does not replay on world {world.origin}: {reason.splitlines()[0]}"
            " (give the world it was recorded on with --world)"
        )
    last = result.last_round
    model = last.verifier_output.verdict if last and last.verifier_output else None
    return Replayed(result.final_verdict, result.final_score, model, len(result.rounds))


def _spec(value: str, base: Path, origin: str) -> RecordingWorld:
    from pytest_diageval.core.evidence.world import available_worlds

    if value in available_worlds():
        return RecordingWorld(value, origin)
    return RecordingWorld((base / value).absolute(), origin)


def _scenarios_naming(cassette: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Scenario files under the cassette's project (its folder's parent) whose ``llm.cassette``
    is this file, or whose id is its stem with no ``llm`` (the default cassette)."""
    target = cassette.resolve()
    seen = 0
    for folder, dirs, names in os.walk(target.parent.parent):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_FOLDERS)
        for name in sorted(n for n in names if n.endswith((".yaml", ".yml"))):
            seen += 1
            if seen > _MAX_FILES:
                return
            path = Path(folder, name)
            try:
                text = path.read_text("utf-8")
                if target.stem not in text:
                    continue
                data = yaml.safe_load(text)
            except (OSError, UnicodeDecodeError, yaml.YAMLError):
                continue
            if isinstance(data, dict) and _names(data, path, target):
                yield path, data


def _names(data: dict[str, Any], path: Path, cassette: Path) -> bool:
    llm = data.get("llm")
    named = llm.get("cassette") if isinstance(llm, dict) else None
    if isinstance(named, str):
        return (path.parent / named).resolve() == cassette
    return llm is None and "expect" in data and str(data.get("id", path.stem)) == cassette.stem


def _shown(path: Path) -> str:
    cwd = Path.cwd()
    return str(path.relative_to(cwd)) if path.is_relative_to(cwd) else str(path)
