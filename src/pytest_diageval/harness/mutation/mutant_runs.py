"""Running a mutant: the scenario's own answers, with one contract or verifier output forged.

A mutant runs the real :class:`ChatService` against the scripted model, never the network.
What answers each request:

* **Scripted scenarios**: the scenario's script, entry for entry, except that the last
  executor contract (or the last verifier output, for a verifier mutant) is the mutant's.
* **Cassette scenarios**: the cassette's recorded answers, in recorded order, up to the last
  executor contract (the scenario's own replay has just shown the requests match). A
  recording made for other inputs cannot answer what comes after a mutated contract, so its
  verifier is the *worst-case verifier* (``worst_case_verifier``: every claim a
  critical ``direct_evidence`` fact, verdict PASS). A verifier mutant changes nothing before
  the verifier, so it mutates the recorded verifier output.
* **A retry round the scenario never had** (the mutant drove round 1 to LOW_CONFID < 0.5) is
  answered like the mutated round again: the model persists in its forgery.
* **Runbook mutants** of a session that looked up no runbook add one ``lookup_knowledge``
  call to the last tool-call turn of that round, so that the quote they cite is real.

The mutant is *killed* when the run completes with any verdict but PASS and *survives* when
it ends PASS (an ``extra-sentence`` mutant only when its sentence is also in the answer). A
mutant that edits only what the models wrote (the statement kinds, ``extra-sentence`` and
``prose-rewrite``) also survives, whatever the verdict, when its answer holds the canary or an
evidence line the unmutated run did not render (the model points, the code speaks). A
request the answers above cannot serve fails the mutant as an error: neither killed nor
survived.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from pytest_diageval.agents.chat_service import ChatService
from pytest_diageval.agents.executor import ExecutorBudget
from pytest_diageval.agents.llm import ROUND_HEADER, STAGE_HEADER
from pytest_diageval.agents.results import ChatResult
from pytest_diageval.agents.scripted.forced_call import structured_answer_call
from pytest_diageval.agents.scripted.model import ScriptEntry, ScriptError, scripted_llm
from pytest_diageval.core.answer.confirmed import SOURCE_TAG_RE
from pytest_diageval.core.contract.contracts import ExecutorContract, ToolTraceSummaryItem
from pytest_diageval.core.contract.evidence_tools import LOOKUP_KNOWLEDGE
from pytest_diageval.core.evidence.recorder import extract_evidence_refs
from pytest_diageval.core.evidence.tools import Toolbox
from pytest_diageval.core.evidence.world import World
from pytest_diageval.core.text.excerpt_tokens import NEGATION_WORDS
from pytest_diageval.harness.mutation.kinds import ANSWER_KINDS, PROSE_CANARY, STATEMENT_KINDS
from pytest_diageval.harness.mutation.mutants import Mutant, MutationBase, RunbookQuote
from pytest_diageval.harness.mutation.planted import plant

__all__ = [
    "MutantOutcome",
    "MutationSetupError",
    "ReplayPlan",
    "plan_replay",
    "run_mutant",
    "worst_case_verifier",
]

Data = dict[str, Any]
RUNBOOK_TOOL = LOOKUP_KNOWLEDGE


class MutationSetupError(Exception):
    """The scenario's run cannot be replayed for mutants (the message says why)."""


@dataclass(frozen=True)
class ReplayPlan:
    """Everything a mutant run of one scenario needs, built once from the unmutated replay."""

    scenario_id: str
    query: str
    world: World
    entries: tuple[ScriptEntry, ...]
    rounds: tuple[int, ...]
    from_cassette: bool
    baseline: ChatResult
    base: MutationBase

    @property
    def contract_index(self) -> int:
        return max(i for i, entry in enumerate(self.entries) if entry.stage == "executor")

    @property
    def last_round_start(self) -> int:
        return self.rounds.index(self.rounds[-1])

    @property
    def trace_summary(self) -> list[ToolTraceSummaryItem]:
        last = self.baseline.last_round
        return [] if last is None else list(last.tool_trace_summary)


