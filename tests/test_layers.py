"""The house's map, enforced: which part of the package may import which.

A *unit* is a subpackage (``core.judge``, ``harness.cassettes``, ``agents`` …) or a module at
the root of ``harness`` or of the package (``harness.runner``, ``plugin``). ``ALLOWED`` is the
one table of imports between units; any other import of this package fails, and so does the
table itself if it ever holds a cycle. Across units, only the modules a subpackage names in
its ``__init__``'s ``__all__`` may be imported. Run ``pytest tests/test_layers.py`` to check;
``python tests/test_layers.py`` prints the imports between units as they are.
"""

from __future__ import annotations

import ast
import graphlib
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "pytest_diageval"

CORE = frozenset(
    {"core.contract", "core.evidence", "core.text", "core.scope", "core.judge", "core.answer"}
)
BELOW_HARNESS = CORE | {"agents", "agents.scripted", "agents.reference"}

ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset(),  # the folders' own __init__: a docstring and nothing else
    "harness": frozenset(),
    "core.contract": frozenset(),
    "core.evidence": frozenset({"core.contract"}),
    "core.text": frozenset(),
    "core.scope": frozenset({"core.contract", "core.text"}),
    "core.judge": frozenset({"core.contract", "core.evidence", "core.text", "core.scope"}),
    "core.answer": frozenset(
        {"core.contract", "core.evidence", "core.text", "core.scope", "core.judge"}
    ),
    "agents": CORE,
    "agents.scripted": CORE | {"agents"},
    "agents.reference": CORE | {"agents", "agents.scripted"},
    "local": frozenset({"core.contract"}),  # the free-text bounds (core.contract.text_bounds)
    # Only agents.request_options, which imports nothing but the standard library.
    "harness.settings": frozenset({"agents", "harness.outputs"}),
    "harness.outputs": frozenset(),  # the standard library only: how every output is written
    "harness.lean_nodes": frozenset(),
    "harness.pytest_adapter": frozenset(),  # pytest's private names, and nothing of this package
    "harness.outside_dirs": frozenset({"harness.settings"}),
    "harness.xdist": frozenset({"harness.settings"}),
    "harness.cassettes": BELOW_HARNESS | {"harness.settings", "harness.outputs"},
    "harness.format": BELOW_HARNESS
    | {"harness.settings", "harness.cassettes", "harness.pytest_adapter"},
    "harness.checks": BELOW_HARNESS | {"harness.format", "harness.pytest_adapter"},
    "harness.runner": BELOW_HARNESS | {"harness.settings", "harness.cassettes", "harness.format"},
    "harness.report": BELOW_HARNESS
    | {
        "harness.cassettes",
        "harness.format",
        "harness.checks",
        "harness.runner",
        "harness.outputs",
    },
    "harness.items": BELOW_HARNESS
    | {
        "harness.pytest_adapter",
        "harness.settings",
        "harness.lean_nodes",
        "harness.cassettes",
        "harness.format",
        "harness.checks",
        "harness.runner",
        "harness.report",
    },
    "harness.collect": BELOW_HARNESS
    | {
        "harness.pytest_adapter",
        "harness.settings",
        "harness.lean_nodes",
        "harness.format",
        "harness.checks",
        "harness.items",
    },
    "harness.fixture": BELOW_HARNESS
    | {"harness.settings", "harness.format", "harness.checks", "harness.runner"},
    "harness.stale": frozenset({"harness.cassettes", "harness.items"}),
    # The registry's and the column's types, for mypy alone.
    "harness.hookspecs": frozenset({"harness.format", "harness.report"}),
    "harness.mutation": BELOW_HARNESS
    | {
        "harness.pytest_adapter",
        "harness.settings",
        "harness.cassettes",
        "harness.format",
        "harness.checks",
        "harness.runner",
        "harness.report",
        "harness.items",
        "harness.collect",
        "harness.outputs",
    },
    "cli": BELOW_HARNESS
    | {"harness.settings", "harness.cassettes", "harness.format", "harness.runner", "local"},
    "plugin": frozenset(
        {
            "harness.hookspecs",
            "harness.checks",
            "harness.settings",
            "harness.outside_dirs",
            "harness.xdist",
            "harness.cassettes",
            "harness.format",
            "harness.report",
            "harness.items",
            "harness.collect",
            "harness.fixture",
            "harness.stale",
            "harness.mutation",
        }
    ),
}

# Third-party imports a unit must never make: the core runs with no model and no pytest, the
# agents without pytest or vcrpy.
_NO_MODEL_NO_PYTEST = ("openai", "instructor", "httpx2", "vcr", "pytest", "_pytest")
FORBIDDEN_OUTSIDE: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(CORE, _NO_MODEL_NO_PYTEST),
    "agents": ("vcr", "pytest", "_pytest"),
    "agents.scripted": ("vcr", "pytest", "_pytest"),
    "agents.reference": ("vcr", "pytest", "_pytest"),
}


def unit_of(module: str, package: Path = PACKAGE) -> str:
    """A module's unit: its subpackage (``pytest_diageval.core.judge.verdict`` -> ``core.judge``),
    except that a module at the root of the package or of ``harness`` is a unit of its own."""
    parts = module.split(".")[1:]
    if not parts:
        return ""
    folder = parts if (package.joinpath(*parts) / "__init__.py").is_file() else parts[:-1]
    if folder in ([], ["harness"]):
        return ".".join(parts)
    return ".".join(folder)


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, package: Path = PACKAGE) -> Iterator[str]:
    """Every module ``path`` imports, by full name; ``from pkg import mod`` names ``pkg.mod``."""
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                yield submodule if _is_module(submodule, package) else node.module


