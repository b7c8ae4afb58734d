"""A corpus of malformed inputs (issue 12): scenario files, worlds, cassettes, options and
environment values. Each case says the message it must produce; none may end in a traceback
or an INTERNALERROR, and a malformed file never stops the other scenarios.

The file cases share one project and one real ``pytest`` run (a subprocess with a JUnit
report, so each case finds its own failures); option, environment and ``diageval ask`` cases
run one by one. ``{project}`` in a message stands for the project folder: a message names
the file (or the option) it is about. Each case has a class (``Case.kind``): the hostile
inputs of issue 41 are limits, values, paths and values read when the scenario runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_diageval.cli.command import main as diageval_main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "tests" / "plugin" / "data" / "example-scenario.yaml"
LIVE_SCENARIO = REPO / "scenarios" / "live" / "live-high-memory.yaml"
LIVE_CASSETTE = REPO / "cassettes" / "live-high-memory.yaml"
LEAN = ("-p", "no:hypothesispytest", "--assert=plain", "-p", "no:cacheprovider")
ENDPOINT_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DIAGEVAL_MODEL", "DIAGEVAL_TIMEOUT")
GBK = "告警内存".encode("gbk")
OUTSIDE_SECRET = "outside-secret-" + "d41d8cd98f00b204"

Data = dict[str, Any]


@dataclass(frozen=True)
class Symlink:
    """A symbolic link to ``target`` (relative to the project) in a case's files."""

    target: str


Files = dict[str, str | bytes | Symlink]


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=1000)


def _example(case: str) -> Data:
    data = yaml.safe_load(EXAMPLE.read_text("utf-8"))
    data["id"] = case
    data["expect"] = {"verdict": "PASS"}
    return dict(data)


def _live(case: str) -> Data:
    data = yaml.safe_load(LIVE_SCENARIO.read_text("utf-8"))
    data["id"] = case
    data["llm"] = {"cassette": f"cassettes/{case}.yaml"}
    return dict(data)


def _cassette() -> Data:
    return dict(yaml.safe_load(LIVE_CASSETTE.read_text("utf-8")))


# --------------------------------------------------------------------------- case builders


@dataclass(frozen=True)
class Case:
    """One malformed input and the message it must give.

    ``build(name)`` returns the files to write into the project (paths relative to it);
    ``args`` / ``env`` make it a run of its own; ``cli`` makes it a ``diageval`` call.
    """

    name: str
    build: Callable[[str], Files]
    message: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cli: tuple[str, ...] = ()
    kind: str = "format"
    """The class of the input: format (a wrong key or value), limit (a bound of
    core.yaml_limits), value (a number, tag or date that is not what it says), path, run
    (read when the scenario runs), option or environment."""

    @property
    def shared(self) -> bool:
        return not (self.args or self.env or self.cli)


def scenario_text(text: str | bytes) -> Callable[[str], Files]:
    return lambda name: {f"scenarios/{name}.yaml": text}


def scenario_edit(
    edit: Callable[[Data], Any], extra: Files | None = None
) -> Callable[[str], Files]:
    def build(name: str) -> Files:
        data = _example(name)
        edit(data)
        return {f"scenarios/{name}.yaml": _dump(data), **(extra or {})}

    return build


def expect(**values: Any) -> Callable[[Data], None]:
    return lambda data: data.__setitem__("expect", values)


def put(key: str, value: Any) -> Callable[[Data], None]:
    return lambda data: data.__setitem__(key, value)


def drop(key: str) -> Callable[[Data], None]:
    return lambda data: data.pop(key)


def script_entry(index: int, entry: Data) -> Callable[[Data], None]:
    return lambda data: data["llm"]["script"].__setitem__(index, entry)


def world_file(text: str | bytes) -> Callable[[str], Files]:
    def build(name: str) -> Files:
        data = _example(name)
        data["world"] = f"worlds/{name}.yaml"
        return {f"scenarios/{name}.yaml": _dump(data), f"scenarios/worlds/{name}.yaml": text}

    return build


def cassette_edit(edit: Callable[[Data], Any]) -> Callable[[str], Files]:
    def build(name: str) -> Files:
        cassette = _cassette()
        result = edit(cassette)
        text = result if isinstance(result, str | bytes) else _dump(cassette)
        return {
            f"scenarios/{name}.yaml": _dump(_live(name)),
            f"scenarios/cassettes/{name}.yaml": text,
        }

    return build


def interaction(number: int, path: str, value: Any) -> Callable[[Data], None]:
    """Set (or with ``...`` delete) ``path`` (dotted) in interaction ``number`` (1-based)."""

    def edit(cassette: Data) -> None:
        node = cassette["interactions"][number - 1]
        *parents, last = path.split(".")
        for part in parents:
            node = node[part]
        if value is ...:
            del node[last]
        else:
            node[last] = value

    return edit


def answer(number: int, completion: Any) -> Callable[[Data], None]:
    text = completion if isinstance(completion, str) else json.dumps(completion)
    return interaction(number, "response.body.string", text)


