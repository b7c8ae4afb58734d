"""Scenario files that lie outside ``diageval_scenario_dirs``, for a run that collected none.

``pytest evals/`` over scenario files in a folder the ini does not name collects nothing and
exits 5: this says which files looked like scenarios and how to set the ini key. Like
:mod:`~pytest_diageval.harness.settings`, it is imported by every pytest run that meets a
YAML file, so it imports nothing heavy.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_diageval.harness.settings import configured_scenario_dirs, is_scenario_file

__all__ = ["note_collected", "note_skipped", "outside_lines"]

_SKIPPED_KEY = pytest.StashKey[list[Path]]()
_COLLECTED_KEY = pytest.StashKey[bool]()
_SCENARIO_KEYS = (re.compile(r"^query\s*:", re.M), re.compile(r"^expect\s*:", re.M))
"""Top-level keys every scenario has (``title`` too, but a docs page may have a title)."""
_MAX_LISTED = 10


def note_collected(config: pytest.Config) -> None:
    """A scenario file was collected: the run found its scenarios, nothing to say."""
    config.stash[_COLLECTED_KEY] = True


def note_skipped(
    config: pytest.Config,
    path: Path,
    cassette_dir: Path | None,
    roots: Sequence[Path],
) -> None:
    """Keep ``path`` (a YAML file not collected) when only its folder kept it out: it is
    not under ``worlds``/``cassettes`` and would be collected if its folder were configured."""
    if is_scenario_file(path, cassette_dir, roots, scenario_dirs=(path.parent.name,)):
        config.stash.setdefault(_SKIPPED_KEY, []).append(path)


def outside_lines(config: pytest.Config) -> list[str]:
    """What to print at the end of a run that collected no scenario while YAML files that
    look like scenarios (top-level ``query:`` and ``expect:``) were kept out by their folder;
    nothing otherwise."""
    if config.stash.get(_COLLECTED_KEY, False):
        return []
    found = sorted(
        path for path in config.stash.get(_SKIPPED_KEY, []) if _looks_like_scenario(path)
    )
    if not found:
        return []
    scenario_dirs = configured_scenario_dirs(config)
    base = config.invocation_params.dir
    shown = [_display(path, base) for path in found]
    folders = dict.fromkeys(path.parent.name for path in found)  # a name matches at any depth
    entries = [*scenario_dirs, *(folder for folder in folders if folder not in scenario_dirs)]
    files = (
        f"{len(found)} YAML files look like scenarios"
        if len(found) > 1
        else "1 YAML file looks like a scenario"
    )
    lines = [
        f"diageval: no scenario was collected, but {files} outside the scenario folders"
        f" (ini diageval_scenario_dirs = {' '.join(scenario_dirs)}):",
        *(f"  {name}" for name in shown[:_MAX_LISTED]),
    ]
    if len(shown) > _MAX_LISTED:
        lines.append(f"  … and {len(shown) - _MAX_LISTED} more")
    listed = ", ".join(f'"{entry}"' for entry in entries)
    lines.append(
        "to collect them, add their folder to diageval_scenario_dirs, e.g. in pytest.ini"
        f" (under [pytest]): diageval_scenario_dirs = {' '.join(entries)}; in pyproject.toml"
        f" (under [tool.pytest.ini_options]): diageval_scenario_dirs = [{listed}]; or name"
        " the files on the command line"
    )
    return lines


def _looks_like_scenario(path: Path) -> bool:
    try:
        text = path.read_text("utf-8", errors="replace")
    except OSError:
        return False
    return all(key.search(text) for key in _SCENARIO_KEYS)


def _display(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return str(path)
