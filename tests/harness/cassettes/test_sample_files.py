"""Where the samples of a cassette are stored, and which of them count."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_diageval.harness.cassettes.samples import (
    recorded_samples,
    sample_path,
    surplus_samples,
)


def test_sample_one_is_the_cassette_and_later_samples_sit_beside_it(tmp_path: Path) -> None:
    cassette = tmp_path / "live-high-memory.yaml"

    assert sample_path(cassette, 1) == cassette
    assert sample_path(cassette, 2) == tmp_path / "live-high-memory.sample-2.yaml"
    assert sample_path(cassette, 12).name == "live-high-memory.sample-12.yaml"
    with pytest.raises(ValueError, match="numbered from 1"):
        sample_path(cassette, 0)


def _write(path: Path, text: str = "interactions: []\n") -> None:
    path.write_text(text, "utf-8")


def test_the_recorded_samples_are_the_cassette_and_the_files_that_follow_without_a_gap(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "memory.yaml"
    assert recorded_samples(cassette) == 0
    _write(cassette)
    assert recorded_samples(cassette) == 1
    _write(sample_path(cassette, 2))
    _write(sample_path(cassette, 4))  # after a gap: not a sample of this recording
    assert recorded_samples(cassette) == 2
    _write(sample_path(cassette, 3), "  \n")  # empty: recorded over, as vcrpy treats it
    assert recorded_samples(cassette) == 2


def test_the_surplus_of_a_smaller_recording_is_every_sample_file_above_it(tmp_path: Path) -> None:
    cassette = tmp_path / "memory.yaml"
    for sample in (1, 2, 3, 10):
        _write(sample_path(cassette, sample))
    _write(tmp_path / "memory.sample-x.yaml")  # not a sample file
    _write(tmp_path / "other.sample-5.yaml")  # another cassette's

    assert [path.name for path in surplus_samples(cassette, 2)] == [
        "memory.sample-3.yaml",
        "memory.sample-10.yaml",
    ]
    assert surplus_samples(cassette, 10) == []
