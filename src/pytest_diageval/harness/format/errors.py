"""Pydantic errors of a scenario, mapped onto YAML node positions and said in plain words.

Private helper of :mod:`pytest_diageval.harness.format.loader`. A pydantic error location such as
``('expect', 'verdict', "literal['PASS','LOW_CONFID','REJECT']")`` is walked along the YAML
node tree: field names and list indices move down the tree, anything else is a union branch
tag. Of a union's branches only the one that fits the YAML node (a scalar, a list or a
mapping) is reported; when none fits, one message lists what the value may be.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic_core import ErrorDetails

from pytest_diageval.agents.scripted.content import nested_model
from pytest_diageval.core.contract.contracts import EVIDENCE_TOOLS
from pytest_diageval.harness.format.scenario import EXPECT_KEYS, Expect, Scenario

__all__ = [
    "ScenarioProblem",
    "describe_value",
    "duplicate_keys",
    "format_path",
    "key_position",
    "line_column",
    "matches",
    "problems",
]

Loc = Sequence[int | str]


@dataclass(frozen=True)
class ScenarioProblem:
    """One problem at one place (1-based line and column; None when unknown)."""

    line: int | None
    column: int | None
    field_path: str
    message: str

    def format(self, path: str | Path) -> str:
        where = str(path)
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        field = f" {self.field_path}:" if self.field_path else ""
        return f"{where}:{field} {self.message}"


# --------------------------------------------------------------------------- small helpers


def line_column(mark: yaml.Mark) -> tuple[int, int]:
    return mark.line + 1, mark.column + 1


def matches(pattern: str, text: str) -> bool:
    return re.match(pattern, text) is not None


def describe_value(value: Any) -> str:
    """How a YAML value reads in a message: ``a list``, ``'PAS'``, ``5 (a number)``."""
    if value is None:
        return "an empty value"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, int | float):
        return f"{value} (a number)"
    return repr(value)


def format_path(parts: Loc) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _model_at(parts: Loc, expect: type[BaseModel] = Expect) -> type[BaseModel]:
    """The model whose keys live at ``parts`` (list indices are skipped); ``expect`` is the
    registry's Expect (with the registered keys)."""
    model: type[BaseModel] = Scenario
    for part in parts:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        nested = nested_model(field.annotation) if field is not None else None
        model = expect if nested is Expect else (nested or model)
    return model


def _field_names(model: type[BaseModel], seen: set[type[BaseModel]]) -> set[str]:
    seen.add(model)
    names = set(model.model_fields)
    for field in model.model_fields.values():
        nested = nested_model(field.annotation)
        if nested is not None and nested not in seen:
            names |= _field_names(nested, seen)
    return names


_FIELD_NAMES = frozenset(_field_names(Scenario, set()))


# --------------------------------------------------------------------------- node tree


