"""Re-pin the live scenarios from their recordings, and write in each file's notes what the model
did.

    .venv/bin/python docs/live_pin.py "RECORDING SENTENCE" [SCENARIO.yaml ...]

Each scenario's recorded samples are replayed offline (:func:`live_scope.results_of`); then its
``expect`` is rewritten:

* ``verdict``: every verdict the samples reached (one value, or a list when they disagree);
* ``forbidden_keywords`` (``live-matrix-NN``): matrix NN's full 004 list, from
  ``scenarios/matrix/NN-*.yaml``;
* ``answer_forbidden_keywords``: kept as written (they say what the answer must never say);
* ``set_aside``: the final round's set-aside claims, refused calls and withheld plan steps,
  only when every sample agrees on them.

The notes keep the file's purpose (the text before its first "Recorded on" / "Re-recorded"),
then the recording sentence given, the samples' verdicts, and sample 1 stage by stage. Nothing
here decides a verdict: it writes down what the replay reached.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import yaml
from live_scope import REPOSITORY, results_of

from pytest_diageval.agents.results import ChatResult, RoundResult
from pytest_diageval.harness.checks.evidence_lines import refused_calls

_RECORDED = re.compile(r"(Re-)?[Rr]ecorded on 20\d\d-|Re-recorded|recorded once")


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    sentence, paths = argv[0], [Path(a).resolve() for a in argv[1:]]
    for path in paths or sorted((REPOSITORY / "scenarios" / "live").glob("*.yaml")):
        _, results, _, _ = results_of(path)
        runs = [r for r in results if r is not None]
        if len(runs) != len(results) or not runs:
            print(f"{path.name}: a sample did not run; not pinned")
            continue
        path.write_text(pinned(path.read_text("utf-8"), runs, sentence), "utf-8")
        print(f"{path.name}: {' · '.join(str(r.final_verdict) for r in runs)}")
    return 0


def pinned(text: str, runs: list[ChatResult], sentence: str) -> str:
    """The scenario ``text`` with its notes and ``expect`` rewritten from ``runs``."""
    old = yaml.safe_load(text)
    head = text.split("\nexpect:\n", 1)[0]
    start, end = head.index("\nnotes: ") + 1, head.index("\nquery: ") + 1
    text_of_notes = _notes(old.get("notes", ""), runs, sentence, str(old["id"]))
    notes = "\n".join(textwrap.wrap(text_of_notes, 96, break_on_hyphens=False))
    head = head[:start] + "notes: >-\n" + textwrap.indent(notes, "  ") + "\n" + head[end:]
    return head + "\nexpect:\n" + "".join(f"  {line}\n" for line in _expect(old, runs))


def _notes(old: str, runs: list[ChatResult], sentence: str, scenario_id: str) -> str:
    cut = _RECORDED.search(old)
    purpose = old[: cut.start()].strip() if cut else old.strip()
    verdicts = " · ".join(str(r.final_verdict) for r in runs)
    first = runs[0]
    parts = [purpose, f"{sentence}, {len(runs)} sample(s): verdicts {verdicts}."]
    parts += ["Sample 1, stage by stage:", *(_round(r) for r in first.rounds)]
    parts.append(f"Final verdict {first.final_verdict} ({first.answer_kind} answer).")
    if _matrix_list(scenario_id):
        parts.append(
            f"forbidden_keywords is matrix {scenario_id[12:14]}'s full 004 list: no claim of"
            " any round and not the answer may say one."
        )
    parts.append(
        "The verdict pin is every verdict the recorded samples reach on replay; what a stage"
        " said is in the notes, not pinned."
    )
    return " ".join(part for part in parts if part)


def _round(r: RoundResult) -> str:
    plan = "none" if r.plan is None else f'"{r.plan.plan[:60]}"'
    withheld = f", {len(r.plan_set_aside)} step(s) withheld" if r.plan_set_aside else ""
    calls = "; ".join(_call(c.name, c.arguments, c.error) for c in r.tool_calls) or "none"
    contract = r.executor_contract
    if contract is None:
        made = f"no contract ({r.parse_status.detail[:90]})"
    else:
        made = f"contract parsed, {len(contract.claims)} claim(s)"
        if r.set_aside:
            made += ", set aside: " + ", ".join(
                f"{c.claim_id} ({', '.join(c.rules)})" for c in r.set_aside
            )
    gate = r.gatekeeper
    failed = f" ({', '.join(gate.failed_rules)})" if gate.failed_rules else ""
    verifier = (
        f"verifier said {r.verifier_output.verdict}"
        if r.verifier_output is not None
        else f"verifier unusable ({(r.verifier_failure or '')[:60].strip()}…)"
    )
    decision = r.decision
    bounded = (
        f"; free text at its bound: {', '.join(r.texts_at_bound)}" if r.texts_at_bound else ""
    )
    return (
        f"Round {r.round}: planner: {plan}{withheld}; executor: {calls}; {made}; gatekeeper"
        f" {gate.severity}{failed}; {verifier}; code {decision.derived_verdict}"
        f" {decision.derived_score}{bounded}."
    )


def _call(name: str, arguments: dict[str, object] | str, error: str | None) -> str:
    if isinstance(arguments, dict):
        keys = ("service", "alert_name", "keywords", "query")
        shown = ", ".join(f"{k}={v}" for k, v in arguments.items() if k in keys)
    else:
        shown = "malformed arguments"
    if error and error.startswith("scope.out_of_scope_call"):
        return f"{name}({shown}) (refused)"
    return f"{name}({shown})" + (" (invalid)" if error else "")


def _expect(old: dict[str, object], runs: list[ChatResult]) -> list[str]:
    verdicts = list(dict.fromkeys(str(r.final_verdict) for r in runs))
    lines = [f"verdict: {verdicts[0] if len(verdicts) == 1 else _flow(verdicts)}"]
    matrix = _matrix_list(str(old["id"]))
    expected = old.get("expect")
    kept = expected.get("answer_forbidden_keywords") if isinstance(expected, dict) else None
    if matrix:
        lines.append(f"forbidden_keywords: {_flow(matrix)}")
    elif kept:
        lines.append(f"answer_forbidden_keywords: {_flow(kept)}")
    aside = {_set_aside(r.rounds[-1]) for r in runs if r.rounds}
    if len(aside) == 1 and len(runs) == sum(1 for r in runs if r.rounds):
        claims, calls, steps = aside.pop()
        lines.append(
            f"set_aside: {{claims: {_flow(claims)}, calls: {_flow(calls)},"
            f" plan_steps: {_flow(steps)}}}"
        )
    return lines


def _set_aside(r: RoundResult) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    claims = tuple(sorted(c.claim_id for c in r.set_aside))
    steps = tuple(dict.fromkeys(s.step for s in r.plan_set_aside))
    return claims, tuple(refused_calls(r)), steps


def _matrix_list(scenario_id: str) -> list[str]:
    found = re.match(r"live-matrix-(\d\d)", scenario_id)
    if found is None:
        return []
    for path in (REPOSITORY / "scenarios" / "matrix").glob(f"{found[1]}-*.yaml"):
        words = yaml.safe_load(path.read_text("utf-8"))["expect"].get("forbidden_keywords")
        return list(words or [])
    return []


def _flow(items: object) -> str:
    """A YAML flow list, each item quoted only where YAML needs it."""
    values = list(items) if isinstance(items, list | tuple) else []
    return "[" + ", ".join(_item(str(v)) for v in values) + "]"


def _item(value: str) -> str:
    needs_quotes = re.search(r"[:#,\[\]{}\"'>&*!|%@`]|^[\s-]|\s$", value) or value == ""
    return json.dumps(value, ensure_ascii=False) if needs_quotes else value


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