BOMB = "".join(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}' if i else 'x'] * 9)}]\n" for i in range(8))
SCENARIO_WITH_BOMB = (
    "title: t\nquery: q\nworld: default\nexpect: {verdict: PASS}\n"
    "llm:\n  script:\n    - stage: planner\n      content:\n" + BOMB.replace("  l", "        l")
)
RECURSIVE = (
    "title: t\nquery: q\nworld: default\nexpect: {verdict: PASS}\n"
    "llm:\n  script:\n    - stage: planner\n      content: &loop {plan: p, steps: [*loop]}\n"
)
INTERACTION_1 = (
    "cassette {project}/scenarios/cassettes/{name}.yaml: interaction #1 (planner, round 1)"
)
RERECORD = "; re-record the cassette (--diageval-record=rewrite)"


def _outside_world(name: str) -> Files:
    data = _example(name)
    data["world"] = f"../../outside-{name}.yaml"  # beside the project folder
    return {f"scenarios/{name}.yaml": _dump(data)}


def _outside_cassette(name: str) -> Files:
    data = _live(name)
    data["llm"] = {"cassette": f"../../outside-{name}.yaml"}  # beside the project folder
    return {f"scenarios/{name}.yaml": _dump(data)}


def _duplicate_id(name: str) -> Files:
    return {
        f"scenarios/{name}-a.yaml": _dump(_example(name)),
        f"scenarios/{name}.yaml": _dump(_example(name)),
    }


