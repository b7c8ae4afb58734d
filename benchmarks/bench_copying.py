"""How often a recorded model copied the prompts' worked examples (issue 25 part 4).

Reads cassettes (``cassettes/live-*.yaml`` by default) and counts, per planner round (a
planner request and the executor requests after it, until the next planner request; a
cassette holds every round of every sample), whether the model's output equals an example's:

* **plan**: the planner's plan (``plan`` and ``steps``) equals an example's output;
  **plan sentence**: its ``plan`` sentence alone equals an example's (steps of its own);
* **calls**: an evidence tool call (name and arguments) equals an example's call; ``all calls``
  also counts rounds whose every call is one;
* **claims**: a ``claim_text`` of the submitted contract equals an example's claim text;
* **claim_facts**: a claim states a fact of an example's claim (a number or an entity, read as
  the gatekeeper reads facts) that no tool output of the round showed: the copy that equality
  misses ("payment-service 存在 HighCPUUsage 告警，队列积压 1840 条" keeps the example's 1840);
* **any**: plan sentence, calls or claims (equal copies);
* **subject_plan**, **subject_calls**, **subject_keywords**, **subject_claims**: an example's
  *subject* (a service, alert or keyword its calls name: ``billing-gateway``, ``HighQueueLag``,
  ``证书过期`` …) appears in the plan, in an evidence call's ``service`` / ``alert_name``, in a
  call's ``keywords``, or in a claim text, while the round's question does not name it (the
  copy that equality misses: the question's service with the example's alert);
  **subject_any**: any of the four. The subjects are those of the prompts' examples and, always,
  the services and alerts of the former examples' world (``agents/prompts/example-world.yaml``):
  prompts that show no example still count a copy of the ones earlier prompts showed.

The example values are read from the prompts, never typed here: by default from the system
prompt each recorded request carried (what the model saw, so old cassettes are measured
against the old examples), or, with ``--prompts DIR``, from the ``planner.md`` /
``executor.md`` files of DIR (the package's ``agents/prompts`` for the current examples).
An example is the JSON after ``输出：`` (planner) and the JSON after ``调用 NAME，参数``
(executor; ``submit_evidence_contract`` gives its claims).

    python benchmarks/bench_copying.py [--prompts DIR] [CASSETTE ...]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pytest_diageval.agents.prompts import example_subjects
from pytest_diageval.core.text.key_facts import extract

ROOT = Path(__file__).resolve().parents[1]
SUBMIT = "submit_evidence_contract"
_CALL = re.compile(r"调用 (?:functions\.)?([a-z_]+)，参数\s*[:：]?\s*")
_DECODER = json.JSONDecoder()
_USER_QUERY = re.compile(r"<user_query>(.*?)</user_query>", re.DOTALL)


@dataclass(frozen=True)
class Examples:
    plans: tuple[str, ...]  # canonical JSON of each example plan
    sentences: tuple[str, ...]  # each example plan's sentence
    calls: tuple[str, ...]  # canonical JSON of each example evidence call
    claims: tuple[str, ...]  # each example claim text
    claim_facts: frozenset[str] = frozenset()  # the numbers and entities they state
    subjects: frozenset[str] = frozenset()  # the services, alerts and keywords calls name


@dataclass
class Round:
    cassette: str
    plan: Any = None
    calls: list[tuple[str, Any]] = field(default_factory=list)
    claims: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)  # the tool outputs the model was shown
    planner_prompt: str = ""
    executor_prompt: str = ""
    question: str = ""  # the user query the planner was sent


def canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _json_after(text: str, position: int) -> Any:
    start = text.find("{", position)
    return None if start < 0 else _DECODER.raw_decode(text, start)[0]


def examples_of(planner: str, executor: str) -> Examples:
    """The example plans, calls and claim texts of one planner and one executor prompt."""
    plans = [_json_after(planner, m.end()) for m in re.finditer("输出：", planner)]
    calls, claims, subjects = [], [], set()
    for match in _CALL.finditer(executor):
        value = _json_after(executor, match.end())
        if match[1] == SUBMIT:
            claims += [claim["claim_text"] for claim in value.get("claims", [])]
        else:
            calls.append(canonical([match[1], value]))
            subjects.update(_strings(value))
    sentences = tuple(str(plan.get("plan", "")).strip() for plan in plans if plan)
    return Examples(
        tuple(canonical(plan) for plan in plans if plan),
        sentences,
        tuple(calls),
        tuple(claims),
        frozenset().union(*(_facts(claim) for claim in claims)),
        frozenset(subjects),
    )


def _strings(value: Any) -> list[str]:
    """Every string of a call's arguments (a list's items too)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    return []


