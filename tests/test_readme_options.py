"""The README: its option table names every option and ini name of the plugin, and it points
at nothing outside the repository (the design is described in docs/design.md)."""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path
from typing import Any

from pytest_diageval import plugin
from pytest_diageval.agents.request_options import STAGES, StageOptions, configured_options

README = (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")
GUIDE = (Path(__file__).resolve().parents[1] / "docs" / "guide.md").read_text("utf-8")


class _Recorder:
    """Stands in for pytest's parser and option group: records what the plugin declares."""

    def __init__(self) -> None:
        self.flags: list[str] = []
        self.ini: list[str] = []

    def getgroup(self, *args: Any, **kwargs: Any) -> _Recorder:
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        self.flags.extend(names)

    def addini(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.ini.append(name)


def test_every_option_and_ini_name_is_in_the_readme_table() -> None:
    declared = _Recorder()
    plugin.pytest_addoption(declared)  # type: ignore[arg-type]
    table = [line for line in README.splitlines() if line.startswith("| ")]
    assert declared.flags
    assert declared.ini
    for flag in declared.flags:
        assert any(line.startswith(f"| `{flag}") for line in table), flag
    for name in declared.ini:
        assert any(f"| `{name}` |" in line for line in table), name


def test_the_readme_points_at_nothing_outside_the_repository() -> None:
    root = Path(__file__).resolve().parents[1]
    assert "../shared" not in README
    assert "`docs/design.md`" in README
    design = (root / "docs" / "design.md").read_text("utf-8")
    # The seeds are cited by their titles as the origin, not as files to read.
    for title in (
        "chat-verifier-agent Specification",
        "evidence-trace-hardening Specification",
        "ISS-007",
    ):
        assert title in design
    assert "shared/seeds" not in design


def test_the_reasoning_model_example_leaves_temperature_and_max_tokens_out() -> None:
    (command,) = [
        block.replace("\\\n", " ")
        for block in re.findall(r"```sh\n(.*?)```", GUIDE, re.DOTALL)
        if "your-reasoning-model" in block
    ]
    words = shlex.split(command)
    given: dict[str, list[str]] = {}
    for flag, value in itertools.pairwise(words):
        for kind in ("temperature", "max_tokens", "extra_body"):
            if flag == "--diageval-" + kind.replace("_", "-"):
                given.setdefault(kind, []).append(value)
    options = configured_options(given, {})  # type: ignore[arg-type]
    assert options.stage("executor") == StageOptions(
        None, None, {"max_completion_tokens": 8192, "reasoning_effort": "low"}
    )
    for stage in STAGES:
        assert options.stage(stage).params() == {}
