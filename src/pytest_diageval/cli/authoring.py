"""``diageval`` commands for scenario authors: see what a tool returns, start from a recording.

- ``diageval world [--world W] <tool> '<json arguments>'``: runs one tool on a world as the
  executor's first call would, and prints its output and every evidence ref (``raw_path`` and
  the ref's text), so a citation can be copied exactly;
- ``diageval scaffold <cassette | ask.sqlite>``: turns a recorded session (a cassette, or a
  ``diageval ask`` session in its SQLite file) into a scripted scenario skeleton to edit.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from pytest_diageval.cli.cassette_verdict import recording_world, replay_cassette

__all__ = [
    "add_authoring_commands",
    "scaffold_from_session",
    "scaffold_scenario",
    "tool_report",
]

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
        "scaffold",
        help="print a scripted scenario skeleton made from a cassette or a `diageval ask` session",
    )
    scaffold.add_argument(
        "source",
        type=Path,
        nargs="?",
        help="a cassette YAML file, or the SQLite file of `diageval ask`",
    )
    scaffold.add_argument(
        "--from",
        dest="cases",
        type=Path,
        default=None,
        metavar="CASES",
        help="a cases.jsonl or cases.csv file: one scenario per row (id, query, world, tags,"
        " verdict) written into the folder -o names, ready to record",
    )
    scaffold.add_argument(
        "--force", action="store_true", help="with --from: overwrite scenario files that exist"
    )
    answers = scaffold.add_mutually_exclusive_group()
    answers.add_argument(
        "--reference",
        dest="answers",
        action="store_const",
        const="reference",
        default="record",
        help="with --from: write `llm: {reference: true}`, so each scenario runs offline at once"
        " on the built-in reference agent (docs/reference-agent.md) instead of waiting for a"
        " recording",
    )
    answers.add_argument(
        "--script",
        dest="answers",
        action="store_const",
        const="script",
        help="with --from: write the reference agent's answers as `llm.script`, runnable at once;"
        " edit one answer to make a failure case",
    )
    scaffold.add_argument("--id", default=None, help="scenario id (default: the file's stem)")
    scaffold.add_argument(
        "--session", default=None, help="session id in the SQLite file (default: the latest)"
    )
    scaffold.add_argument(
        "--world",
        default=None,
        help="the cassette's world, a name or a YAML path (default: the one it was recorded on)",
    )
    scaffold.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help="write the scenario to this file (world paths relative to it) instead of stdout;"
        " with --from, the folder to write the scenarios into",
    )
    scaffold.set_defaults(handler=_scaffold)


# --------------------------------------------------------------------------- world


def tool_report(world_spec: str, tool: str, arguments: dict[str, Any]) -> str:
    """The tool's output on the world, then its evidence refs as ``raw_path  text`` lines."""
    from pytest_diageval.core.evidence.recorder import EVIDENCE_LIST_KEYS, ToolInvocationRecorder
    from pytest_diageval.core.evidence.store import Store
    from pytest_diageval.core.evidence.tools import Toolbox
    from pytest_diageval.core.evidence.world import load_world

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
    from pytest_diageval.core.evidence.tools import ToolArgumentError, UnknownToolError
    from pytest_diageval.core.evidence.world import WorldError

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


def scaffold_scenario(
    cassette: Path,
    scenario_id: str | None = None,
    *,
    world: str | None = None,
    output: Path | None = None,
) -> str:
    """A scripted scenario (YAML text) that replays the cassette's answers in order.

    The cassette is replayed through the pipeline first, on the recording's world (``world``
    when given, else the one its metadata names, else the one of a scenario that names the
    cassette, else ``default``), and ``expect: verdict`` is the verdict the code reaches, not
    the model's. A world file is written relative to ``output`` (else the working directory).
    """
    data = yaml.safe_load(cassette.read_text("utf-8"))
    interactions = data.get("interactions") if isinstance(data, dict) else None
    if not isinstance(interactions, list) or not interactions:
        raise ValueError(f"{cassette} holds no recorded interaction")
    script = [_entry(interaction) for interaction in interactions]
    scenario_id = scenario_id or cassette.stem
    query = _query(interactions[0])
    found = recording_world(cassette, world)
    replayed = replay_cassette(cassette, found, scenario_id, query)
    base = (output.absolute().parent if output else Path.cwd()).absolute()
    scenario = {
        "id": scenario_id,
        "title": "TODO: what this scenario proves",
        "query": query,
        "world": found.written(base),
        "llm": {"script": script},
        "expect": {"verdict": replayed.verdict},
    }
    text = yaml.safe_dump(scenario, allow_unicode=True, sort_keys=False, width=100)
    header = (
        "# yaml-language-server: $schema=../scenario.schema.json\n"
        f"# Scaffolded from {cassette.name} on world {found.origin}.\n"
        f"# Replayed, the code reaches {replayed.describe()}: that is the expected verdict.\n"
        "# Write the title and the expectations that say what this scenario proves.\n"
    )
    return header + text


def _entry(interaction: dict[str, Any]) -> dict[str, Any]:
    from pytest_diageval.agents.scripted.content import content_problems
    from pytest_diageval.agents.scripted.forced_call import structured_answer_call

    request, response = interaction["request"], interaction["response"]
    stage = (request.get("headers", {}).get("x-diageval-stage") or ["executor"])[0]
    message = json.loads(response["body"]["string"])["choices"][0]["message"]
    body = json.loads(request.get("body") or "{}")
    calls = message.get("tool_calls") or []
    structured = structured_answer_call(body, calls)
    if calls and structured is None:
        return {
            "stage": stage,
            "tool_calls": [
                {"name": c["function"]["name"], "arguments": _json_or(c["function"]["arguments"])}
                for c in calls
            ],
        }
    text = structured["function"]["arguments"] if structured else (message.get("content") or "")
    answer = _json_or(text)
    if not isinstance(answer, dict):
        return {"stage": stage, "raw_arguments" if structured else "raw": text}
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


