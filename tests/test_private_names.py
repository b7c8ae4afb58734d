"""Other projects' private names stay in their adapters.

pytest, vcrpy, instructor and llama-cpp-python each have one adapter module in the package
(:data:`ADAPTERS`), the only module that may use the library's private names: that module is
what to re-read when the library's bound in ``pyproject.toml`` moves (its own test says which
names). Every other module of ``src/`` is checked here, from its source:

* its imports of these libraries name only modules the library documents
  (:data:`PUBLIC_MODULES`; ``_pytest`` is none), including ``importlib.import_module("…")``;
* no attribute ``x._name`` reads a private name that the package never defines itself (a name
  the package defines is its own, whatever object carries it);
* no class overrides or adds a private name of a library class it derives from (found by
  importing the module; a module whose optional library is not installed is left out of this
  part, the other two still check it).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "pytest_diageval"

ADAPTERS = {
    "pytest": "harness/pytest_adapter.py",
    "vcr": "harness/cassettes/vcr_adapter.py",
    "instructor": "agents/instructor_adapter.py",
    "llama_cpp": "local/llama_adapter.py",
}
"""Each library's top-level module and its adapter, relative to the package."""

OTHER_ADAPTERS = {
    # pytest-xdist (a dev extra): its loadgroup scheduler, subclassed for scenario items.
    "harness/xdist/group_scheduler.py",
}
"""Modules that adapt a library outside this check's four (their private names are not
checked here)."""

PUBLIC_MODULES = {
    "pytest": frozenset({"pytest"}),
    "_pytest": frozenset(),
    "vcr": frozenset({"vcr", "vcr.request"}),  # vcr.Request is vcr.request.Request
    "instructor": frozenset({"instructor", "instructor.core"}),
    "llama_cpp": frozenset(
        {
            "llama_cpp",
            "llama_cpp.llama",
            "llama_cpp.llama_chat_format",
            "llama_cpp.llama_grammar",
            "llama_cpp.server.__main__",  # python -m llama_cpp.server
        }
    ),
}
"""The modules of each library a module outside its adapter may import."""

LIBRARIES = tuple(PUBLIC_MODULES)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _library(module: str) -> str | None:
    top = module.split(".")[0]
    return top if top in PUBLIC_MODULES else None


