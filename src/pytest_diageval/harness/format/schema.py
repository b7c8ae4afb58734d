"""The JSON Schema of scenario files, generated from the pydantic models.

Editors with a YAML language server complete and check scenario files against it when the
file starts with ``# yaml-language-server: $schema=<relative path>/scenario.schema.json``.
The committed copy (``scenarios/scenario.schema.json``) is what ``diageval schema`` prints in
this project: :func:`render_schema` with the project's checks (its conftest.py registers
``max_answer_chars``), kept so by a test; ``python -m pytest_diageval.harness.format.schema``
writes the built-in keys alone.

A world file (``worlds/*.yaml``) has its own schema, the same World definition the scenario
schema uses for an inline world: ``scenarios/world.schema.json``, printed by
``diageval schema --world`` (:func:`render_world_schema`), also kept equal by a test.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import models_json_schema

from pytest_diageval.agents.scripted.content import STAGE_CONTENT_MODELS
from pytest_diageval.core.evidence.world import World
from pytest_diageval.harness.format.registry import CheckRegistry
from pytest_diageval.harness.format.scenario import Scenario

__all__ = [
    "JSON_SCHEMA_DIALECT",
    "REGENERATE_COMMAND",
    "SCHEMA_TITLE",
    "WORLD_REGENERATE_COMMAND",
    "WORLD_SCHEMA_TITLE",
    "main",
    "render_schema",
    "render_world_schema",
    "scenario_json_schema",
    "world_json_schema",
    "write_schema",
]

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_TITLE = "pytest-diageval scenario"
REGENERATE_COMMAND = "diageval schema > scenarios/scenario.schema.json"
WORLD_SCHEMA_TITLE = "pytest-diageval world"
WORLD_REGENERATE_COMMAND = "diageval schema --world > scenarios/world.schema.json"


def scenario_json_schema(checks: CheckRegistry | None = None) -> dict[str, Any]:
    """The schema as a dict: pydantic's output plus ``$schema``, title and description;
    ``checks``: a registry whose registered keys join ``expect`` (the built-ins are as is)."""
    generated = _without_nulls(Scenario.model_json_schema())
    generated.pop("title", None)
    _type_script_content(generated)
    _type_inline_world(generated)
    _add_registered_checks(generated, checks)
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "title": SCHEMA_TITLE,
        **generated,
    }


def world_json_schema() -> dict[str, Any]:
    """The schema of a world file: :class:`World`'s own (unknown keys refused at every level)."""
    world = _world_schema()
    return {"$schema": JSON_SCHEMA_DIALECT, **world, "title": WORLD_SCHEMA_TITLE}


def _world_schema() -> dict[str, Any]:
    world: dict[str, Any] = _without_nulls(World.model_json_schema(ref_template="#/$defs/{model}"))
    world["description"] = (
        "A mock world: the fixed clock, alerts (query_metrics), logs (query_logs), runbooks"
        " (lookup_knowledge), injected tool failures and service aliases."
    )
    return world


def _type_inline_world(schema: dict[str, Any]) -> None:
    """An inline ``world`` mapping is checked by the world's own models when it loads; the
    schema says so too (its keys, ``aliases`` included), so an editor completes a world."""
    world = _world_schema()
    defs = schema.setdefault("$defs", {})
    defs.update(world.pop("$defs", {}))
    defs["World"] = world
    alternatives = schema["properties"]["world"]["anyOf"]
    for index, alternative in enumerate(alternatives):
        if alternative.get("type") == "object":
            alternatives[index] = {"$ref": "#/$defs/World"}


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


