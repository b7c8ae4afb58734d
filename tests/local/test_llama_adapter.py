"""llama-cpp-python's internals stay in ``local/llama_adapter.py``, checked against the release
the ``local`` extra pins: another release fails here first, naming what to re-read, instead of
a local recording that samples differently. The adapter's lists are read from its source, so
the bound and the list are checked without the extra too."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet
from tests.support.adapters import (
    REPO,
    bounded_requirement,
    missing_names,
    unlisted_private_names,
    version_problem,
)

ADAPTER = REPO / "src" / "pytest_diageval" / "local" / "llama_adapter.py"


def _declared(path: Path) -> Any:
    """The adapter's ``CHECKED_VERSIONS`` and ``RELIED_ON``, read without importing it."""
    values = {}
    for node in ast.parse(path.read_text("utf-8")).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(target, ast.Name) and target.id in ("CHECKED_VERSIONS", "RELIED_ON"):
            values[target.id] = ast.literal_eval(node.value)  # type: ignore[attr-defined]
    return SimpleNamespace(__file__=str(path), **values)


def test_the_local_extra_pins_the_checked_release() -> None:
    checked = SpecifierSet(_declared(ADAPTER).CHECKED_VERSIONS)
    assert bounded_requirement("llama-cpp-python").specifier == checked
    assert checked.contains("0.3.36")
    assert not checked.contains("0.3.37")


def test_the_adapter_lists_every_private_name_it_uses() -> None:
    assert unlisted_private_names(_declared(ADAPTER)) == set()  # type: ignore[arg-type]


def test_the_installed_release_is_the_checked_one_and_has_every_name() -> None:
    pytest.importorskip("llama_cpp", reason="the 'local' extra is not installed")
    from pytest_diageval.local import llama_adapter

    problem = version_problem(llama_adapter, "llama-cpp-python")
    assert problem is None, problem
    assert missing_names(llama_adapter) == [], (
        "llama-cpp-python no longer has these names local/llama_adapter.py uses; adapt it"
    )
