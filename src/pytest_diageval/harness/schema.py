"""The JSON Schema of scenario files, generated from the pydantic models.

Editors with a YAML language server complete and check scenario files against it when the
file starts with ``# yaml-language-server: $schema=<relative path>/scenario.schema.json``.
The committed copy (``scenarios/scenario.schema.json``) is kept equal to
:func:`render_schema` by a test; regenerate it with ``diageval schema`` or
``python -m pytest_diageval.harness.schema scenarios/scenario.schema.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pytest_diageval.harness.scenario import Scenario

__all__ = [
    "JSON_SCHEMA_DIALECT",
    "REGENERATE_COMMAND",
    "SCHEMA_TITLE",
    "main",
    "render_schema",
    "scenario_json_schema",
    "write_schema",
]

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_TITLE = "pytest-diageval scenario"
REGENERATE_COMMAND = "diageval schema > scenarios/scenario.schema.json"


def scenario_json_schema() -> dict[str, Any]:
    """The schema as a dict: pydantic's output plus ``$schema``, title and description."""
    generated = _without_nulls(Scenario.model_json_schema())
    generated.pop("title", None)
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "title": SCHEMA_TITLE,
        **generated,
    }


def _without_nulls(node: Any) -> Any:
    """Drop ``null`` from the schema: the loader refuses empty values (an absent key means
    "not checked"), so editors should flag ``verdict:`` without a value too."""
    if isinstance(node, list):
        return [_without_nulls(item) for item in node if item != {"type": "null"}]
    if not isinstance(node, dict):
        return node
    tidy = {
        key: _without_nulls(value)
        for key, value in node.items()
        if not (key == "default" and value is None)
    }
    branches = tidy.get("anyOf")
    if isinstance(branches, list) and len(branches) == 1:
        # `X | None` became a one-branch anyOf: inline X next to the field's description.
        del tidy["anyOf"]
        tidy = {**branches[0], **tidy}
    return tidy


def render_schema() -> str:
    """The schema as stable, human-readable JSON: sorted keys, indent 2, trailing newline."""
    return json.dumps(scenario_json_schema(), ensure_ascii=False, sort_keys=True, indent=2) + "\n"


def write_schema(path: str | Path) -> bool:
    """Write :func:`render_schema` to ``path``; True when the file changed."""
    path = Path(path)
    text = render_schema()
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    """``python -m pytest_diageval.harness.schema [PATH]``: print the schema or write it."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        sys.stdout.write(render_schema())
        return 0
    changed = write_schema(args[0])
    print(f"{args[0]}: {'written' if changed else 'already up to date'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