@dataclass(frozen=True)
class MutantOutcome:
    """What the pipeline made of one mutant."""

    status: Literal["killed", "survived", "error"]
    result: ChatResult | None
    detail: str = ""

    @property
    def verdict(self) -> str:
        if self.result is None or self.result.final_verdict is None:
            return "—"
        return self.result.final_verdict


# --------------------------------------------------------------------------- planning


def plan_replay(
    scenario_id: str, query: str, world: World, entries: Sequence[ScriptEntry], *, cassette: bool
) -> ReplayPlan | None:
    """Replay the unmutated answers; ``None`` when that run does not reach PASS. A grader's
    answers (a ``rubric`` check, asked after the pipeline) are left out: a mutant is judged
    by the code's verdict alone."""
    entries = [entry for entry in entries if entry.stage != "grader"]
    try:
        result, rounds = _run(scenario_id, query, world, entries)
    except ScriptError as exc:
        raise MutationSetupError(f"the unmutated replay fails: {exc}") from None
    if len(rounds) != len(entries):
        unused = len(entries) - len(rounds)
        raise MutationSetupError(f"the unmutated replay leaves {unused} answer(s) unused")
    if result.final_verdict != "PASS":
        return None
    last = result.last_round
    assert last is not None
    if last.executor_contract is None or last.verifier_output is None:
        raise MutationSetupError("the PASS round has no parsed contract or verifier output")
    base = MutationBase(
        contract=last.executor_contract,
        verifier=last.verifier_output,
        invocations=result.invocations,
        services=world_services(world),
        runbook=_runbook_quote(world, result, entries, rounds),
        aliases=world.aliases,
    )
    return ReplayPlan(
        scenario_id, query, world, tuple(entries), tuple(rounds), cassette, result, base
    )


def world_services(world: World) -> list[str]:
    """Every service the world knows, sorted (the candidates of ``other-service``)."""
    return sorted({alert.service for alert in world.alerts} | {log.service for log in world.logs})


def cassette_entries(path: Path) -> list[ScriptEntry]:
    """A cassette's recorded answers as script entries, in recorded order."""
    data = yaml.safe_load(path.read_text("utf-8")) or {}
    entries = []
    for number, interaction in enumerate(data.get("interactions") or [], start=1):
        try:
            entries.append(_recorded_entry(interaction))
        except (KeyError, TypeError, ValueError) as exc:
            raise MutationSetupError(
                f"cassette {path}: interaction {number} cannot be served to a mutant: {exc}"
            ) from None
    return entries


def _recorded_entry(interaction: Data) -> ScriptEntry:
    request, response = interaction["request"], interaction["response"]
    stage = _header(request, STAGE_HEADER)
    body = yaml.safe_load(request["body"]) if isinstance(request["body"], str) else {}
    message = yaml.safe_load(response["body"]["string"])["choices"][0]["message"]
    calls = message.get("tool_calls") or []
    structured = structured_answer_call(body, calls)
    if structured is not None:
        return ScriptEntry(stage=stage, raw_arguments=structured["function"]["arguments"])
    if calls:
        return ScriptEntry(
            stage=stage,
            tool_calls=[{"name": c["function"]["name"], "arguments": _arguments(c)} for c in calls],
        )
    return ScriptEntry(stage=stage, raw=message.get("content") or "")


def _arguments(call: Data) -> Data:
    arguments = yaml.safe_load(call["function"]["arguments"] or "{}")
    if not isinstance(arguments, dict):
        raise ValueError(f"tool call {call['function']['name']} has no JSON object arguments")
    return arguments


def _header(request: Data, name: str) -> str:
    values = (request.get("headers") or {}).get(name.lower()) or [""]
    return str(values[0])


