"""Scenario tags as pytest markers, listed with their scenario count in ``pytest --markers``.

During collection each tag is registered once, when its first scenario is collected (so
``--strict-markers`` accepts it). ``pytest --markers`` collects nothing, so there the scenario
files under the command's paths are read for their tags only: no validation, no world, no
model; folders pytest would not recurse into (``norecursedirs``, hidden ones) are skipped.
"""

from __future__ import annotations

import fnmatch
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
import yaml

from pytest_diageval.core.evidence.yaml_limits import read_limited, safe_load_limited
from pytest_diageval.harness.settings import configured_cassette_dir, is_scenario_file

__all__ = ["register_tag", "register_tag_markers", "scenario_tag_counts"]

_REGISTERED = pytest.StashKey[set[str]]()


def register_tag(config: pytest.Config, tag: str) -> None:
    """Register one scenario tag as a marker (once per run)."""
    registered = config.stash.setdefault(_REGISTERED, set())
    if tag not in registered:
        registered.add(tag)
        config.addinivalue_line("markers", f"{tag}: scenario tag")


def register_tag_markers(config: pytest.Config) -> None:
    """For ``pytest --markers``: every tag of the scenarios under the command's paths."""
    roots = (config.rootpath, config.invocation_params.dir)
    cassette_dir = configured_cassette_dir(config)
    files = (path for path in _files(config) if is_scenario_file(path, cassette_dir, roots))
    counts = scenario_tag_counts(files)
    registered = config.stash.setdefault(_REGISTERED, set())
    for tag, count in sorted(counts.items()):
        registered.add(tag)
        plural = "" if count == 1 else "s"
        config.addinivalue_line("markers", f"{tag}: scenario tag ({count} scenario{plural})")


def scenario_tag_counts(files: Iterable[Path]) -> Counter[str]:
    """How many scenario files carry each tag (files that are no scenario are skipped)."""
    counts: Counter[str] = Counter()
    for path in files:
        try:
            data = safe_load_limited(read_limited(path))  # within the limits, as collected
        except (OSError, ValueError, yaml.YAMLError):  # YamlLimitError is a ValueError
            continue  # collection reports it; --markers lists what it can read
        if not isinstance(data, dict) or "expect" not in data:
            continue
        tags = data.get("tags")
        if isinstance(tags, list):
            counts.update({tag for tag in tags if isinstance(tag, str)})
    return counts


def _files(config: pytest.Config) -> Iterator[Path]:
    skip = [str(pattern) for pattern in config.getini("norecursedirs")]
    for arg in config.args or ["."]:
        start = Path(config.invocation_params.dir, str(arg).split("::", 1)[0])
        if start.is_file():
            yield start
            continue
        for folder, dirs, names in os.walk(start):
            dirs[:] = sorted(
                d
                for d in dirs
                if not d.startswith(".") and not any(fnmatch.fnmatch(d, p) for p in skip)
            )
            yield from (Path(folder, name) for name in sorted(names))