def _type_script_content(schema: dict[str, Any]) -> None:
    """Type ``ScriptEntry.content`` by its stage, as the loader checks it.

    The runtime entry keeps ``content`` a free mapping (the scripted model sends whatever it
    is given); the load-time check of :mod:`pytest_diageval.harness.format.script_checks` is written
    here as one ``if stage … then content: <model>`` per stage, skipped for ``invalid: true``.
    Unknown keys are refused (the loader refuses them as typos); nulls stay allowed where the
    models allow them, unlike in the scenario's own keys.
    """
    models = STAGE_CONTENT_MODELS
    _, generated = models_json_schema(
        [(model, "validation") for model in models.values()], ref_template="#/$defs/{model}"
    )
    definitions: dict[str, Any] = generated["$defs"]
    clash = sorted(definitions.keys() & schema["$defs"].keys())
    assert not clash, f"content models clash with scenario definitions: {clash}"
    for name, definition in definitions.items():
        if definition.get("type") == "object":
            definition["additionalProperties"] = False
        if _accepts_plain_text(name, models.values()):
            definitions[name] = {"anyOf": [{"type": "string"}, definition]}
    schema["$defs"].update(definitions)
    schema["$defs"]["ScriptEntry"]["allOf"] = [
        {
            "if": {
                "properties": {"stage": {"const": stage}, "invalid": {"const": False}},
                "required": ["stage", "content"],
            },
            "then": {"properties": {"content": {"$ref": f"#/$defs/{model.__name__}"}}},
        }
        for stage, model in models.items()
    ]


def _add_registered_checks(schema: dict[str, Any], checks: CheckRegistry | None) -> None:
    """One ``expect`` property per registered check, after the built-in ones."""
    defs = schema["$defs"]
    properties = defs["Expect"]["properties"]
    for spec in checks.registered() if checks is not None else []:
        generated = _params_schema(spec.params)
        for name, definition in _without_nulls(generated.pop("$defs", {})).items():
            if defs.setdefault(name, definition) != definition:
                raise ValueError(f"check {spec.name!r}: its model {name} clashes with another")
        prop = _without_nulls(generated)
        if spec.description:
            prop["description"] = spec.description
        properties[spec.name] = prop


def _params_schema(params: Any) -> dict[str, Any]:
    """A check's parameters: a model by ``$ref`` (as the built-in expectations), else inline."""
    if isinstance(params, type) and issubclass(params, BaseModel):
        refs, generated = models_json_schema(
            [(params, "validation")], ref_template="#/$defs/{model}"
        )
        return {**refs[(params, "validation")], **generated}
    return TypeAdapter(params).json_schema(ref_template="#/$defs/{model}")


def _accepts_plain_text(name: str, models: Iterable[type[BaseModel]]) -> bool:
    """Whether the contract model ``name`` also accepts a plain string (``_accept_plain_text``)."""
    for model in _all_models(models):
        if model.__name__ == name:
            return "_accept_plain_text" in model.__pydantic_decorators__.model_validators
    return False


def _all_models(roots: Iterable[type[BaseModel]]) -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    pending = list(roots)
    while pending:
        model = pending.pop()
        if model in found:
            continue
        found.append(model)
        for field in model.model_fields.values():
            pending.extend(_models_in(field.annotation))
    return found


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in _models_in(arg)]


def render_schema(checks: CheckRegistry | None = None) -> str:
    """The schema as stable, human-readable JSON: sorted keys, indent 2, trailing newline."""
    schema = scenario_json_schema(checks)
    return json.dumps(schema, ensure_ascii=False, sort_keys=True, indent=2) + "\n"


def render_world_schema() -> str:
    """The world file schema, written like :func:`render_schema`."""
    return json.dumps(world_json_schema(), ensure_ascii=False, sort_keys=True, indent=2) + "\n"


def write_schema(path: str | Path, *, world: bool = False) -> bool:
    """Write :func:`render_schema` (``world``: :func:`render_world_schema`) to ``path``; True
    when the file changed."""
    path = Path(path)
    text = render_world_schema() if world else render_schema()
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    """``python -m pytest_diageval.harness.format.schema [PATH]``: print the schema or write it."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        sys.stdout.write(render_schema())
        return 0
    changed = write_schema(args[0])
    print(f"{args[0]}: {'written' if changed else 'already up to date'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