def _facts(text: str) -> frozenset[str]:
    facts = extract(text)
    return facts.numbers | facts.entities


def _loads(text: str | None) -> Any:
    try:
        return json.loads(text or "")
    except ValueError:
        return None


def _message(response: dict[str, Any]) -> dict[str, Any]:
    body = _loads(response["body"]["string"]) or {}
    choices = body.get("choices") or [{}]
    return dict(choices[0].get("message") or {})


def _query(body: dict[str, Any]) -> str:
    """The question: the <user_query> of the first user message (a retry context after it
    may quote the model's own earlier calls)."""
    text = next((str(m["content"]) for m in body["messages"] if m["role"] == "user"), "")
    found = _USER_QUERY.search(text)
    return found[1] if found else text


def _system_prompt(body: dict[str, Any]) -> str:
    return next((m["content"] for m in body["messages"] if m["role"] == "system"), "")


def rounds_of(path: Path) -> list[Round]:
    """Every planner round recorded in one cassette, in order."""
    data = yaml.safe_load(path.read_text("utf-8"))
    rounds: list[Round] = []
    for interaction in data.get("interactions", []):
        request = interaction["request"]
        stage = (request.get("headers", {}).get("x-diageval-stage") or [""])[0]
        body = _loads(request["body"]) or {}
        message = _message(interaction["response"])
        if stage == "planner":
            rounds.append(
                Round(path.name, planner_prompt=_system_prompt(body), question=_query(body))
            )
            calls = message.get("tool_calls") or []
            rounds[-1].plan = _loads(
                calls[0]["function"]["arguments"] if calls else message.get("content")
            )
        elif stage == "executor" and rounds:
            _add_executor_turn(rounds[-1], body, message)
    return rounds


def _add_executor_turn(current: Round, body: dict[str, Any], message: dict[str, Any]) -> None:
    current.executor_prompt = current.executor_prompt or _system_prompt(body)
    for sent in body.get("messages", []):
        if sent.get("role") == "tool" and sent.get("content") not in current.evidence:
            current.evidence.append(str(sent.get("content")))
    for call in message.get("tool_calls") or []:
        name = call["function"]["name"]
        arguments = _loads(call["function"]["arguments"])
        if name == SUBMIT:
            current.claims += _claim_texts(arguments)
        else:
            current.calls.append((name, arguments))
    if not message.get("tool_calls") and message.get("content"):
        current.claims += _claim_texts(_loads(message["content"]))  # a text contract


def _claim_texts(contract: Any) -> list[str]:
    if not isinstance(contract, dict) or not isinstance(contract.get("claims"), list):
        return []
    return [str(c.get("claim_text", "")) for c in contract["claims"] if isinstance(c, dict)]


@dataclass
class Tally:
    rounds: int = 0
    plan: int = 0
    plan_sentence: int = 0
    calls: int = 0
    all_calls: int = 0
    claims: int = 0
    claim_facts: int = 0
    any: int = 0
    subject_plan: int = 0
    subject_calls: int = 0
    subject_keywords: int = 0
    subject_claims: int = 0
    subject_any: int = 0

    def add(self, found: dict[str, bool]) -> None:
        self.rounds += 1
        for key, value in found.items():
            setattr(self, key, getattr(self, key) + int(value))