FILE_CASES = [
    # ------------------------------------------------------------------ YAML and top level
    Case("empty", scenario_text(""), "{project}/scenarios/{name}.yaml:1:1: the file is empty"),
    Case("comment-only", scenario_text("# nothing yet\n"), ":1:1: the file is empty"),
    Case("top-list", scenario_text("- a\n- b\n"), "the top level must be a mapping"),
    Case("top-scalar", scenario_text("hello\n"), "got 'hello'"),
    Case("unclosed", scenario_text("title: [a\n"), "{name}.yaml:1:8: invalid YAML"),
    Case("tab", scenario_text("title: t\nexpect:\n\tverdict: PASS\n"), "indent YAML with spaces"),
    Case("dup-key", scenario_text("title: a\ntitle: b\n"), ":2:1: title: duplicate key"),
    Case(
        "python-tag", scenario_text("title: !!python/object/apply:os.getcwd []\n"), "invalid YAML"
    ),
    Case("gbk-scenario", scenario_text(b"title: " + GBK + b"\n"), ":1: not UTF-8 text"),
    Case("alias-bomb", scenario_text(SCENARIO_WITH_BOMB), "invalid YAML: YAML aliases expand"),
    Case("alias-loop", scenario_text(RECURSIVE), "invalid YAML: recursive YAML alias"),
    # ------------------------------------------------------------------ scenario keys
    Case(
        "misspelt-key",
        scenario_edit(lambda d: d.__setitem__("expcet", d.pop("expect"))),
        "did you mean 'expect'?",
    ),
    Case("no-title", scenario_edit(drop("title")), "title: required key is missing"),
    Case("no-query", scenario_edit(drop("query")), "query: required key is missing"),
    Case("no-world", scenario_edit(drop("world")), "world: required key is missing"),
    Case("no-expect", scenario_edit(drop("expect")), "expect: required key is missing"),
    Case(
        "empty-title",
        scenario_edit(put("title", "  ")),
        "title: '  ' is not allowed: must not be blank",
    ),
    Case("null-query", scenario_edit(put("query", None)), "query: has no value"),
    Case("bad-id", scenario_edit(put("id", "has space")), "id: 'has space' is not allowed"),
    Case("_draft", scenario_edit(drop("id")), "the file name gives the default id '_draft'"),
    Case("dup-id", _duplicate_id, "duplicate scenario id 'dup-id'"),
    Case("reserved-tag", scenario_edit(put("tags", ["skip"])), "skip cannot be a tag"),
    Case("bad-tag", scenario_edit(put("tags", ["my-tag"])), "tags[0]: 'my-tag'"),
    # ------------------------------------------------------------------ expectations
    Case("empty-expect", scenario_edit(expect()), "no expectation given"),
    Case(
        "verdict-name",
        scenario_edit(expect(verdict="PASSED")),
        "expect.verdict: 'PASSED' is not one of PASS, LOW_CONFID, REJECT",
    ),
    Case(
        "verdict-twice",
        scenario_edit(expect(verdict=["PASS", "PASS"])),
        "lists PASS more than once",
    ),
    Case(
        "rounds-3",
        scenario_edit(expect(rounds=3)),
        "expect.rounds: 3 (a number) is not one of 1, 2",
    ),
    Case("rounds-text", scenario_edit(expect(rounds="1")), "expect.rounds: '1'"),
    Case(
        "score-order",
        scenario_edit(expect(groundedness={"min": 0.9, "max": 0.1})),
        "min (0.9) is greater than max (0.1)",
    ),
    Case(
        "score-range",
        scenario_edit(expect(groundedness={"min": 1.5})),
        "expect.groundedness.min: must be <= 1.0; got 1.5",
    ),
    Case(
        "severity",
        scenario_edit(expect(gatekeeper={"severity": "high"})),
        "expect.gatekeeper.severity: 'high' is not one of none, low_confid, reject",
    ),
    Case(
        "rule-typo",
        scenario_edit(expect(gatekeeper={"failed_rules": ["evidence.rawpath"]})),
        "'evidence.rawpath' is not a gatekeeper rule; did you mean 'evidence.raw_path'?",
    ),
    Case(
        "rule-warning",
        scenario_edit(expect(gatekeeper={"warnings_include": ["backfill"]})),
        "expect.gatekeeper.warnings_include[0]: 'backfill' is not a gatekeeper rule",
    ),
    Case(
        "gate-empty",
        scenario_edit(expect(gatekeeper={})),
        "expect.gatekeeper: give at least one of severity, failed_rules",
    ),
    Case(
        "keywords-empty",
        scenario_edit(expect(forbidden_keywords=[])),
        "expect.forbidden_keywords: must not be empty",
    ),
    Case(
        "keywords-twice",
        scenario_edit(expect(required_keywords=["内存", "内存"])),
        "the keyword list lists 内存 more than once",
    ),
    Case(
        "claim-type",
        scenario_edit(expect(claims={"types": ["positive"]})),
        "expect.claims.types[0]: 'positive' is not one of observation, negative_observation",
    ),
    Case(
        "tool-name",
        scenario_edit(expect(tool_calls={"include": ["query_metric"]})),
        "'query_metric' is not one of",
    ),
    Case(
        "tool-both",
        scenario_edit(expect(tool_calls={"include": ["query_logs"], "exclude": ["query_logs"]})),
        "query_logs cannot be both included and excluded",
    ),
    Case(
        "no-evidence-row",
        scenario_edit(expect(no_evidence=[{"tool": "query_logs"}])),
        "give at least one of evidence_status, success, total",
    ),
    # ------------------------------------------------------------------ llm
    Case(
        "llm-both",
        scenario_edit(lambda d: d["llm"].__setitem__("cassette", "c.yaml")),
        "give exactly one of 'cassette', 'script' or 'reference: true' (cassette, script given)",
    ),
    Case(
        "script-empty", scenario_edit(put("llm", {"script": []})), "llm.script: must not be empty"
    ),
    Case(
        "script-stage",
        scenario_edit(script_entry(0, {"stage": "planer", "content": {}})),
        "llm.script[0].stage: 'planer'",
    ),
    # ------------------------------------------------------------------ worlds
    Case("world-name", scenario_edit(put("world", "nowhere")), "unknown world name 'nowhere'"),
    Case(
        "world-missing",
        scenario_edit(put("world", "worlds/missing.yaml")),
        "world: world file not found: worlds/missing.yaml",
    ),
    Case(
        "world-env-file",
        scenario_edit(put("world", "../.env")),
        "a world file must be a .yaml or .yml file: ../.env (the file was not opened)",
    ),
    Case(
        "world-passwd",
        scenario_edit(put("world", "../../../../etc/passwd")),
        "a world file must be a .yaml or .yml file",
    ),
    Case(
        "world-proc",
        scenario_edit(put("world", "/proc/self/environ")),
        "a world file must be a .yaml or .yml file: /proc/self/environ",
    ),
    Case("world-outside", _outside_world, "is outside the project (allowed: {project})"),
    Case("world-gbk", world_file(b"now: " + GBK + b"\n"), "is not UTF-8 text (line 1"),
    Case("world-yaml", world_file("logs: [\n"), "not valid YAML"),
    Case("world-list", world_file("- a\n"), "the top level must be a mapping with keys"),
    Case(
        "world-key", world_file("now: '2026-07-08T11:17:00+08:00'\nlog: []\n"), "unknown key 'log'"
    ),
    Case(
        "world-bomb",
        world_file("meta:\n" + BOMB),
        "invalid world {project}/scenarios/worlds/{name}.yaml: line 7, column 7: YAML aliases",
    ),
    # ------------------------------------------------------------------ cassette paths
    Case(
        "cassette-missing",
        lambda n: {f"scenarios/{n}.yaml": _dump(_live(n))},
        "llm.cassette: cassette not found: {project}/scenarios/cassettes/{name}.yaml",
    ),
    Case(
        "cassette-default",
        lambda n: {f"scenarios/{n}.yaml": _dump({k: v for k, v in _live(n).items() if k != "llm"})},
        "id: cassette not found: {project}/scenarios/cassettes/{name}.yaml",
    ),
    Case(
        "cassette-outside",
        _outside_cassette,
        "the cassette {project}/scenarios/../../outside-{name}.yaml is outside the project",
    ),
    # ------------------------------------------------------------------ cassette content
    Case(
        "cassette-version",
        cassette_edit(lambda c: c.__setitem__("version", 2)),
        "version 2 is not supported: this plugin reads vcrpy cassettes of version 1",
    ),
    Case(
        "cassette-unversioned",
        cassette_edit(lambda c: c.pop("version")),
        "cassettes/{name}.yaml: no `version` key",
    ),
    Case(
        "cassette-list",
        cassette_edit(lambda c: _dump(c["interactions"])),
        "cassettes/{name}.yaml: the top level must be a mapping with `version` and `interactions`",
    ),
    Case(
        "cassette-interactions",
        cassette_edit(lambda c: c.__setitem__("interactions", {})),
        "`interactions` must be a list; got dict",
    ),
    Case(
        "cassette-no-response",
        cassette_edit(interaction(1, "response", ...)),
        INTERACTION_1 + ": `response` is missing or not a mapping",
    ),
    Case(
        "cassette-entry-text",
        cassette_edit(lambda c: c["interactions"].__setitem__(1, "request: POST")),
        "interaction #2: must be a mapping with `request` and `response`; got str",
    ),
    Case(
        "cassette-request-partial",
        cassette_edit(interaction(1, "request", {"method": "POST"})),
        "interaction #1: request.uri is missing or not a string",
    ),
    Case(
        "cassette-no-method",
        cassette_edit(interaction(1, "request.method", ...)),
        INTERACTION_1 + ": request.method is missing or not a string",
    ),
    Case(
        "cassette-extra-key",
        cassette_edit(interaction(1, "request.verb", "POST")),
        INTERACTION_1 + ": unknown request key(s) verb",
    ),
    Case(
        "cassette-http-500",
        cassette_edit(
            interaction(3, "response.status", {"code": 500, "message": "Internal Server Error"})
        ),
        "interaction #3 (executor, round 1): the recorded answer is HTTP 500 Internal Server"
        " Error, not a chat completion",
    ),
    Case(
        "cassette-no-choices",
        cassette_edit(answer(2, {"id": "x", "choices": []})),
        "interaction #2 (executor, round 1): the recorded answer has no choices (the model"
        " answered nothing)" + RERECORD,
    ),
    Case(
        "cassette-corrupt",
        cassette_edit(answer(1, '{"id": "x", "choices": [{"mess')),
        INTERACTION_1 + ": the recorded answer is not JSON (Unterminated string",
    ),
    Case(
        "cassette-no-message",
        cassette_edit(answer(1, {"choices": [{"index": 0}]})),
        INTERACTION_1 + ": choices[0] of the recorded answer has no message",
    ),
    Case(
        "cassette-status",
        cassette_edit(interaction(1, "response.status", "OK")),
        INTERACTION_1 + ": response.status.code is missing or not a number",
    ),
    Case(
        "cassette-yaml",
        cassette_edit(lambda c: "interactions: [\n"),
        "cassettes/{name}.yaml is not valid YAML: line 2, column 1",
    ),
    Case(
        "cassette-gbk",
        cassette_edit(lambda c: b"version: " + GBK + b"\n"),
        "cassettes/{name}.yaml is not UTF-8 text",
    ),
    Case(
        "cassette-bomb",
        cassette_edit(lambda c: "version: 1\nmeta:\n" + BOMB + "interactions: []\n"),
        "cassettes/{name}.yaml is not valid YAML: line 8, column 7: YAML aliases expand",
    ),
    Case(
        "cassette-stale",
        cassette_edit(interaction(1, "request.body", '{"model": "x"}')),
        "stale cassette {project}/scenarios/cassettes/{name}.yaml: request #1 of this run",
    ),
]


