"""scenarios/README.md's table of the recorded live suite is what ``docs/live_scope.py
--rounds`` prints from the cassettes today, the reference agent's yardstick included."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]


def test_the_live_table_is_the_scripts_output(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(REPOSITORY / "docs"))
    try:
        live_scope = importlib.import_module("live_scope")
        assert live_scope.main(["--rounds"]) == 0
    finally:
        sys.modules.pop("live_scope", None)
    printed = capsys.readouterr().out.strip()
    readme = (REPOSITORY / "scenarios" / "README.md").read_text("utf-8")
    assert printed.splitlines()[0].endswith(
        "| against the reference agent (its items cited / fetched) |"
    )
    assert printed in readme
