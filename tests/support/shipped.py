"""Which files under ``scenarios/`` the project ships, as opposed to a user's own.

The README invites a newcomer to save a scenario as ``scenarios/mine/high-memory.yaml``: the
tests that check the shipped suite (its index, its count) must not count that file. A file is
shipped when git tracks it; outside a git work tree (an unpacked archive, no ``git``), the
shipped files are those in the folders the suite's index names.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

__all__ = ["shipped_scenario_files", "tracked_files"]


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