# --------------------------------------------------------------------------- hostile inputs
# Issue 41: each of these ended the whole session (a traceback at collection, an INTERNALERROR
# at run time) or hung it; now each fails alone, naming its file, its line and the limit.


def _deep(levels: int) -> str:
    return "[" * levels + "x" + "]" * levels


def raw_key(key: str, raw: str) -> Callable[[str], Files]:
    """The example with top-level ``key`` written as the raw YAML ``raw`` (last, so its line
    is the file's last)."""

    def build(name: str) -> Files:
        data = _example(name)
        data.pop(key, None)
        return {f"scenarios/{name}.yaml": _dump(data) + f"{key}: {raw}\n"}

    return build


def tool_arguments(raw: str) -> Callable[[str], Files]:
    """The example whose query_logs call has the raw YAML ``raw`` as its arguments."""

    def build(name: str) -> Files:
        data = _example(name)
        data["llm"]["script"][1]["tool_calls"][1]["arguments"] = "ARGUMENTS"
        text = _dump(data).replace("arguments: ARGUMENTS", f"arguments: {raw}")
        return {f"scenarios/{name}.yaml": text}

    return build


def _script(raw: str) -> Callable[[str], Files]:
    def build(name: str) -> Files:
        data = _example(name)
        data["llm"] = {"script": "SCRIPT"}
        return {f"scenarios/{name}.yaml": _dump(data).replace("script: SCRIPT", f"script: {raw}")}

    return build


def _file_of_keys(name: str) -> Files:
    block = "".join(f"key{i}: {i}\n" for i in range(100_000))  # about 1.3 MB
    return {f"scenarios/{name}.yaml": block * 40}


def _cassette_timeout(digits: int) -> Callable[[str], Files]:
    return cassette_edit(
        lambda c: _dump(c).replace("timeout: 900.0", "timeout: " + "9" * digits, 1)
    )


def _link_loop(key: str, relpath: str) -> Callable[[str], Files]:
    def build(name: str) -> Files:
        data = _live(name) if key == "cassette" else _example(name)
        if key == "cassette":
            data["llm"] = {"cassette": f"{relpath}/{name}.yaml"}
        else:
            data["world"] = f"{relpath}/{name}.yaml"
        loop = f"scenarios/{relpath}/{name}.yaml"
        return {f"scenarios/{name}.yaml": _dump(data), loop: Symlink(loop)}

    return build


