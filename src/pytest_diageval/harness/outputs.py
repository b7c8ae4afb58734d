"""The files a run writes: checked when the run starts, written whole or not at all.

Every file the plugin writes (a cassette and its staging file, the ``--diageval-report`` JSON,
the ``--diageval-html`` page, the Markdown summary) goes through :func:`replacing`: the text is
written to a new temporary file in the target's own folder (created exclusively, so never
through a symlink planted there) and renamed over the target (``os.replace``, atomic on one
file system). A run killed at any moment leaves the previous file whole and, at worst, a
hidden ``.NAME.*.tmp`` beside it; two runs writing the same file each write a whole one, the
later rename winning; a symlink at the target is replaced, never written through.

:func:`output_path_problem` says, before anything runs, why a path given for an output cannot
be written (a folder, a path under a file, a device such as ``/dev/full``, a name longer than
the file system allows, a folder the run may not write): the option then stops the run as a
usage error that names it, rather than a traceback at the end that would take pytest's own
JUnit XML with it. Standard library only: ``settings`` checks the options with it while pytest
parses them.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

__all__ = ["output_path_problem", "replacing", "write_atomically"]


@contextlib.contextmanager
def replacing(path: Path, *, keep_existing: bool = False) -> Iterator[IO[str]]:
    """``with replacing(path) as out: out.write(...)``: UTF-8 text that replaces ``path`` when
    the block ends without an exception; on any exception (a full disk, Ctrl-C) ``path`` is
    left as it was and the temporary file removed. ``keep_existing`` starts the new file with
    the current content of ``path`` (an append that is still all or nothing).

    The parent folders are created; the new file gets the permissions the umask gives any new
    file (a CI artifact must stay readable), or those of the file it replaces.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as out:
            os.chmod(temporary, _mode_for(path))
            if keep_existing and path.is_file():  # byte for byte, whatever it holds
                out.buffer.write(path.read_bytes())
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_atomically(path: Path, text: str) -> None:
    """``text`` as the whole new content of ``path`` (:func:`replacing`)."""
    with replacing(path) as out:
        out.write(text)


def _mode_for(path: Path) -> int:
    try:
        current = path.stat(follow_symlinks=False)
    except OSError:
        current = None
    if current is not None and stat.S_ISREG(current.st_mode):
        return stat.S_IMODE(current.st_mode)
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_TEMPORARY_NAME_EXTRA = len("..12345678.tmp")
"""What :func:`replacing`'s temporary file adds to the target's name (mkstemp's 8 characters)."""


def output_path_problem(text: str) -> str | None:
    """Why the file path ``text`` cannot be written as an output, or None when it can (as far
    as can be known before the run: a disk that fills up later is said at the end)."""
    if not text:
        return "is empty"
    if "\0" in text:
        return "holds a NUL byte, which no file name can"
    path = Path(text)
    if not path.name or text.endswith(("/", os.sep)) or path.is_dir():
        return "is a directory"
    ancestor = _existing_ancestor(path.parent)
    try:
        limit = os.pathconf(ancestor, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    longest = max(len(os.fsencode(part)) for part in path.parts)
    if longest + _TEMPORARY_NAME_EXTRA > limit:
        return (
            f"has a name of {longest} bytes; this file system allows {limit}, less"
            f" {_TEMPORARY_NAME_EXTRA} for the temporary file it is written to first"
        )
    if path.exists() and not path.is_file():
        return "exists and is not a regular file (a device or a pipe), which cannot be replaced"
    if not ancestor.is_dir():
        return f"lies under {ancestor}, which is a file, not a folder"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"lies in {ancestor}, a folder this run may not write"
    return None


def _existing_ancestor(folder: Path) -> Path:
    """The nearest of ``folder`` and its parents that exists (the run creates the rest)."""
    current = folder if str(folder) else Path(".")
    while not current.exists() and current != current.parent:
        current = current.parent
    return current