def _child(node: yaml.Node | None, part: int | str) -> tuple[yaml.Node, yaml.Node] | None:
    """``(node that marks the position, value node)`` one step down, or None."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                return key, value
    if (
        isinstance(node, yaml.SequenceNode)
        and isinstance(part, int)
        and 0 <= part < len(node.value)
    ):
        item = node.value[part]
        return item, item
    return None


def key_position(root: yaml.Node, loc: Loc) -> tuple[int, int]:
    """Line and column of the deepest key of ``loc`` found (the document start if none)."""
    node: yaml.Node | None = root
    mark = root.start_mark
    for part in loc:
        child = _child(node, part)
        if child is None:
            break
        mark, node = child[0].start_mark, child[1]
    return line_column(mark)


def duplicate_keys(root: yaml.Node) -> list[ScenarioProblem]:
    """Keys given twice in one mapping: YAML would silently keep only the last one."""
    found: list[ScenarioProblem] = []
    visited: set[int] = set()

    def walk(node: yaml.Node, parts: list[int | str]) -> None:
        if id(node) in visited:  # aliases can share (or even nest) nodes
            return
        visited.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                walk(item, [*parts, index])
        if not isinstance(node, yaml.MappingNode):
            return
        first_line: dict[str, int] = {}
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else None
            if name in first_line and name != "<<":
                line, column = line_column(key.start_mark)
                message = (
                    f"duplicate key (first given on line {first_line[name]});"
                    " YAML would silently keep only the last one"
                )
                found.append(ScenarioProblem(line, column, format_path([*parts, name]), message))
            elif name is not None:
                first_line[name] = key.start_mark.line + 1
            walk(value, [*parts, name] if name is not None else parts)

    walk(root, [])
    return found


# --------------------------------------------------------------------------- errors


@dataclass
class _Located:
    error: ErrorDetails
    parts: list[int | str]
    mark: yaml.Mark
    branch: str | None = None
    site: tuple[int | str, ...] = ()
    site_mark: yaml.Mark | None = None
    site_node: yaml.Node | None = None


def _locate(root: yaml.Node, error: ErrorDetails, names: frozenset[str]) -> _Located:
    loc = error["loc"]
    located = _Located(error, [], root.start_mark)
    node: yaml.Node | None = root
    for index, part in enumerate(loc):
        unknown_key = index == len(loc) - 1 and error["type"] == "extra_forbidden"
        if isinstance(part, str) and part not in names and not unknown_key:
            if located.branch is None:
                located.branch, located.site = part, tuple(located.parts)
                located.site_mark, located.site_node = located.mark, node
            continue
        located.parts.append(part)
        child = _child(node, part)
        if child is None:  # a missing key: the position stays on its parent
            node = None
            continue
        located.mark, node = child[0].start_mark, child[1]
    return located


def problems(
    root: yaml.Node, errors: Sequence[ErrorDetails], expect: type[BaseModel] = Expect
) -> list[ScenarioProblem]:
    """One problem per real mistake, in file order (``expect``: the registry's Expect)."""
    names = _FIELD_NAMES if expect is Expect else _FIELD_NAMES | _field_names(expect, set())
    located = [_locate(root, error, names) for error in errors]
    # A misspelt key is reported once, as unknown with its suggestion, not also as missing.
    suggested = {
        (*item.parts[:-1], guess)
        for item in located
        if item.error["type"] == "extra_forbidden" and (guess := _suggestion(item.parts, expect))
    }
    found: list[ScenarioProblem] = []
    unions: dict[tuple[int | str, ...], list[_Located]] = {}
    for item in located:
        if item.error["type"] == "missing" and tuple(item.parts) in suggested:
            continue
        if item.branch is None:
            found.append(_problem(item, expect))
        else:
            unions.setdefault(item.site, []).append(item)
    for members in unions.values():
        found.extend(_union_problems(members, expect))
    unique = dict.fromkeys(found)
    return sorted(unique, key=lambda p: (p.line or 0, p.column or 0, p.field_path))


def _branch_fits(branch: str, node: yaml.Node | None) -> bool:
    if isinstance(node, yaml.SequenceNode):
        return branch.startswith("list[")
    if isinstance(node, yaml.MappingNode):
        return branch.startswith("dict[") or branch[:1].isupper()
    return not branch.startswith(("list[", "dict[")) and not branch[:1].isupper()


def _branch_kind(branch: str) -> str:
    if branch.startswith("literal["):
        values = [v.strip().strip("'\"") for v in branch[len("literal[") : -1].split(",")]
        return f"one of {', '.join(values)}"
    if branch.startswith("list["):
        return "a list"
    if branch.startswith("dict[") or branch[:1].isupper():
        return "a mapping"
    return "a string" if "str" in branch else branch


def _union_problems(members: list[_Located], expect: type[BaseModel]) -> list[ScenarioProblem]:
    first = members[0]
    fitting = [m for m in members if m.branch and _branch_fits(m.branch, first.site_node)]
    # A type error at the union itself means the value is of no allowed kind at all.
    real = [
        m for m in fitting if not (m.error["type"].endswith("_type") and not m.parts[len(m.site) :])
    ]
    if real:
        return [_problem(m, expect) for m in real]
    kinds = list(dict.fromkeys(_branch_kind(m.branch or "") for m in members))
    line, column = line_column(first.site_mark or first.mark)
    message = f"must be {' or '.join(kinds)}; got {describe_value(first.error['input'])}"
    return [ScenarioProblem(line, column, format_path(first.site), message)]


def _problem(located: _Located, expect: type[BaseModel]) -> ScenarioProblem:
    line, column = line_column(located.mark)
    return ScenarioProblem(line, column, format_path(located.parts), _message(located, expect))


_MISSING_HINTS = {
    "expect": f"list at least one expectation ({', '.join(EXPECT_KEYS)}); each is one test item",
    "world": "a packaged world name (default), a YAML path relative to this file, or a mapping",
    "query": "the user's diagnosis question",
    "title": "one line saying what the scenario proves",
    "tool": f"one of {', '.join(EVIDENCE_TOOLS)}",
    "stage": "one of planner, executor, verifier, grader",
}
_PATTERN_HINTS = {
    "id": "use letters, digits, '.', '_' and '-', starting with a letter or digit",
    "tags": "a tag is an identifier (letters, digits, '_'; not starting with a digit),"
    " so that it can be a pytest marker",
}
_TYPE_WORDS = {
    "list_type": "a list",
    "string_type": "a string",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
}


def _message(located: _Located, expect: type[BaseModel]) -> str:
    error, parts = located.error, located.parts
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    last = next((p for p in reversed(parts) if isinstance(p, str)), "")
    if kind == "extra_forbidden":
        return _unknown_key(parts, expect)
    if kind == "missing":
        hint = _MISSING_HINTS.get(str(parts[-1]) if parts else "")
        return "required key is missing" + (f": {hint}" if hint else "")
    if kind == "literal_error":
        allowed = str(ctx.get("expected", "")).replace(" or ", ", ").replace("'", "")
        return f"{describe_value(value)} is not one of {allowed}"
    if kind in {"model_type", "dict_type", "model_attributes_type"}:
        keys = ", ".join(_model_at(parts, expect).model_fields)
        return f"must be a mapping (keys: {keys}); got {describe_value(value)}"
    if kind in _TYPE_WORDS:
        return f"must be {_TYPE_WORDS[kind]}; got {describe_value(value)}"
    if kind in {"too_short", "string_too_short"}:
        minimum = ctx.get("min_length", 1)
        return "must not be empty" if minimum == 1 else f"needs at least {minimum} items"
    if kind == "string_pattern_mismatch":
        hint = _PATTERN_HINTS.get(last, "must not be blank")
        return f"{describe_value(value)} is not allowed: {hint}"
    if kind in {"greater_than_equal", "less_than_equal"}:
        bound = ">=" if kind == "greater_than_equal" else "<="
        limit = ctx.get("ge", ctx.get("le"))
        return f"must be {bound} {limit}; got {describe_value(value)}"
    if kind == "invalid_key":
        return f"keys must be strings; got {describe_value(value)}"
    text = str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return (
        text
        if kind in {"value_error", "assertion_error"}
        else f"{text}; got {describe_value(value)}"
    )


def _suggestion(parts: list[int | str], expect: type[BaseModel]) -> str | None:
    """The allowed key closest to the unknown key at the end of ``parts`` (difflib)."""
    allowed = list(_model_at(parts[:-1], expect).model_fields)
    close = difflib.get_close_matches(str(parts[-1]), allowed, n=1, cutoff=0.6)
    return close[0] if close else None


def _unknown_key(parts: list[int | str], expect: type[BaseModel]) -> str:
    guess = _suggestion(parts, expect)
    hint = f"; did you mean {guess!r}?" if guess else ""
    allowed = ", ".join(_model_at(parts[:-1], expect).model_fields)
    return f"unknown key{hint} (allowed keys: {allowed})"