WORLD_AT = "{name}.yaml:8:1: world: "
LIMIT_DEPTH = "values nested more than 64 levels deep, over the nesting limit: flatten the value"
DIGITS = "digits, over the integer limit of 20 digits: quote it if it is text"
TEXT = "; quote it to make it text"
NOW = "now: '2026-07-08T11:20:00+08:00'\n"

HOSTILE_CASES = [
    # ------------------------------------------------------------------ limits
    Case(
        "deep-notes",
        raw_key("notes", _deep(990)),
        "{name}.yaml:66:71: invalid YAML: " + LIMIT_DEPTH,
        kind="limit",
    ),
    Case(
        "deep-expect",
        raw_key("expect", "{a: " * 500 + "x" + "}" * 500),
        "{name}.yaml:64:261: invalid YAML: " + LIMIT_DEPTH,
        kind="limit",
    ),
    Case(
        "deep-tool-arguments",
        tool_arguments("{service: order-service, keywords: " + _deep(700) + "}"),
        "invalid YAML: " + LIMIT_DEPTH,
        kind="limit",
    ),
    Case(
        "deep-script-content",
        _script("[{stage: planner, content: " + _deep(800) + "}]"),
        "invalid YAML: " + LIMIT_DEPTH,
        kind="limit",
    ),
    Case(
        "deep-inline-world",
        raw_key("world", "{now: '2026-07-08T11:20:00+08:00', description: " + _deep(990) + "}"),
        "invalid YAML: " + LIMIT_DEPTH,
        kind="limit",
    ),
    Case(
        "deep-world-file",
        world_file(NOW + "description: " + _deep(500) + "\n"),
        WORLD_AT + "invalid world: invalid world {project}/scenarios/worlds/{name}.yaml: line 2,"
        " column 77: " + LIMIT_DEPTH,
        kind="limit",
    ),
    Case(
        "file-of-keys-50mb",
        _file_of_keys,
        "{project}/scenarios/{name}.yaml: the file is 63,111,200 bytes, over the file size"
        " limit of 8,388,608 bytes; it was not read",
        kind="limit",
    ),
    Case(
        "alias-string-bomb",
        tool_arguments(
            "{service: order-service, keywords: [&s "
            + "x" * 100_000
            + ", "
            + ", ".join(["*s"] * 2_000)
            + "]}"
        ),
        "invalid YAML: YAML aliases expand this value to more than 8,388,608 characters, over"
        " the expansion limit (an alias bomb?)",
        kind="limit",
    ),
    Case(
        "million-keywords",
        raw_key("expect", "{required_keywords: [" + ", ".join(["k"] * 1_000_000) + "]}"),
        "{name}.yaml:64:29: invalid YAML: this list has more than 10,000 entries, over the"
        " length limit: split it up",
        kind="limit",
    ),
    Case(
        "million-script-entries",
        _script(
            "[&e {stage: planner, content: {plan: p, steps: [a]}}, "
            + ", ".join(["*e"] * 1_000_000)
            + "]"
        ),
        "invalid YAML: this list has more than 10,000 entries, over the length limit",
        kind="limit",
    ),
    Case(
        "int-notes",
        raw_key("notes", "9" * 500),
        "{name}.yaml:66:8: invalid YAML: an integer of 500 " + DIGITS,
        kind="limit",
    ),
    Case(
        "int-notes-5000",
        raw_key("notes", "9" * 5_000),
        "invalid YAML: an integer of 5,000 " + DIGITS,
        kind="limit",
    ),
    Case(
        "int-hex",
        raw_key("notes", "0x" + "f" * 5_000),
        "invalid YAML: an integer of 5,000 " + DIGITS,
        kind="limit",
    ),
    Case(
        "int-tokens-max",
        raw_key("expect", "{tokens: {max: " + "9" * 400 + "}}"),
        "{name}.yaml:64:24: invalid YAML: an integer of 400 " + DIGITS,
        kind="limit",
    ),
    Case(
        "int-source-invocation-id",
        lambda n: {
            f"scenarios/{n}.yaml": _dump(_example(n)).replace(
                "source_invocation_id: 1", "source_invocation_id: " + "1" * 5_000, 1
            )
        },
        "invalid YAML: an integer of 5,000 " + DIGITS,
        kind="limit",
    ),
    Case(
        "int-world-file",
        world_file("now: " + "9" * 5_000 + "\n"),
        "{name}.yaml: line 1, column 6: an integer of 5,000 " + DIGITS,
        kind="limit",
    ),
    # ------------------------------------------------------------------ values
    Case(
        "tag-int",
        raw_key("notes", "!!int abc"),
        "{name}.yaml:66:8: invalid YAML: 'abc' cannot be read"
        " as !!int (invalid literal for int() with base 10: 'abc')" + TEXT,
        kind="value",
    ),
    Case(
        "tag-float",
        raw_key("notes", "!!float abc"),
        "'abc' cannot be read as !!float",
        kind="value",
    ),
    Case(
        "tag-timestamp",
        raw_key("notes", "!!timestamp nope"),
        "'nope' cannot be read as !!timestamp (not a valid value)" + TEXT,
        kind="value",
    ),
    Case(
        "tag-bool",
        raw_key("notes", "!!bool maybe"),
        "'maybe' cannot be read as !!bool (not a valid value)" + TEXT,
        kind="value",
    ),
    Case(
        "tag-int-title",
        raw_key("title", "!!int 12"),
        "{name}.yaml:65:1: title: must be a string; got 12 (a number)",
        kind="value",
    ),
    Case(
        "date-month-13",
        raw_key("notes", "2026-13-01"),
        "{name}.yaml:66:8: invalid YAML: '2026-13-01' cannot be read as !!timestamp"
        " (month must be in 1..12)" + TEXT,
        kind="value",
    ),
    Case(
        "date-hour-25",
        raw_key("notes", "2026-07-08 25:00:00"),
        "as !!timestamp (hour must be in 0..23)" + TEXT,
        kind="value",
    ),
    Case(
        "date-world-file",
        world_file("now: 2026-13-01T00:00:00+08:00\n"),
        "not valid YAML: '2026-13-01T00:00:00+08:00' cannot be read as !!timestamp (month"
        " must be in 1..12)",
        kind="value",
    ),
    Case(
        "rounds-float",
        scenario_edit(expect(rounds=1.0)),
        "expect.rounds: must be an integer, 1 or 2; got 1.0 (a number)",
        kind="value",
    ),
    Case(
        "rounds-bool",
        scenario_edit(expect(rounds=True)),
        "expect.rounds: must be an integer, 1 or 2; got true (a boolean)",
        kind="value",
    ),
    Case(
        "count-float",
        scenario_edit(expect(claims={"max": 1.0})),
        "expect.claims.max: must be an integer; got 1.0 (a number)",
        kind="value",
    ),
    Case(
        "count-bool",
        scenario_edit(expect(tool_calls={"max": True})),
        "expect.tool_calls.max: must be an integer; got true (a boolean)",
        kind="value",
    ),
    Case(
        "budget-float",
        scenario_edit(expect(tokens={"max": 1000.0})),
        "expect.tokens.max: must be an integer; got 1000.0 (a number)",
        kind="value",
    ),
    *(
        Case(
            f"invocation-id-{label}",
            lambda n, raw=raw: {
                f"scenarios/{n}.yaml": _dump(_example(n)).replace(
                    "source_invocation_id: 1", f"source_invocation_id: {raw}", 1
                )
            },
            "evidence_bindings[0].source_invocation_id: Input should be a valid integer; got"
            f" {shown} (the executor's ExecutorContract",
            kind="value",
        )
        for label, raw, shown in (("bool", "true", "true"), ("float", "1.0", "1.0"))
    ),
    # ------------------------------------------------------------------ paths
    Case(
        "world-nul",
        scenario_edit(put("world", "worlds/a\0b.yaml")),
        WORLD_AT + "the world file '{project}/scenarios/worlds/a\\x00b.yaml' cannot be"
        " opened: the path contains a NUL byte",
        kind="path",
    ),
    Case(
        "world-too-long",
        scenario_edit(put("world", "worlds/" + "a" * 5_000 + ".yaml")),
        "cannot be opened: the path (5,0",
        kind="path",
    ),
    Case(
        "world-loop",
        _link_loop("world", "worlds"),
        WORLD_AT + "the world file '{project}/scenarios/worlds/{name}.yaml' cannot be opened:"
        " the path is a symlink loop (a link that leads back to itself)",
        kind="path",
    ),
    Case(
        "cassette-nul",
        lambda n: {
            f"scenarios/{n}.yaml": _dump({**_live(n), "llm": {"cassette": "cassettes/a\0b.yaml"}})
        },
        "llm.cassette: the cassette '{project}/scenarios/cassettes/a\\x00b.yaml' cannot be"
        " opened: the path contains a NUL byte",
        kind="path",
    ),
    Case(
        "cassette-too-long",
        lambda n: {
            f"scenarios/{n}.yaml": _dump(
                {**_live(n), "llm": {"cassette": "cassettes/" + "c" * 5_000 + ".yaml"}}
            )
        },
        "llm.cassette: the cassette",
        kind="path",
    ),
    Case(
        "cassette-loop",
        _link_loop("cassette", "cassettes"),
        "llm.cassette: the cassette '{project}/scenarios/cassettes/{name}.yaml' cannot be"
        " opened: the path is a symlink loop",
        kind="path",
    ),
    # ------------------------------------------------------------------ read when it runs
    Case(
        "cassette-timeout-400",
        _cassette_timeout(400),
        "cassettes/{name}.yaml is not valid YAML: line 4, column 12: an integer of 400 " + DIGITS,
        kind="run",
    ),
    Case(
        "cassette-timeout-5000",
        _cassette_timeout(5_000),
        "is not valid YAML: line 4, column 12: an integer of 5,000 " + DIGITS,
        kind="run",
    ),
]
FILE_CASES += HOSTILE_CASES