def _runbook_quote(
    world: World, result: ChatResult, entries: Sequence[ScriptEntry], rounds: Sequence[int]
) -> RunbookQuote | str:
    """The session's first runbook ref, or the one a lookup added to the last turn gives."""
    for row in result.invocations:
        refs = row.retrieval_details.evidence_refs if row.retrieval_details else None
        if row.tool_name == RUNBOOK_TOOL and row.success and refs:
            return RunbookQuote(_binding(row.id, refs[0].raw_path, refs[0].text))
    if any(row.tool_name == RUNBOOK_TOOL for row in result.invocations):
        return "the session's runbook lookup found nothing to quote"
    turn = _last_tool_turn(entries, rounds)
    if turn is None:
        return "the executor made no tool call in the PASS round to add a runbook lookup to"
    calls_in_round = sum(
        len(e.tool_calls or []) for e, r in zip(entries, rounds, strict=True) if r == rounds[-1]
    )
    if calls_in_round >= ExecutorBudget().max_tool_calls:
        return "the executor's tool-call budget leaves no room for a runbook lookup"
    doc = _relevant_runbook(world, result)
    if doc is None:
        return "the world has no runbook to quote"
    arguments = {"query": doc}
    call = {"name": RUNBOOK_TOOL, "arguments": arguments}
    try:
        output = Toolbox(world).call(RUNBOOK_TOOL, arguments)
    except Exception as exc:  # the world injects a failure into lookup_knowledge
        return f"a runbook lookup for {doc!r} fails in this world: {exc}"
    refs = extract_evidence_refs(RUNBOOK_TOOL, output)
    if not refs:
        return f"a runbook lookup for {doc!r} finds nothing to quote"
    next_id = max((row.id for row in result.invocations), default=0) + 1
    return RunbookQuote(_binding(next_id, refs[0].raw_path, refs[0].text), call)


def _relevant_runbook(world: World, result: ChatResult) -> str | None:
    """The alert name (or title) of the runbook about what the answer speaks of."""
    last = result.last_round
    text = "" if last is None or last.executor_contract is None else last.executor_final_answer
    keys = [doc.alert_name or doc.title for doc in world.knowledge]
    return next((key for key in keys if key in text), keys[0] if keys else None)


def _binding(invocation_id: int, raw_path: str, text: str) -> Data:
    return {
        "tool_name": RUNBOOK_TOOL,
        "source_invocation_id": invocation_id,
        "raw_path": raw_path,
        "evidence_excerpt": text,
    }


def _last_tool_turn(entries: Sequence[ScriptEntry], rounds: Sequence[int]) -> int | None:
    last = rounds[-1]
    turns = [
        i
        for i, e in enumerate(entries)
        if rounds[i] == last and e.stage == "executor" and e.tool_calls
    ]
    return turns[-1] if turns else None


# --------------------------------------------------------------------------- running


def run_mutant(plan: ReplayPlan, mutant: Mutant) -> MutantOutcome:
    """Run one (non-equivalent) mutant through the pipeline and judge it."""
    entries = mutant_entries(plan, mutant)
    world = plan.world
    if mutant.planted is not None:
        planted = plant(world, *mutant.planted)
        if planted is None:
            return MutantOutcome("error", None, "the cited item is not an item of the world")
        world = planted
    try:
        result, _ = _run(plan.scenario_id, plan.query, world, entries)
    except ScriptError as exc:
        return MutantOutcome("error", None, f"the mutant run asked what no answer serves: {exc}")
    if result.status != "completed":
        return MutantOutcome("error", result, f"the mutant run ended in error: {result.error}")
    published = mutant.forged_text is None or is_published(mutant.forged_text, result.final_answer)
    survived = result.final_verdict == "PASS" and published
    if mutant.kind in PROSE_KINDS:
        # Whatever the verdict: the model's words are never published, and they never add
        # an evidence line the unmutated run did not render (issue 36).
        added = confirmed_lines(result.final_answer) - confirmed_lines(plan.baseline.final_answer)
        survived = survived or bool(added) or PROSE_CANARY in result.final_answer
    return MutantOutcome("survived" if survived else "killed", result)