def _is_module(name: str, package: Path) -> bool:
    if not name.startswith(package.name + "."):
        return False
    path = package.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def public_modules(unit: str, package: Path = PACKAGE) -> frozenset[str] | None:
    """The names in a subpackage's ``__all__``; ``None`` for a root module (all of it public)."""
    init = package.joinpath(*unit.split("."), "__init__.py")
    if not init.is_file():
        return None
    for node in ast.parse(init.read_text("utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            value = node.value
            assert value is not None, f"{init}: __all__ has no value"
            return frozenset(ast.literal_eval(value))
    raise AssertionError(f"{init.relative_to(package.parent)} names no __all__")


def violations(
    package: Path = PACKAGE, allowed: Mapping[str, frozenset[str]] = ALLOWED
) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        here = module_name(path, package)
        unit = unit_of(here, package)
        if not unit:
            continue
        where = path.relative_to(package)
        if unit not in allowed:
            found.append(f"{where}: unit {unit!r} is not in the table")
            continue
        for name in sorted(set(imports_of(path, package))):
            bad = FORBIDDEN_OUTSIDE.get(unit, ())
            if any(name == b or name.startswith(b + ".") for b in bad):
                found.append(f"{where} imports {name}")
            if not name.startswith(package.name + ".") or unit_of(name, package) == unit:
                continue
            target = unit_of(name, package)
            if target not in allowed[unit]:
                found.append(f"{where} imports {name}: {unit} may not import {target}")
                continue
            public = public_modules(target, package)
            module = name.split(".")[len(target.split(".")) + 1 : len(target.split(".")) + 2]
            if public is not None and module and module[0] not in public:
                found.append(f"{where} imports {name}: {module[0]} is not in {target}.__all__")
    return found


def test_every_import_between_units_is_in_the_table() -> None:
    assert list((PACKAGE / "core" / "judge").glob("*.py")), "no modules found under core/judge"
    assert violations() == []


def test_the_table_has_no_cycle() -> None:
    graphlib.TopologicalSorter(ALLOWED).prepare()  # raises CycleError on a cycle


def test_every_unit_in_the_table_exists() -> None:
    for unit in ALLOWED:
        path = PACKAGE.joinpath(*unit.split("."))
        assert path.is_dir() or path.with_suffix(".py").is_file(), unit


def test_every_subpackage_opens_with_what_it_holds() -> None:
    for init in sorted(PACKAGE.rglob("__init__.py")):
        if init.parent == PACKAGE:
            continue
        docstring = ast.get_docstring(ast.parse(init.read_text("utf-8")))
        assert docstring, f"{init.relative_to(PACKAGE)} has no docstring"
        assert "import" in docstring, f"{init.relative_to(PACKAGE)} does not say what it imports"
        public_modules(module_name(init)[len("pytest_diageval.") :])  # has an __all__


# The check itself, fed modules that break each rule.


def _package(tmp_path: Path, files: Mapping[str, str]) -> Path:
    package = tmp_path / "pytest_diageval"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


_PUBLIC = '"""Doc; imports nothing."""\n__all__ = ["verdict"]\n'


# Each case: the files of a small package (besides core/__init__.py and a public core.judge
# with verdict.py) and the violations the check must report.
_BROKEN_PACKAGES = {
    "an import that runs back up": (
        {
            "core/contract/__init__.py": '__all__ = ["contracts"]\n',
            "core/contract/contracts.py": "from pytest_diageval.core.judge import verdict\n",
        },
        [
            "core/contract/contracts.py imports pytest_diageval.core.judge.verdict: "
            "core.contract may not import core.judge"
        ],
    ),
    "a private module imported": (
        {
            "core/judge/excerpt_match.py": "",
            "core/answer/__init__.py": '__all__ = ["composer"]\n',
            "core/answer/composer.py": "from pytest_diageval.core.judge.excerpt_match import x\n",
        },
        [
            "core/answer/composer.py imports pytest_diageval.core.judge.excerpt_match: "
            "excerpt_match is not in core.judge.__all__"
        ],
    ),
    "a forbidden library and an unknown unit": (
        {"core/judge/verdict.py": "import openai\n", "widgets.py": ""},
        ["core/judge/verdict.py imports openai", "widgets.py: unit 'widgets' is not in the table"],
    ),
}


@pytest.mark.parametrize("case", sorted(_BROKEN_PACKAGES))
def test_the_check_sees(case: str, tmp_path: Path) -> None:
    files, expected = _BROKEN_PACKAGES[case]
    base = {"core/__init__.py": "", "core/judge/__init__.py": _PUBLIC, "core/judge/verdict.py": ""}
    assert violations(_package(tmp_path, {**base, **files})) == expected


def test_the_table_check_sees_a_cycle() -> None:
    with pytest.raises(graphlib.CycleError):
        graphlib.TopologicalSorter(
            {**ALLOWED, "core.contract": frozenset({"core.answer"})}
        ).prepare()


if __name__ == "__main__":
    edges: dict[str, set[str]] = {}
    for source in sorted(PACKAGE.rglob("*.py")):
        unit = unit_of(module_name(source))
        for imported in imports_of(source):
            target = unit_of(imported) if imported.startswith("pytest_diageval.") else ""
            if unit and target and target != unit:
                edges.setdefault(unit, set()).add(target)
    for unit in graphlib.TopologicalSorter(edges).static_order():
        print(f"{unit:20} -> {', '.join(sorted(edges.get(unit, ()))) or '(nothing of ours)'}")
    sys.exit(len(violations()))