def _cassette_scenario_without_cassette(name: str) -> Files:
    return {f"scenarios/{name}.yaml": _dump(_live(name))}


def _scripted(name: str) -> Files:
    return {f"scenarios/{name}.yaml": _dump(_example(name))}


def _unrelated(name: str) -> Files:
    return {
        "tests/test_app.py": "def test_app():\n    assert True\n",
        "docker-compose.yaml": "services: {}\n",
    }


def _report_under_a_file(name: str) -> Files:
    return {**_scripted(name), "afile": "not a folder\n"}


def _gbk_world(name: str) -> Files:
    return {"gbk-world.yaml": b"now: " + GBK + b"\n"}


OWN_RUN_CASES = [
    Case(
        "env-timeout-text",
        _scripted,
        "environment variable DIAGEVAL_TIMEOUT: 'abc' is not a number"
        " of seconds; set it to a positive number (default 60) or unset it",
        env={"DIAGEVAL_TIMEOUT": "abc"},
    ),
    Case(
        "env-timeout-negative",
        _scripted,
        "DIAGEVAL_TIMEOUT: '-1' is not a positive number",
        env={"DIAGEVAL_TIMEOUT": "-1"},
    ),
    Case(
        "env-timeout-nan",
        _scripted,
        "DIAGEVAL_TIMEOUT: 'nan' is not a positive number",
        env={"DIAGEVAL_TIMEOUT": "nan"},
    ),
    Case("env-timeout-unrelated", _unrelated, "1 passed", env={"DIAGEVAL_TIMEOUT": "abc"}),
    Case(
        "opt-timeout-negative",
        _scripted,
        "argument --diageval-timeout: '-5' is not a positive number of seconds",
        args=("--diageval-timeout=-5",),
    ),
    Case(
        "opt-timeout-text",
        _scripted,
        "argument --diageval-timeout: 'soon' is not a number of seconds",
        args=("--diageval-timeout=soon",),
    ),
    Case(
        "opt-timeout-zero",
        _scripted,
        "argument --diageval-timeout: '0' is not a positive",
        args=("--diageval-timeout", "0"),
    ),
    Case(
        "opt-report-dir",
        _scripted,
        "argument --diageval-report: 'scenarios' is a directory",
        args=("--diageval-report", "scenarios"),
    ),
    Case(
        "opt-report-unwritable",
        _report_under_a_file,
        "argument --diageval-report: 'afile/report.json' lies under afile, which is a file",
        args=("--diageval-report", "afile/report.json"),
    ),
    Case(
        "opt-record-mode",
        _scripted,
        "argument --diageval-record: invalid choice: 'sometimes'",
        args=("--diageval-record=sometimes",),
    ),
    Case(
        "opt-record-no-endpoint",
        _cassette_scenario_without_cassette,
        "--diageval-record=once would record",
        args=("--diageval-record=once",),
    ),
    Case(
        "cli-world-gbk",
        _gbk_world,
        "diageval ask: world file {project}/gbk-world.yaml is not UTF-8",
        cli=("--world", "gbk-world.yaml"),
    ),
    Case(
        "cli-world-missing",
        _gbk_world,
        "diageval ask: world file not found:",
        cli=("--world", "missing.yaml"),
    ),
]

