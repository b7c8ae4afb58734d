"""The README's option table names every command-line option and ini name of the plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_diageval import plugin

README = (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")


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
