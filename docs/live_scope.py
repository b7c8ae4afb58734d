"""Count issue 25's "done when" numbers on the recorded live suite, sample by sample.

    .venv/bin/python docs/live_scope.py [SCENARIO.yaml ...]   # default: scenarios/live/*.yaml
    .venv/bin/python docs/live_scope.py --stages [SCENARIO.yaml ...]  # what each stage did
    .venv/bin/python docs/live_scope.py --rounds [SCENARIO.yaml ...]  # sample 1 round by round

Each scenario's recorded samples are replayed offline (its cassette and its ``.sample-k``
files), and each sample is read stage by stage:

* **on subject**: an evidence tool call (``query_metrics``, ``query_logs``,
  ``lookup_knowledge``) names a service of the question's scope (its ``service`` argument), or,
  for a question naming no service, one of its alerts;
* **contracts**: the executor's evidence contract parsed, in every round;
* **verifier**: the verifier's answer parsed (after its one re-ask), in every round that asked
  it (a round without claims asks it too, about the answer's text);
* **leaks**: the published answer names a service outside the scope or an excluded topic
  (read from the answer text with the scope's own vocabulary: independent of which claims the
  code set aside).

The last rows count scenarios (sample 1, the cassette) and samples. Nothing here decides a
verdict; it reads :class:`~pytest_diageval.agents.results.ChatResult`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pytest_diageval.agents.reference import evidence_recall
from pytest_diageval.agents.results import ChatResult, RoundResult, ToolCallSummary
from pytest_diageval.core.contract.scope_contract import ScopeContract
from pytest_diageval.core.evidence.world import World
from pytest_diageval.core.scope.floor import named_services, named_topics
from pytest_diageval.core.text.normalised import normalise
from pytest_diageval.harness.format.loader import (
    load_scenario,
    load_scenario_world,
    resolve_cassette_path,
)
from pytest_diageval.harness.runner import run_samples
from pytest_diageval.harness.settings import RunSettings

REPOSITORY = Path(__file__).resolve().parents[1]
EVIDENCE_TOOLS = ("query_metrics", "query_logs", "lookup_knowledge")


@dataclass(frozen=True)
class SampleCount:
    verdict: str
    on_subject: bool
    contracts: bool
    verifier: bool
    leaks: tuple[str, ...]


def on_subject(result: ChatResult, scope: ScopeContract) -> bool:
    """An evidence call about a service (or, with none named, an alert) of the question."""
    return any(_on_subject(call, scope) for r in result.rounds for call in r.tool_calls)


def _on_subject(call: ToolCallSummary, scope: ScopeContract) -> bool:
    if call.name not in EVIDENCE_TOOLS or not isinstance(call.arguments, dict):
        return False
    if scope.services:
        return call.arguments.get("service") in scope.services
    return call.arguments.get("alert_name") in scope.alerts


def leaks(result: ChatResult, scope: ScopeContract, services: Iterable[str]) -> tuple[str, ...]:
    """Services outside the scope and excluded topics that the published answer names."""
    text = normalise(result.final_answer)
    named = named_services(text, sorted(services), {})
    outside = [s for s in named if scope.services and s not in scope.services]
    excluded = [t for t in named_topics(text) if t in scope.excluded]
    return tuple(dict.fromkeys([*outside, *excluded]))


def count(result: ChatResult | None, services: Iterable[str]) -> SampleCount:
    if result is None or result.scope is None:
        return SampleCount("(no run)", False, False, False, ())
    judged = [r for r in result.rounds if _asked(r)]
    return SampleCount(
        verdict=result.final_verdict or "(none)",
        on_subject=on_subject(result, result.scope),
        contracts=bool(result.rounds)
        and all(r.parse_status.status == "valid" for r in result.rounds),
        verifier=bool(judged) and all(r.verifier_output is not None for r in judged),
        leaks=leaks(result, result.scope, services),
    )


def _asked(r: RoundResult) -> bool:
    """A round that asked the verifier (it answered, or its answer failed to parse)."""
    return r.verifier_output is not None or r.verifier_failure is not None


def rounds_row(path: Path, result: ChatResult | None, world: World | None = None) -> str:
    """Sample 1 of one scenario, round by round (``--rounds``: scenarios/README's table), and
    its evidence against the reference agent's on the same question and world."""
    name = f"`{path.relative_to(REPOSITORY / 'scenarios')}`"
    if result is None or result.scope is None:
        return f"| {name} | (no run) | | | | | | |"
    scope, rounds = result.scope, result.rounds
    checked = [row for r in rounds for row in r.gatekeeper.checked_bindings]
    calls = [c for r in rounds for c in r.tool_calls if c.name in EVIDENCE_TOOLS]
    cells = [
        ", ".join(_mark(r.parse_status.status == "valid") for r in rounds),
        f"{len(checked)} / {sum(row.status == 'pass' for row in checked)}",
        ", ".join(_mark(r.verifier_output is not None) if _asked(r) else "—" for r in rounds),
        str(result.final_verdict),
        str(len(rounds)),
        f"{sum(_on_subject(c, scope) for c in calls)} of {len(calls)}",
        evidence_recall(result, world).text() if world is not None else "—",
    ]
    return f"| {name} | " + " | ".join(cells) + " |"


ROUNDS_HEADER = (
    "| scenario | contract parsed (per round) | bindings checked / passed | verifier parsed"
    " (per round; — not asked) | verdict | rounds | evidence calls on the question's"
    " subject | against the reference agent (its items cited / fetched) |"
    "\n|---|---|---|---|---|---|---|---|"
)


def results_of(path: Path) -> tuple[str, list[ChatResult | None], set[str], World]:
    scenario = load_scenario(path)
    world = load_scenario_world(scenario, path)
    services = {a.service for a in world.alerts} | {log.service for log in world.logs}
    cassette = resolve_cassette_path(scenario, path, REPOSITORY / "cassettes")
    runs = run_samples(
        scenario, path, cassette=cassette, settings=RunSettings(), command=lambda mode: ""
    )
    return scenario.scenario_id, [run.result for run in runs], services, world


def stages(result: ChatResult | None) -> Iterator[str]:
    """One line per round of one sample: plan, evidence calls, contract, verifier, verdict."""
    if result is None:
        yield "did not run"
        return
    for r in result.rounds:
        plan = "none" if r.plan is None else r.plan.plan[:60]
        calls = ", ".join(
            f"{c.name}({_arguments(c.arguments)})" for c in r.tool_calls if c.name in EVIDENCE_TOOLS
        )
        contract = r.executor_contract
        claims = "no contract" if contract is None else f"{len(contract.claims)} claim(s)"
        aside = f", {len(r.set_aside)} set aside" if r.set_aside else ""
        verifier: str = "none" if r.verifier_output is None else r.verifier_output.verdict
        if r.verifier_failure:
            verifier = f"failed ({r.verifier_failure[:40]})"
        yield (
            f"round {r.round}: plan: {plan}; calls: {calls or 'none'}; contract: "
            f"{r.parse_status.status}, {claims}{aside}; verifier: {verifier}; "
            f"code: {r.decision.derived_verdict} {r.decision.derived_score}"
        )
    yield f"final: {result.final_verdict} {result.final_score} ({result.answer_kind})"


def _arguments(arguments: dict[str, object] | str) -> str:
    if isinstance(arguments, str):
        return arguments[:40]
    return ", ".join(f"{k}={v}" for k, v in arguments.items() if k in ("service", "alert_name"))


def _mark(value: bool) -> str:
    return "yes" if value else "no"


def table(rows: list[tuple[str, list[SampleCount]]]) -> Iterator[str]:
    yield "| scenario | verdicts | on subject | contracts parsed | verifier parsed | leaks |"
    yield "| --- | --- | --- | --- | --- | --- |"
    for scenario_id, samples in rows:
        cells = [
            " · ".join(s.verdict for s in samples),
            " · ".join(_mark(s.on_subject) for s in samples),
            " · ".join(_mark(s.contracts) for s in samples),
            " · ".join(_mark(s.verifier) for s in samples),
            "; ".join(", ".join(s.leaks) for s in samples if s.leaks) or "none",
        ]
        yield f"| {scenario_id} | " + " | ".join(cells) + " |"
    firsts = [samples[0] for _, samples in rows if samples]
    every = [s for _, samples in rows for s in samples]
    for label, group in (("scenarios (sample 1)", firsts), ("all samples", every)):
        yield (
            f"| **{label}** | {len(group)} | {sum(s.on_subject for s in group)}/{len(group)} | "
            f"{sum(s.contracts for s in group)}/{len(group)} | "
            f"{sum(s.verifier for s in group)}/{len(group)} | "
            f"{sum(bool(s.leaks) for s in group)} with a leak |"
        )


def main(argv: list[str]) -> int:
    show_stages, show_rounds = "--stages" in argv, "--rounds" in argv
    paths = [Path(a).resolve() for a in argv if not a.startswith("--")]
    paths = paths or sorted((REPOSITORY / "scenarios" / "live").glob("*.yaml"))
    rows, round_rows = [], []
    for path in paths:
        scenario_id, results, services, world = results_of(path)
        rows.append((scenario_id, [count(result, services) for result in results]))
        round_rows.append(rounds_row(path, results[0] if results else None, world))
        for sample, result in enumerate(results, start=1) if show_stages else ():
            print(f"{scenario_id} sample {sample}:")
            print("\n".join(f"  {line}" for line in stages(result)))
    lines = [ROUNDS_HEADER, *round_rows] if show_rounds else list(table(rows))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