def scaffold_from_session(db: Path, session_id: str | None, scenario_id: str | None) -> str:
    """A scripted scenario from a ``diageval ask`` session kept in SQLite.

    The audit keeps each agent's parsed answer, not the raw messages: all of a round's tool
    calls become one executor turn, and an answer that could not be used (a planner or
    verifier failure, after its re-ask) becomes two ``raw`` entries to fill in; one that was
    used after a re-ask (the step's ``reasks``) a ``raw`` entry before its ``content``.
    """
    from pytest_diageval.core.evidence.store import Store

    if not db.is_file():
        raise ValueError(f"{db} does not exist")
    store = Store(db)
    try:
        session_id = session_id or _latest_session(store)
        session = store.get_session(session_id)
        script = [entry for step in store.list_agent_steps(session_id) for entry in _entries(step)]
    finally:
        store.close()
    scenario = {
        "id": scenario_id or session_id,
        "title": "TODO: what this scenario proves",
        "query": session["query"],
        "world": "default",
        "llm": {"script": script},
        "expect": {"verdict": session.get("final_verdict") or "PASS"},
    }
    text = yaml.safe_dump(scenario, allow_unicode=True, sort_keys=False, width=100)
    return f"# Scaffolded from session {session_id} in {db.name}.\n{text}"


def _latest_session(store: Any) -> str:
    row = store._fetchone(  # one read of the audit file's newest session
        "SELECT id FROM diagnosis_session ORDER BY created_at DESC, rowid DESC LIMIT 1", ()
    )
    if row is None:
        raise ValueError("the SQLite file holds no diagnosis session")
    return str(row["id"])


def _entries(step: dict[str, Any]) -> list[dict[str, Any]]:
    from pytest_diageval.agents.scripted.content import content_problems

    agent, output = step["agent"], step["output"]
    answer = {"planner": output.get("plan"), "verifier": output.get("verifier_output")}
    if agent in answer:
        if answer[agent] is None:
            failed = {
                "stage": agent,
                "raw": f"TODO: unusable answer ({output.get('error') or output.get('failure')})",
            }
            return [failed, dict(failed)]  # the answer and its re-ask
        # An answer that parsed after a re-ask (a cut one, say) cost one request per re-ask.
        reasked = [
            {"stage": agent, "raw": f"TODO: the answer that was re-asked ({reason})"}
            for reason in output.get("reasks") or []
        ]
        return [*reasked, {"stage": agent, "content": answer[agent]}]
    entries: list[dict[str, Any]] = []
    calls = [c for c in output.get("tool_calls", []) if isinstance(c.get("arguments"), dict)]
    if calls:
        listed = [{"name": c["name"], "arguments": c["arguments"]} for c in calls]
        entries.append({"stage": "executor", "tool_calls": listed})
    final = _json_or(output.get("final_answer") or "")
    if isinstance(final, dict):
        entry: dict[str, Any] = {"stage": "executor", "content": final}
        if content_problems("executor", final):
            entry["invalid"] = True
        entries.append(entry)
    else:
        entries.append({"stage": "executor", "raw": output.get("final_answer") or ""})
    return entries


def _scaffold(args: argparse.Namespace) -> int:
    if args.cases is not None or args.source is None:
        return _scaffold_cases(args)
    if args.answers != "record":
        print(
            f"diageval scaffold: --{args.answers} goes with --from CASES (a cassette or a"
            " session already holds its model's answers)",
            file=sys.stderr,
        )
        return 2
    try:
        if args.source.read_bytes()[:16] == b"SQLite format 3\x00":
            text = scaffold_from_session(args.source, args.session, args.id)
        else:
            text = scaffold_scenario(args.source, args.id, world=args.world, output=args.output)
        if args.output is None:
            sys.stdout.write(text)
        else:
            args.output.write_text(text, "utf-8")
            print(f"diageval scaffold: wrote {args.output}", file=sys.stderr)
    except (OSError, ValueError, KeyError, yaml.YAMLError) as exc:
        print(f"diageval scaffold: {exc}", file=sys.stderr)
        return 2
    return 0


def _scaffold_cases(args: argparse.Namespace) -> int:
    from pytest_diageval.cli.cases import CasesError, scaffold_cases

    usage = None
    if args.cases is None:
        usage = "give a cassette, a `diageval ask` SQLite file, or --from CASES"
    elif args.source is not None:
        usage = f"give either {args.source} or --from {args.cases}, not both"
    elif args.output is None:
        usage = "--from needs -o DIR, the folder to write the scenario files into"
    if usage is not None:
        print(f"diageval scaffold: {usage}", file=sys.stderr)
        return 2
    try:
        written = scaffold_cases(args.cases, args.output, force=args.force, answers=args.answers)
    except CasesError as exc:
        print(f"diageval scaffold: {args.cases}: nothing was written:\n{exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"diageval scaffold: {exc}", file=sys.stderr)
        return 2
    then = (
        "record their cassettes with --diageval-record=once"
        if args.answers == "record"
        else "they run offline at once"
    )
    print(
        f"diageval scaffold: wrote {len(written)} scenario file(s) into {args.output}; {then}",
        file=sys.stderr,
    )
    return 0
