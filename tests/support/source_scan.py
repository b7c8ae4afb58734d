"""The string constants a module's code writes (docstrings left out), for tests that hold a
name to one table."""

from __future__ import annotations

import ast
from pathlib import Path


def string_constants(path: Path) -> list[tuple[int, str]]:
    """``(line, value)`` of every string constant in ``path`` that is not a docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]
