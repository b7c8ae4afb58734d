"""Checks shared by the tests of the adapter modules, the one module per library that may use
the library's private names (``harness/pytest_adapter.py``, ``harness/cassettes/vcr_adapter.py``,
``agents/instructor_adapter.py``, ``local/llama_adapter.py``).

Each adapter declares ``CHECKED_VERSIONS`` (the releases it was read against) and
``RELIED_ON`` (``(module or class, name)`` of every name it uses beyond the library's
documented API). The checks fail, naming what to re-read, when another release is installed,
when ``pyproject.toml`` bounds the library differently, when a relied-on name is gone, or when
the adapter uses a private name its ``RELIED_ON`` does not list.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import inspect
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

__all__ = [
    "REPO",
    "bounded_requirement",
    "missing_names",
    "private_names_used",
    "resolve",
    "unlisted_private_names",
    "version_problem",
]

REPO = Path(__file__).resolve().parents[2]


def _where(adapter: ModuleType) -> str:
    return Path(adapter.__file__ or "").relative_to(REPO / "src").as_posix()


def version_problem(adapter: ModuleType, distribution: str) -> str | None:
    """Why the installed ``distribution`` is not one ``adapter`` was checked against (or None)."""
    installed = Version(importlib.metadata.version(distribution))
    checked = SpecifierSet(adapter.CHECKED_VERSIONS)
    if checked.contains(installed, prereleases=True):
        return None
    names = ", ".join(f"{owner}.{name}" for owner, name in adapter.RELIED_ON)
    return (
        f"{distribution} {installed} is installed, but {_where(adapter)} was checked against"
        f" {distribution}{checked} only. Re-read these names in {distribution} {installed}'s"
        f" source (the adapter's RELIED_ON): {names}; fix the adapter where they changed, then"
        " widen CHECKED_VERSIONS and the bound in pyproject.toml together."
    )


def bounded_requirement(distribution: str) -> Requirement:
    """``distribution``'s requirement in ``pyproject.toml`` (dependencies or an extra)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
    lines = [*project["dependencies"]]
    for extra in project.get("optional-dependencies", {}).values():
        lines += extra
    found = [Requirement(line) for line in lines if Requirement(line).name == distribution]
    assert len(found) == 1, f"pyproject.toml names {distribution} {len(found)} times"
    return found[0]


def resolve(owner: str) -> Any:
    """The module or class a dotted ``owner`` names (``vcr.cassette.Cassette``)."""
    parts = owner.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            found = getattr(found, part)
        return found
    raise ImportError(owner)


def _has(owner: Any, name: str) -> bool:
    """Whether ``owner`` has ``name``: as an attribute, or (a class) as a declared field or
    one its methods assign to ``self`` (instance attributes exist only on instances)."""
    if hasattr(owner, name):
        return True
    if not inspect.isclass(owner):
        return False
    for cls in owner.__mro__:
        if name in vars(cls).get("__annotations__", {}):
            return True
        try:
            source = inspect.getsource(cls)
        except (OSError, TypeError):
            continue
        if f"self.{name} =" in source or f"self.{name}:" in source:
            return True
    return False


def missing_names(adapter: ModuleType) -> list[str]:
    """The ``RELIED_ON`` names the installed library no longer has."""
    missing = []
    for owner, name in adapter.RELIED_ON:
        try:
            found = resolve(owner)
        except (ImportError, AttributeError):
            missing.append(f"{owner} (itself)")
            continue
        if not _has(found, name):
            missing.append(f"{owner}.{name}")
    return missing


def private_names_used(adapter: ModuleType) -> set[str]:
    """Every private name ``adapter`` takes from its library: ``x._name`` attributes that are
    not its own module-level functions, private methods of its classes (overrides), and
    private names or modules in its imports."""
    tree = ast.parse(Path(adapter.__file__ or "").read_text("utf-8"))
    own = {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    # A private method of a class here overrides (or adds to) the library's class.
    used = {
        method.name
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        for method in node.body
        if isinstance(method, ast.FunctionDef) and _private(method.name)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in own:
            used.add(node.attr)
        elif isinstance(node, ast.ImportFrom) and node.module:
            used |= {part for part in node.module.split(".") if _private(part)}
            used |= {alias.name for alias in node.names if _private(alias.name)}
        elif isinstance(node, ast.Import):
            for alias in node.names:
                used |= {part for part in alias.name.split(".") if _private(part)}
    return used


def unlisted_private_names(adapter: ModuleType) -> set[str]:
    """Private names the adapter uses that its ``RELIED_ON`` does not list."""
    listed = {name for _, name in adapter.RELIED_ON}
    listed |= {part for owner, _ in adapter.RELIED_ON for part in owner.split(".")}
    return private_names_used(adapter) - listed


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")