def copied(current: Round, examples: Examples) -> dict[str, bool]:
    plan = current.plan is not None and canonical(current.plan) in examples.plans
    sentence = isinstance(current.plan, dict) and (
        str(current.plan.get("plan", "")).strip() in examples.sentences
    )
    hits = [canonical([name, args]) in examples.calls for name, args in current.calls]
    claims = any(text.strip() in {c.strip() for c in examples.claims} for text in current.claims)
    shown = frozenset().union(*(_facts(output) for output in current.evidence))
    unshown = examples.claim_facts - shown
    claim_facts = any(_facts(text) & unshown for text in current.claims)
    return {
        "plan": plan,
        "plan_sentence": sentence,
        "calls": any(hits),
        "all_calls": bool(hits) and all(hits),
        "claims": claims,
        "claim_facts": claim_facts,
        "any": sentence or any(hits) or claims,
        **subjects_named(current, examples),
    }


def subjects_named(current: Round, examples: Examples) -> dict[str, bool]:
    """Whether an example subject the question does not name appears in each part."""
    question = current.question.lower()
    every = examples.subjects.union(*example_subjects())
    subjects = [s.lower() for s in every if s.strip() and s.lower() not in question]

    def names(texts: Iterable[str]) -> bool:
        return any(subject in text.lower() for text in texts for subject in subjects)

    plan = current.plan if isinstance(current.plan, dict) else {}
    steps = plan.get("steps") if isinstance(plan.get("steps"), list) else []
    named = {
        "subject_plan": names([str(plan.get("plan", "")), *map(str, steps)]),
        "subject_calls": names(
            str(args.get(key, ""))
            for _, args in current.calls
            if isinstance(args, dict)
            for key in ("service", "alert_name")
        ),
        "subject_keywords": names(
            word
            for _, args in current.calls
            if isinstance(args, dict)
            for word in _strings(args.get("keywords"))
        ),
        "subject_claims": names(current.claims),
    }
    return {**named, "subject_any": any(named.values())}


def measure(paths: Iterable[Path], prompts: Path | None) -> dict[str, Tally]:
    fixed = None
    if prompts is not None:
        fixed = examples_of(
            *(prompts.joinpath(f"{a}.md").read_text("utf-8") for a in ("planner", "executor"))
        )
    tallies: dict[str, Tally] = {}
    for path in paths:
        for current in rounds_of(path):
            examples = fixed or examples_of(current.planner_prompt, current.executor_prompt)
            tallies.setdefault(path.name, Tally()).add(copied(current, examples))
    return tallies


def report(tallies: dict[str, Tally]) -> str:
    keys = (
        "plan",
        "plan_sentence",
        "calls",
        "all_calls",
        "claims",
        "claim_facts",
        "any",
        "subject_plan",
        "subject_calls",
        "subject_keywords",
        "subject_claims",
        "subject_any",
    )
    lines = ["| cassette | rounds | " + " | ".join(keys) + " |", "|---" * (len(keys) + 2) + "|"]
    total = Tally()
    for name, tally in sorted(tallies.items()):
        lines.append(
            f"| {name} | {tally.rounds} | "
            + " | ".join(str(getattr(tally, k)) for k in keys)
            + " |"
        )
        for key in ("rounds", *keys):
            setattr(total, key, getattr(total, key) + getattr(tally, key))
    shares = " | ".join(
        f"{getattr(total, k)} ({getattr(total, k) / max(total.rounds, 1):.0%})" for k in keys
    )
    lines.append(f"| **all** | {total.rounds} | {shares} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cassettes", nargs="*", type=Path)
    parser.add_argument(
        "--prompts", type=Path, help="read the examples from DIR/planner.md, DIR/executor.md"
    )
    args = parser.parse_args(argv)
    paths = args.cassettes or sorted((ROOT / "cassettes").glob("live-*.yaml"))
    print(report(measure(paths, args.prompts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
