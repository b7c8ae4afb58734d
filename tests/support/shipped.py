"""Which files under ``scenarios/`` (and ``cassettes/``) the project ships, as opposed to a
user's own.

The README invites a newcomer to save a scenario as ``scenarios/mine/high-memory.yaml``: the
tests that check or run the shipped suite must never read that file (a half-written draft of
theirs must not fail the project's tests). A file is shipped when git tracks it; outside a
git work tree (an unpacked archive, no ``git``), :func:`shipped_files` takes the files on disk
and :func:`shipped_scenario_files` those in the folders the suite's index names.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "REPO",
    "shipped_files",
    "shipped_scenario_files",
    "shipped_scenario_paths",
    "tracked_files",
]

REPO = Path(__file__).resolve().parents[2]


def tracked_files(root: Path, folder: str) -> set[Path] | None:
    """The files git tracks under ``root/folder`` (added ones included); None when ``root``
    is not a git work tree or git is missing."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--full-name", "--", folder],
            capture_output=True,
            check=True,
            text=True,
        ).stdout
        top = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--show-toplevel"],
            capture_output=True,
            check=True,
            text=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return {Path(top) / name for name in listed.split("\0") if name}


def shipped_files(folder: str, pattern: str = "**/*.yaml", *, root: Path = REPO) -> list[Path]:
    """The shipped files under ``root/folder`` that match ``pattern`` (a glob relative to the
    folder; ``**/`` for any depth), sorted: those git tracks (``git ls-files``), or every such
    file on disk when ``root`` is not a git checkout. A tracked file deleted from disk is not
    listed; ``worlds/`` and ``cassettes/`` folders are listed like any other."""
    present = sorted(path for path in (root / folder).glob(pattern) if path.is_file())
    tracked = tracked_files(root, folder)
    if tracked is None:
        return present
    resolved = {path.resolve() for path in tracked}
    return [path for path in present if path.resolve() in resolved]


def shipped_scenario_paths(subfolder: str = "", *, root: Path = REPO) -> list[Path]:
    """The shipped scenario files under ``scenarios/`` (or its ``subfolder``), sorted: every
    ``*.yaml`` / ``*.yml`` there but those under a ``worlds`` or ``cassettes`` folder."""
    folder = f"scenarios/{subfolder}".rstrip("/")
    return sorted(
        path
        for pattern in ("**/*.yaml", "**/*.yml")
        for path in shipped_files(folder, pattern, root=root)
        if not {"worlds", "cassettes"} & set(path.relative_to(root / "scenarios").parts)
    )


def shipped_scenario_files(
    root: Path, *, indexed_folders: Iterable[str] = (), suffixes: tuple[str, ...] = (".yaml",)
) -> list[Path]:
    """Every shipped file under ``root/scenarios`` with one of ``suffixes``, cassettes
    excluded: git's tracked files, else every file in ``indexed_folders``."""
    scenarios = root / "scenarios"
    present = [
        path
        for path in scenarios.rglob("*")
        if path.suffix in suffixes
        and path.is_file()
        and "cassettes" not in path.relative_to(scenarios).parts
    ]
    tracked = tracked_files(root, "scenarios")
    if tracked is not None:
        resolved = {path.resolve() for path in tracked}
        return sorted(path for path in present if path.resolve() in resolved)
    folders = set(indexed_folders)
    return sorted(path for path in present if path.relative_to(scenarios).parts[0] in folders)
