"""``diageval`` commands for scenario authors: see what a tool returns, start from a recording.

- ``diageval world [--world W] <tool> '<json arguments>'``: runs one tool on a world as the
  executor's first call would, and prints its output and every evidence ref (``raw_path`` and
  the ref's text), so a citation can be copied exactly;
- ``diageval scaffold <cassette>``: turns a recorded session into a scripted scenario
  skeleton (one script entry per recorded answer) to edit and commit.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

__all__ = ["add_authoring_commands", "scaffold_scenario", "tool_report"]

_USER_QUERY = re.compile(r"<user_query>(.*?)</user_query>", re.DOTALL)


def add_authoring_commands(commands: Any) -> None:
    """Register ``world`` and ``scaffold`` on the ``diageval`` sub-command parser."""
    world = commands.add_parser(
        "world", help="print what a tool returns on a world, with each item's raw_path"
    )
    world.add_argument("tool", help="query_metrics, query_logs, lookup_knowledge, …")
    world.add_argument("arguments", nargs="?", default="{}", help="JSON object of arguments")
    world.add_argument("--world", default="default", help="world name or YAML path")
    world.set_defaults(handler=_world)

    scaffold = commands.add_parser(
        "scaffold", help="print a scripted scenario skeleton made from a recorded cassette"
    )
    scaffold.add_argument("cassette", type=Path, help="a cassette YAML file")
    scaffold.add_argument("--id", default=None, help="scenario id (default: the file's stem)")
    scaffold.set_defaults(handler=_scaffold)


# --------------------------------------------------------------------------- world


def tool_report(world_spec: str, tool: str, arguments: dict[str, Any]) -> str:
    """The tool's output on the world, then its evidence refs as ``raw_path  text`` lines."""
    from pytest_diageval.core.recorder import EVIDENCE_LIST_KEYS, ToolInvocationRecorder
    from pytest_diageval.core.store import Store
    from pytest_diageval.core.tools import Toolbox
    from pytest_diageval.core.world import load_world

    world = load_world(world_spec, Path.cwd())
    store = Store(":memory:")
    store.create_session("diageval-world", f"{tool} {json.dumps(arguments)}", world.now.isoformat())
    recorder = ToolInvocationRecorder(store, Toolbox(world), "diageval-world")
    recorded = recorder.call(tool, arguments, round=1)
    lines = [
        f"{tool} on world {world_spec}: success={str(recorded.success).lower()}"
        f" evidence_status={recorded.evidence_status or '-'}"
        f" source_invocation_id={recorded.invocation_id or '-'} (in a run: its call number)",
        json.dumps(recorded.output, ensure_ascii=False, indent=2, sort_keys=True),
    ]
    if recorded.error_message:
        lines.append(f"error: {recorded.error_message}")
    if recorded.evidence_refs:
        lines.append("evidence refs (cite raw_path; quote evidence_excerpt from the text):")
        lines += [f"  {ref.raw_path}  {ref.text}" for ref in recorded.evidence_refs]
    elif recorded.evidence_status == "no_evidence" and recorded.output is not None:
        path = f"$.{EVIDENCE_LIST_KEYS[tool]}"
        lines.append(
            "evidence refs: none (no hit). A no-hit supports only a negative_observation: cite"
            f" raw_path {path!r} with the message {recorded.output.get('message')!r} as excerpt"
        )
    else:
        lines.append("evidence refs: none (nothing here can be cited)")
    return "\n".join(lines)


def _world(args: argparse.Namespace) -> int:
    from pytest_diageval.core.tools import ToolArgumentError, UnknownToolError
    from pytest_diageval.core.world import WorldError

    try:
        arguments = json.loads(args.arguments)
        if not isinstance(arguments, dict):
            raise ValueError("the arguments must be a JSON object")
        print(tool_report(args.world, args.tool, arguments))
    except (ValueError, WorldError, UnknownToolError, ToolArgumentError) as exc:
        print(f"diageval world: {exc}", file=sys.stderr)
        return 2
    return 0


# --------------------------------------------------------------------------- scaffold


def scaffold_scenario(cassette: Path, scenario_id: str | None = None) -> str:
    """A scripted scenario (YAML text) that replays the cassette's answers in order."""
    data = yaml.safe_load(cassette.read_text("utf-8"))
    interactions = data.get("interactions") if isinstance(data, dict) else None
    if not isinstance(interactions, list) or not interactions:
        raise ValueError(f"{cassette} holds no recorded interaction")
    script = [_entry(interaction) for interaction in interactions]
    scenario = {
        "id": scenario_id or cassette.stem,
        "title": "TODO: what this scenario proves",
        "query": _query(interactions[0]),
        "world": "default",
        "llm": {"script": script},
        "expect": {"verdict": "PASS"},
    }
    text = yaml.safe_dump(scenario, allow_unicode=True, sort_keys=False, width=100)
    header = (
        "# yaml-language-server: $schema=../scenario.schema.json\n"
        f"# Scaffolded from {cassette.name}: check the world, then write the expectations.\n"
    )
    return header + text


def _entry(interaction: dict[str, Any]) -> dict[str, Any]:
    from pytest_diageval.agents.script_content import content_problems

    request, response = interaction["request"], interaction["response"]
    stage = (request.get("headers", {}).get("x-diageval-stage") or ["executor"])[0]
    message = json.loads(response["body"]["string"])["choices"][0]["message"]
    body = json.loads(request.get("body") or "{}")
    calls = message.get("tool_calls") or []
    forced = isinstance(body.get("tool_choice"), dict)
    if calls and not forced:
        return {
            "stage": stage,
            "tool_calls": [
                {"name": c["function"]["name"], "arguments": _json_or(c["function"]["arguments"])}
                for c in calls
            ],
        }
    text = calls[0]["function"]["arguments"] if calls else (message.get("content") or "")
    answer = _json_or(text)
    if not isinstance(answer, dict):
        return {"stage": stage, "raw_arguments" if calls else "raw": text}
    entry: dict[str, Any] = {"stage": stage, "content": answer}
    if content_problems(stage, answer):  # the model's invalid answer, kept as it was
        entry["invalid"] = True
    return entry


def _json_or(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _query(interaction: dict[str, Any]) -> str:
    body = json.loads(interaction["request"].get("body") or "{}")
    for message in body.get("messages", []):
        found = _USER_QUERY.search(str(message.get("content", "")))
        if found:
            return found.group(1)
    return "TODO: the user's question"


def _scaffold(args: argparse.Namespace) -> int:
    try:
        sys.stdout.write(scaffold_scenario(args.cassette, args.id))
    except (OSError, ValueError, KeyError, yaml.YAMLError) as exc:
        print(f"diageval scaffold: {exc}", file=sys.stderr)
        return 2
    return 0