CASES = FILE_CASES + OWN_RUN_CASES
assert len({case.name for case in CASES}) == len(CASES), "case names must be unique"


def _write(project: Path, files: Files) -> None:
    for relpath, content in files.items():
        path = project / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Symlink):
            path.symlink_to(project / content.target)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def _environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ENDPOINT_VARIABLES}
    return {**env, "COLUMNS": "200", **extra}


@dataclass(frozen=True)
class SharedRun:
    project: Path
    output: str
    returncode: int
    failures: dict[str, list[str]]
    passed: set[str]


def _junit(path: Path) -> tuple[dict[str, list[str]], set[str]]:
    """Failure texts and passed node ids by the scenario file stem they belong to."""
    failures: dict[str, list[str]] = {}
    passed: set[str] = set()
    for case in ET.parse(path).getroot().iter("testcase"):
        stem = case.get("classname", "").removeprefix("scenarios.").split(".yaml")[0]
        failure = case.find("failure")
        if failure is None:
            passed.add(stem)
        else:
            failures.setdefault(stem, []).append(failure.text or "")
    return failures, passed


@pytest.fixture(scope="module")
def shared_run(tmp_path_factory: pytest.TempPathFactory) -> SharedRun:
    root = tmp_path_factory.mktemp("corpus")
    project = root / "project"
    for case in FILE_CASES:
        _write(project, case.build(case.name))
    # Outside the project, with a secret: never opened, so never echoed.
    _write(root, {"outside-world-outside.yaml": f"now: {OUTSIDE_SECRET}\n"})
    cassette = f"version: {OUTSIDE_SECRET}\ninteractions: []\n"
    _write(root, {"outside-cassette-outside.yaml": cassette})
    _write(project, {"scenarios/good.yaml": _dump(_example("good")), "pytest.ini": "[pytest]\n"})
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *LEAN, "-q", "--junitxml=corpus.xml"],
        cwd=project,
        env=_environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    failures, passed = _junit(project / "corpus.xml")
    return SharedRun(project, done.stdout + done.stderr, done.returncode, failures, passed)


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 60


