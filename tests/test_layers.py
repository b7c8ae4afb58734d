"""Each layer imports only the layers below it: core < agents < plugin (harness, plugin.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "pytest_diageval"

FORBIDDEN = {
    "core": (
        "pytest_diageval.agents",
        "pytest_diageval.harness",
        "pytest_diageval.plugin",
        "pytest_diageval.cli",
        "openai",
        "instructor",
        "httpx2",
        "vcr",
        "pytest",
        "_pytest",
    ),
    "agents": (
        "pytest_diageval.harness",
        "pytest_diageval.plugin",
        "pytest_diageval.cli",
        "vcr",
        "pytest",
        "_pytest",
    ),
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def violations(layer: str) -> list[str]:
    found = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for name in sorted(imported_modules(path)):
            if any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN[layer]):
                found.append(f"{path.relative_to(PACKAGE)} imports {name}")
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_only_layers_below(layer: str) -> None:
    assert list((PACKAGE / layer).rglob("*.py")), f"no modules found under {layer}/"
    assert violations(layer) == []


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text("import openai\nfrom pytest_diageval.agents.llm import LLM\n")
    assert imported_modules(module) == {"openai", "pytest_diageval.agents.llm"}
