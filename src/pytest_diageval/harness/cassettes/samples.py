"""Repeated samples of one scenario (``--diageval-repeat N``): where each is stored.

Sample 1 is the scenario's cassette itself, so a cassette recorded once is a one-sample
recording and nothing about it changes. Sample k (k ≥ 2) is a cassette of its own beside it,
``memory.yaml`` → ``memory.sample-2.yaml``, with its own requests, answers and metadata: a
sample is a whole run, and its requests differ from sample 1's as soon as the model answered
differently. A scenario's samples are sample 1 and the sample files that follow it without a
gap; a replay runs every one of them.

Sample files live beside their cassette, in the ``cassettes`` folder that is never collected.
This module imports no vcrpy: the runner asks it how many samples there are in any suite.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = [
    "MAX_SAMPLES",
    "SAMPLE_INFIX",
    "holds_recording",
    "recorded_samples",
    "sample_path",
    "surplus_samples",
]

SAMPLE_INFIX = ".sample-"
MAX_SAMPLES = 100
"""The most samples ``--diageval-repeat`` records: more is a typo, not a plan (each is a run)."""


def holds_recording(path: Path) -> bool:
    """Whether a cassette file exists with content: an empty file is recorded over, as vcrpy
    treats a missing one."""
    return path.is_file() and bool(path.read_bytes().strip())


def sample_path(cassette: Path, sample: int) -> Path:
    """The cassette of ``sample`` (1-based): the cassette itself for sample 1."""
    if sample < 1:
        raise ValueError(f"samples are numbered from 1, not {sample}")
    if sample == 1:
        return cassette
    return cassette.with_name(f"{cassette.stem}{SAMPLE_INFIX}{sample}{cassette.suffix}")


def recorded_samples(cassette: Path) -> int:
    """How many samples are recorded: 0 when the cassette itself is not, else 1 plus the
    sample files that follow without a gap."""
    count = 0
    while count < MAX_SAMPLES and holds_recording(sample_path(cassette, count + 1)):
        count += 1
    return count


def surplus_samples(cassette: Path, keep: int) -> list[Path]:
    """Sample files of ``cassette`` numbered above ``keep``, in order: what a recording of
    ``keep`` samples replaces, so that no older sample replays beside the new ones."""
    pattern = re.compile(
        re.escape(cassette.stem + SAMPLE_INFIX) + r"([0-9]+)" + re.escape(cassette.suffix)
    )
    found = []
    for path in cassette.parent.glob(f"{cassette.stem}{SAMPLE_INFIX}*{cassette.suffix}"):
        matched = pattern.fullmatch(path.name)
        if matched is not None and int(matched.group(1)) > keep:
            found.append((int(matched.group(1)), path))
    return [path for _, path in sorted(found)]