def test_the_shared_run_fails_but_runs_the_good_scenario_with_no_traceback(
    shared_run: SharedRun,
) -> None:
    assert shared_run.returncode == pytest.ExitCode.TESTS_FAILED, shared_run.output[-3000:]
    assert "good" in shared_run.passed
    assert "good" not in shared_run.failures
    for marker in ("Traceback", "INTERNALERROR", "Interrupted", "ValidationError", OUTSIDE_SECRET):
        assert marker not in shared_run.output
    # Every file case failed (none was skipped, none passed by accident).
    assert {case.name for case in FILE_CASES} <= set(shared_run.failures)


def _own_run(case: Case, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> str:
    _write(pytester.path, case.build(case.name))
    for name in ENDPOINT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    result = pytester.runpytest(*case.args)
    output = result.stdout.str() + result.stderr.str()
    expected_ok = case.name == "env-timeout-unrelated"
    assert (result.ret == pytest.ExitCode.OK) is expected_ok, output
    return output


def _cli_run(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> str:
    _write(tmp_path, case.build(case.name))
    monkeypatch.chdir(tmp_path)
    argv = ["ask", "问题", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", *case.cli]
    monkeypatch.setenv("OPENAI_API_KEY", "replay-without-key")
    assert diageval_main(argv) == 2
    captured = capsys.readouterr()
    return captured.out + captured.err


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_malformed_input_gets_its_message(
    case: Case,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if case.shared:
        run: SharedRun = request.getfixturevalue("shared_run")
        project = run.project
        texts = run.failures.get(case.name, [])
        assert texts, f"{case.name} did not fail"
        output = "\n".join(texts)
        assert f"{project}/scenarios/" in output  # names the scenario or cassette file
    elif case.cli:
        project = request.getfixturevalue("tmp_path")
        output = _cli_run(case, project, monkeypatch, capsys)
    else:
        pytester: pytest.Pytester = request.getfixturevalue("pytester")
        project = pytester.path
        output = _own_run(case, pytester, monkeypatch)

    assert case.message.format(project=project, name=case.name) in output
    assert "Traceback" not in output
    assert "INTERNALERROR" not in output


def test_the_hostile_cases_have_their_classes() -> None:
    kinds = {case.kind for case in HOSTILE_CASES}
    assert kinds == {"limit", "value", "path", "run"}
    assert len(HOSTILE_CASES) >= 35


def test_under_xdist_a_file_nested_too_deep_fails_alone_without_a_traceback(
    pytester: pytest.Pytester,
) -> None:
    _write(pytester.path, raw_key("notes", _deep(990))("deep"))
    for name in ("good-1", "good-2"):
        _write(pytester.path, {f"scenarios/{name}.yaml": _dump(_example(name))})

    result = pytester.runpytest_subprocess("-n", "2", *LEAN)
    output = result.stdout.str() + result.stderr.str()

    result.assert_outcomes(passed=2, failed=1)
    assert "values nested more than 64 levels deep, over the nesting limit" in output
    for marker in ("RecursionError", "Traceback", "INTERNALERROR"):
        assert marker not in output


def test_a_failure_no_check_foresaw_fails_its_file_alone(pytester: pytest.Pytester) -> None:
    """The collector's catch-all: a project's own check whose validator raises what pydantic
    lets through (a KeyError) fails the file that uses it, not the session."""
    conftest = (
        "from typing import Annotated\n"
        "from pydantic import AfterValidator\n"
        "from pytest_diageval.harness.checks.outcome import CheckOutcome\n\n"
        "def pytest_diageval_register_checks(registry):\n"
        "    @registry.check('lookup', Annotated[int, AfterValidator(lambda v: {}[v])])\n"
        "    def lookup(value, result):\n"
        "        return CheckOutcome(True, 'x', 'x')\n"
    )
    _write(pytester.path, {"conftest.py": conftest})
    _write(pytester.path, scenario_edit(expect(lookup=7))("odd"))
    _write(pytester.path, {"scenarios/good.yaml": _dump(_example("good"))})

    result = pytester.runpytest(*LEAN)
    output = result.stdout.str() + result.stderr.str()

    result.assert_outcomes(passed=1, failed=1)
    assert (
        f"{pytester.path}/scenarios/odd.yaml: cannot be used (KeyError: 7); look in it, its"
        " world and its cassette for an unusual value" in output
    )
    assert "Traceback" not in output


def test_a_failure_outside_the_run_fails_the_scenarios_items_not_the_session(
    pytester: pytest.Pytester,
) -> None:
    """The run's catch-all: whatever fails around a scenario's runs (here the samples'
    bookkeeping, as a recorded timeout of 400 digits once did) fails its items, once each,
    and the run goes on to the next scenario: no INTERNALERROR in pytest_runtestloop."""
    conftest = (
        "import pytest_diageval.harness.items as items\n\n"
        "def _overflow(*args, **kwargs):\n"
        "    raise OverflowError('int too large to convert to float')\n\n"
        "def pytest_collection_finish(session):\n"
        "    items.run_samples = _overflow\n"
    )
    _write(pytester.path, {"conftest.py": conftest})
    _write(pytester.path, {"scenarios/one.yaml": _dump(_example("one"))})

    result = pytester.runpytest_subprocess(*LEAN)
    output = result.stdout.str() + result.stderr.str()

    result.assert_outcomes(failed=1)
    assert "verdict: the scenario did not run: OverflowError: int too large to convert" in output
    assert "INTERNALERROR" not in output
