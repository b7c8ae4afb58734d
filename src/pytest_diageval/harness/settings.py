"""What a pytest run needs to know before any scenario runs, with no heavy imports.

``plugin.py`` imports this module in ``pytest_configure`` and ``pytest_collect_file`` of every
pytest run, including runs that collect no scenario, so it must not pull in openai, instructor
or vcrpy: those load only when a scenario file is actually collected.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

import pytest

__all__ = [
    "DEFAULT_TIMEOUT",
    "NEVER_COLLECTED_DIRS",
    "RECORD_MODES",
    "SETTINGS_KEY",
    "MissingEndpointError",
    "RecordMode",
    "RunSettings",
    "configured_cassette_dir",
    "is_scenario_file",
]

RecordMode = Literal["none", "once", "new_episodes", "all", "rewrite"]
RECORD_MODES: tuple[RecordMode, ...] = get_args(RecordMode)
NEVER_COLLECTED_DIRS = frozenset({"worlds", "cassettes"})
DEFAULT_TIMEOUT = 60.0
"""Seconds per model request; a small local model may need far more (``--diageval-timeout``)."""


@dataclass(frozen=True)
class RunSettings:
    """What the command line and environment say about the model endpoint and cassettes."""

    record_mode: RecordMode = "none"
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def from_env(
        cls,
        record_mode: RecordMode,
        base_url: str | None,
        model: str | None,
        timeout: float | None = None,
    ) -> RunSettings:
        return cls(
            record_mode=record_mode,
            base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
            model=model or os.environ.get("DIAGEVAL_MODEL"),
            api_key=os.environ.get("OPENAI_API_KEY") or None,
            timeout=timeout or float(os.environ.get("DIAGEVAL_TIMEOUT") or DEFAULT_TIMEOUT),
        )

    def require_endpoint(self, cassette: Path) -> tuple[str, str]:
        """The base URL and model to record ``cassette`` with; :class:`MissingEndpointError`
        names the options and variables to set when either is missing.

        Recording with a made-up endpoint would only fail later, far from the cause (and a
        made-up model name would be written into the cassette).
        """
        if self.base_url and self.model:
            return self.base_url, self.model
        needed = (
            ("endpoint", self.base_url, "give --diageval-base-url or set OPENAI_BASE_URL"),
            ("model", self.model, "give --diageval-model or set DIAGEVAL_MODEL"),
        )
        missing = [(name, hint) for name, value, hint in needed if not value]
        names = " and no ".join(name for name, _ in missing)
        verb = "is" if len(missing) == 1 else "are"
        raise MissingEndpointError(
            f"--diageval-record={self.record_mode} would record {cassette}, but no {names} "
            f"{verb} set: {'; '.join(hint for _, hint in missing)}"
        )


class MissingEndpointError(Exception):
    """A cassette would be recorded, but the endpoint or model to record from is not set."""


SETTINGS_KEY = pytest.StashKey[RunSettings]()


def is_scenario_file(
    path: Path, cassette_dir: Path | None = None, roots: Sequence[Path] = ()
) -> bool:
    """Every ``*.yaml`` / ``*.yml`` except those under a ``worlds`` or ``cassettes`` folder
    or under the configured ``diageval_cassette_dir``.

    Only folders below the first of ``roots`` (rootdir, invocation dir) that holds the file
    count: a project that lives in some ``~/worlds/`` is still collected.
    """
    if path.suffix not in {".yaml", ".yml"}:
        return False
    if NEVER_COLLECTED_DIRS.intersection(_parts_below(path, roots)[:-1]):
        return False
    return cassette_dir is None or not path.is_relative_to(cassette_dir)


def _parts_below(path: Path, roots: Sequence[Path]) -> tuple[str, ...]:
    for root in roots:
        if path.is_relative_to(root):
            return path.relative_to(root).parts
    return path.parts


def configured_cassette_dir(config: pytest.Config) -> Path | None:
    configured = str(config.getini("diageval_cassette_dir") or "")
    return Path(config.rootpath, configured) if configured else None