PROSE_KINDS = frozenset({*STATEMENT_KINDS, *ANSWER_KINDS})
"""The kinds that edit only what the models wrote (their citations unchanged)."""


def confirmed_lines(answer: str) -> set[str]:
    """The evidence lines of an answer: each names its source in a tag only code writes."""
    return {line for line in answer.splitlines() if SOURCE_TAG_RE.search(line)}


_NEGATIONS = tuple(word for word in NEGATION_WORDS if not word.isascii())  # the edits' own


def is_published(forged: str, answer: str) -> bool:
    """Whether the answer states the forged text: an occurrence right after a negation is the
    original statement, not the forgery ("检索到 X" inside "未检索到 X" is not published)."""
    start = answer.find(forged)
    while start >= 0:
        if not answer[:start].endswith(_NEGATIONS):
            return True
        start = answer.find(forged, start + 1)
    return False


def mutant_entries(plan: ReplayPlan, mutant: Mutant) -> list[ScriptEntry]:
    """The answers of one mutant run (see the module docstring)."""
    entries = list(plan.entries)
    verifiers = [
        i for i in range(plan.contract_index + 1, len(entries)) if entries[i].stage == "verifier"
    ]
    if mutant.extra_call is not None:
        turn = _last_tool_turn(entries, plan.rounds)
        assert turn is not None  # the runbook quote was only offered with a turn to extend
        calls = [*(entries[turn].tool_calls or []), mutant.extra_call]
        entries[turn] = ScriptEntry(stage="executor", tool_calls=calls)
    verifier_answer: Data | None = mutant.verifier
    if mutant.contract is not None:
        entries[plan.contract_index] = ScriptEntry(stage="executor", content=mutant.contract)
        if plan.from_cassette:
            contract = ExecutorContract.model_validate(mutant.contract)
            verifier_answer = worst_case_verifier(contract, plan.trace_summary)
    if verifier_answer is not None and verifiers:
        entries[verifiers[0] : verifiers[-1] + 1] = [
            ScriptEntry(stage="verifier", content=verifier_answer)
        ]
    if plan.rounds[-1] == 1:  # a retry round the scenario never had: the forgery again
        entries += entries[plan.last_round_start :]
    return entries


def _run(
    scenario_id: str, query: str, world: World, entries: Sequence[ScriptEntry]
) -> tuple[ChatResult, list[int]]:
    llm, transport = scripted_llm(entries)
    with llm:
        result = ChatService().run(query, world, llm, session_id=scenario_id)
    if transport.errors:
        raise transport.errors[0]
    rounds = [int(request.headers.get(ROUND_HEADER.lower(), "0")) for request in transport.requests]
    return result, rounds


def worst_case_verifier(
    contract: ExecutorContract, trace_summary: Sequence[ToolTraceSummaryItem]
) -> dict[str, Any]:
    """The verifier a cassette mutant meets after its contract: every claim one critical
    ``direct_evidence`` fact citing the trace entries of what the claim binds (or every entry
    when it binds nothing that exists), verdict PASS, score 1.0. A recording made for other
    inputs cannot answer a mutated request; this is the worst case a guard must withstand."""
    facts = []
    for claim in contract.claims:
        cited = {b.source_invocation_id for b in claim.evidence_bindings}
        items = [i for i in trace_summary if cited & set(i.source_invocation_ids)]
        facts.append(
            {
                "fact": claim.claim_text,
                "claim_id": claim.claim_id,
                "is_critical": True,
                "verification": "direct_evidence",
                "detail": "worst-case verifier: every fact is labelled direct evidence",
                "evidence_refs": [
                    {"trace_ref": i.trace_ref, "source_invocation_ids": i.source_invocation_ids}
                    for i in (items or trace_summary)
                ],
            }
        )
    return {
        "verdict": "PASS",
        "groundedness_score": 1.0,
        "critical_fact_count": len(facts),
        "facts_checked": facts,
        "rationale": "worst-case verifier: says PASS whatever it is shown",
    }
