"""Every module path a docstring names exists: a dotted name (``pytest_diageval.harness.runner``,
``core.judge.verdict``) or a file path (``src/pytest_diageval/harness/runner.py``,
``core/judge/verdict.py``, ``tests/test_layers.py``), in the docstrings of ``src/``, ``tests/``,
``benchmarks/`` and ``docs/``. A module that moves takes its mentions with it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "pytest_diageval"
FOLDERS = ("src", "tests", "benchmarks", "docs")
UNITS = r"(?:core|agents|harness|cli|local)"
DOTTED = re.compile(rf"(?<![\w.])((?:pytest_diageval|{UNITS})(?:\.[A-Za-z_]\w*)+)")
PACKAGE_PATH = re.compile(rf"(?<![\w/.-])(?:src/pytest_diageval/)?({UNITS}/[\w./-]*\w/?)")
REPO_PATH = re.compile(r"(?<![\w/.-])((?:tests|benchmarks|docs)/[\w./-]*\.py)\b")
NOT_MODULES = frozenset({"pytest_diageval.checks"})
"""Dotted names that are not modules: the entry-point group of a package's checks."""


def _docstrings() -> Iterator[tuple[str, str]]:
    """``(file:line, docstring)`` of every module, class and function."""
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text("utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, kinds) and (text := ast.get_docstring(node, clean=False)):
                    line = getattr(node, "lineno", 1)
                    yield f"{path.relative_to(ROOT)}:{line}", text


@cache
def _top_level_names(path: Path) -> frozenset[str]:
    """The names a module defines, imports (``TYPE_CHECKING`` included) or lists in ``__all__``."""
    tree = ast.parse(path.read_text("utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom | ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)  # the entries of __all__ and of a lazy-import table
    return frozenset(names)


def _dotted_exists(name: str) -> bool:
    """A package, a module, or a name a module (or a package's ``__init__``) defines."""
    if name in NOT_MODULES:
        return True
    here = PACKAGE
    for part in name.removeprefix("pytest_diageval.").split("."):
        if (here / part / "__init__.py").is_file():
            here = here / part
        elif (here / f"{part}.py").is_file():
            return True  # what follows is an attribute of the module: not a path
        else:
            return part in _top_level_names(here / "__init__.py")
    return True


def _path_exists(path: str, base: Path) -> bool:
    return (base / path.rstrip("/.")).exists()


def missing_paths() -> list[str]:
    missing = []
    for where, text in _docstrings():
        named = [(m, _dotted_exists(m)) for m in DOTTED.findall(text)]
        named += [(m, _path_exists(m, PACKAGE)) for m in PACKAGE_PATH.findall(text)]
        named += [(m, _path_exists(m, ROOT)) for m in REPO_PATH.findall(text)]
        missing += [f"{where}: {name}" for name, exists in named if not exists]
    return missing


def test_every_module_path_a_docstring_names_exists() -> None:
    missing = missing_paths()
    assert not missing, "docstrings name modules that do not exist (moved?):\n" + "\n".join(missing)


@pytest.mark.parametrize(
    ("name", "exists"),
    [
        ("pytest_diageval.harness.runner", True),
        ("core.judge.verdict", True),
        ("core.judge.verdict.derive_verdict_nowhere", True),  # an attribute: not a module path
        ("pytest_diageval.CheckContext", True),
        ("core.excerpt_match", False),  # before core/ had subpackages
        ("harness.scenario", False),
    ],
)
def test_dotted_names_resolve_as_modules(name: str, exists: bool) -> None:
    assert _dotted_exists(name) is exists


def test_file_paths_resolve_in_the_package_and_the_repository() -> None:
    assert _path_exists("core/judge/verdict.py", PACKAGE)
    assert _path_exists("harness/report/", PACKAGE)
    assert not _path_exists("core/verdict.py", PACKAGE)
    assert _path_exists("tests/test_layers.py", ROOT)
    assert not _path_exists("tests/plugin/test_token_usage.py", ROOT)