def _imported(tree: ast.AST) -> Iterator[tuple[int, str, str | None]]:
    """``(line, module, name or None)`` of each absolute import, and of each
    ``importlib.import_module("…")`` with a literal name."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield from ((node.lineno, node.module, alias.name) for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.lineno, node.args[0].value, None


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:  # its library is not installed (the local extra)
        return False


def import_problems(tree: ast.AST, where: str) -> list[str]:
    """Imports of a library module it does not document, or of a private name."""
    found = []
    for line, module, name in _imported(tree):
        library = _library(module)
        if library is None:
            continue
        public = PUBLIC_MODULES[library]
        if name is not None and _is_module(f"{module}.{name}"):  # from vcr import patch
            module, name = f"{module}.{name}", None
        if module not in public:
            found.append(f"{where}:{line}: imports {module}, not a public module of {library}")
        elif name is not None and _private(name):
            found.append(f"{where}:{line}: imports the private name {name} from {module}")
    return list(dict.fromkeys(found))  # one line per module, however many names it imports


def defined_names(trees: list[ast.AST]) -> set[str]:
    """Every name the package defines: functions, classes, assigned names and attributes,
    parameters and import aliases."""
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
    return names


def attribute_problems(tree: ast.AST, where: str, defined: set[str]) -> list[str]:
    """``x._name`` reads of a private name the package never defines."""
    return [
        f"{where}:{node.lineno}: reads {node.attr}, a private name of another project"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in defined
    ]


_OPTIONAL = frozenset({"llama_cpp", "numpy"})  # the local extra's, maybe not installed

_SET_BY_PYTHON = frozenset({"_abc_impl"})  # ABCMeta's, on every class derived from an ABC


def override_problems(module: object, where: str) -> list[str]:
    """Private names a class of ``module`` sets that a library class it derives from has."""
    found = []
    for _, cls in inspect.getmembers(module, inspect.isclass):
        if cls.__module__ != getattr(module, "__name__", None):
            continue
        bases = [base for base in cls.__mro__[1:] if _library(base.__module__)]
        for name in vars(cls).keys() - _SET_BY_PYTHON:
            owner = next((base for base in bases if name in vars(base)), None)
            if _private(name) and owner is not None:
                found.append(
                    f"{where}: {cls.__name__}.{name} overrides "
                    f"{owner.__module__}.{owner.__qualname__}.{name}"
                )
    return found


def _checked() -> list[Path]:
    skipped = {PACKAGE / path for path in (*ADAPTERS.values(), *OTHER_ADAPTERS)}
    return [path for path in sorted(PACKAGE.rglob("*.py")) if path not in skipped]


def _trees() -> dict[Path, ast.AST]:
    return {path: ast.parse(path.read_text("utf-8")) for path in sorted(PACKAGE.rglob("*.py"))}


def test_every_adapter_exists() -> None:
    for path in (*ADAPTERS.values(), *OTHER_ADAPTERS):
        assert (PACKAGE / path).is_file(), path


def test_only_the_adapters_import_private_or_internal_modules() -> None:
    trees = _trees()
    found = [
        problem
        for path in _checked()
        for problem in import_problems(trees[path], str(path.relative_to(PACKAGE)))
    ]
    assert found == [], "move these into the library's adapter (ADAPTERS):\n" + "\n".join(found)


def test_only_the_adapters_read_private_attributes_of_other_projects() -> None:
    trees = _trees()
    defined = defined_names(list(trees.values()))
    found = [
        problem
        for path in _checked()
        for problem in attribute_problems(trees[path], str(path.relative_to(PACKAGE)), defined)
    ]
    assert found == [], "move these into the library's adapter (ADAPTERS):\n" + "\n".join(found)


def test_only_the_adapters_override_private_names_of_library_classes() -> None:
    found = []
    for path in _checked():
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(relative.parts[:-1] if relative.name == "__init__" else relative.parts)
        if name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name not in _OPTIONAL:
                raise
            continue
        found += override_problems(module, str(path.relative_to(PACKAGE)))
    assert found == [], "move these into the library's adapter (ADAPTERS):\n" + "\n".join(found)


# The checks themselves, fed code that breaks each rule.


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("from _pytest._code.code import TerminalRepr\n", "imports _pytest._code.code"),
        ("import _pytest\n", "imports _pytest,"),
        ("from vcr.cassette import Cassette\n", "imports vcr.cassette"),
        ("from vcr import patch\n", "imports vcr.patch, not"),
        ("from vcr.request import _private\n", "the private name _private"),
        ("from instructor.v2 import Mode\n", "imports instructor.v2"),
        # (as a private name, or as a private module where the local extra is installed)
        ("from llama_cpp import _internals\n", "_internals"),
        ("import importlib\nimportlib.import_module('instructor.v2.core')\n", "instructor.v2"),
    ],
)
def test_an_internal_import_is_found(source: str, problem: str) -> None:
    found = import_problems(ast.parse(source), "m.py")
    assert len(found) == 1, found
    assert problem in found[0]


@pytest.mark.parametrize(
    "source",
    [
        "import pytest\nfrom vcr.request import Request\nfrom vcr import VCR\n",
        "from instructor.core import IncompleteOutputException\nimport llama_cpp.llama_grammar\n",
        "from llama_cpp.llama import Llama\nimport os\nfrom pydantic import BaseModel\n",
    ],
)
def test_a_public_import_passes(source: str) -> None:
    assert import_problems(ast.parse(source), "m.py") == []


def test_a_private_attribute_the_package_does_not_define_is_found() -> None:
    tree = ast.parse("def f(c):\n    c._own = 1\n    return c._loaded_count + c._own\n")
    found = attribute_problems(tree, "m.py", defined_names([tree]))
    assert found == ["m.py:3: reads _loaded_count, a private name of another project"]


def test_a_class_overriding_a_library_private_is_found() -> None:
    from vcr.cassette import Cassette

    class Faster(Cassette):  # type: ignore[misc]
        def _responses(self, request: object) -> None: ...

        def _own(self) -> None: ...

    module = type(sys)("fake")
    module.Faster = Faster  # type: ignore[attr-defined]
    Faster.__module__ = "fake"
    assert override_problems(module, "m.py") == [
        "m.py: Faster._responses overrides vcr.cassette.Cassette._responses"
    ]
