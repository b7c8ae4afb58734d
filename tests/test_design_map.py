"""docs/design.md agrees with the tree: its layout table names every package folder under
``src/pytest_diageval/`` and, per folder, exactly the modules in it; every path the page
names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "pytest_diageval"
DESIGN = ROOT / "docs" / "design.md"
ROW = re.compile(r"^\| `([^`]+)` \| .* \| (.*) \|$", re.MULTILINE)
NAME = re.compile(r"`([^`]+)`")
PATH = re.compile(r"`((?:[\w.-]+/)+[\w.*-]*)`")


def layout(text: str) -> dict[str, list[str]]:
    """The layout table: each row's folder (or file) and the names in its last column."""
    return {folder: NAME.findall(names) for folder, names in ROW.findall(text)}


def package_folders() -> set[str]:
    return {
        f"{init.parent.relative_to(PACKAGE).as_posix()}/"
        for init in PACKAGE.rglob("__init__.py")
        if init.parent != PACKAGE
    }


def map_problems(text: str) -> list[str]:
    """What the design page's layout table says that the tree does not, in words."""
    rows = layout(text)
    problems = [
        f"{f} is a package folder the layout table leaves out"
        for f in sorted(package_folders() - set(rows))
    ]
    for folder, names in rows.items():
        here = PACKAGE / folder
        if not here.exists():
            problems.append(f"{folder} is in the layout table but not in src/pytest_diageval/")
            continue
        for name in names:
            if not (here / name).is_file() and not (here / f"{name}.py").is_file():
                problems.append(f"{folder}{name} is in the layout table but not in the tree")
        if (here / "__init__.py").is_file():
            modules = {p.stem for p in here.glob("*.py")} - {"__init__"}
            for module in sorted(modules - set(names)):
                problems.append(f"{folder}{module}.py is in the tree but not in its table row")
    return problems


def path_problems(text: str) -> list[str]:
    """Paths in backticks that resolve neither in the package nor in the repository."""
    missing = []
    for path in PATH.findall(text):
        if "*" in path or path.startswith(("$", "http")):
            continue
        if not any((base / path).exists() for base in (PACKAGE, ROOT)):
            missing.append(path)
    return missing


def test_the_layout_table_is_the_tree() -> None:
    assert not map_problems(DESIGN.read_text("utf-8"))


def test_every_path_the_design_page_names_exists() -> None:
    assert not path_problems(DESIGN.read_text("utf-8"))


def test_a_missing_folder_a_stale_row_and_an_unlisted_module_are_each_named() -> None:
    text = DESIGN.read_text("utf-8")
    without_scope = "\n".join(
        line for line in text.splitlines() if not line.startswith("| `core/scope/`")
    )
    stale = text.replace("`claims`, `floor`, `session`", "`claims`, `floor`, `session`, `gone`")
    unlisted = text.replace("`claims`, `floor`, `session`", "`claims`, `floor`")
    assert map_problems(without_scope) == [
        "core/scope/ is a package folder the layout table leaves out"
    ]
    assert map_problems(stale) == ["core/scope/gone is in the layout table but not in the tree"]
    assert map_problems(unlisted) == [
        "core/scope/session.py is in the tree but not in its table row"
    ]
    assert path_problems("see `harness/scenario.py` and `core/judge/verdict.py`") == [
        "harness/scenario.py"
    ]
