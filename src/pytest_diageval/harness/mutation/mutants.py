"""Mutants of a PASS: forged variants of the last executor contract and of the verifier output.

``derive_mutants`` is pure: from the contract and verifier output of a PASS, the session's real
invocations and the world's services, it derives one mutant per kind and citation, in a fixed
order, as the JSON the model would have sent (or, for a planted injection, the world item to
edit). Running them is :mod:`.replay`'s job; the kinds and their seed rules are :mod:`.kinds`.

A mutation with nothing to work on (no digit, no runbook, ...) or one identical to an earlier
mutant changes nothing new: it is *equivalent by construction*, kept with the reason, not run.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_diageval.core.contract.contracts import (
    EVIDENCE_TOOLS,
    ExecutorContract,
    ToolInvocation,
    VerifierOutput,
)
from pytest_diageval.harness.mutation.citation_edits import (
    change_digit,
    describe_binding,
    flip_negation,
    index_plus_one,
    is_incident,
    refs,
    subject,
    text_at,
)
from pytest_diageval.harness.mutation.kinds import (
    ANSWER_KINDS,
    BINDING_KINDS,
    CLAIM_KINDS,
    EVIDENCE_KINDS,
    EXTRA_SENTENCE,
    KINDS,
    POINT_FLIPS,
    POINT_KINDS,
    PROSE_CANARY,
    SEED_RULES,
    STATEMENT_KINDS,
)
from pytest_diageval.harness.mutation.planted import planting
from pytest_diageval.harness.mutation.statement_edits import StatementEdit, statement_edits

__all__ = [
    "ANSWER_KINDS",
    "BINDING_KINDS",
    "CLAIM_KINDS",
    "EVIDENCE_KINDS",
    "EXTRA_SENTENCE",
    "KINDS",
    "POINT_KINDS",
    "PROSE_CANARY",
    "SEED_RULES",
    "STATEMENT_KINDS",
    "Mutant",
    "MutationBase",
    "RunbookQuote",
    "derive_mutants",
]

Data = dict[str, Any]

_RUNBOOK_KINDS = frozenset({"runbook-quote", "runbook-only"})


@dataclass(frozen=True)
class MutationBase:
    """What the mutants are derived from: the last round of a run that reached PASS."""

    contract: ExecutorContract
    verifier: VerifierOutput
    invocations: Sequence[ToolInvocation]
    services: Sequence[str]
    runbook: RunbookQuote | str
    """The runbook quote the runbook kinds cite, or why there is none."""
    aliases: Mapping[str, Sequence[str]] = dataclasses.field(default_factory=dict)
    """The world's service aliases (service -> names), for ``statement-alias``."""


@dataclass(frozen=True)
class RunbookQuote:
    """A real runbook quote: a binding, plus the ``lookup_knowledge`` call a mutant must add
    to the last tool-call turn when the session made none (``None``: the session has it)."""

    binding: Data
    call: Data | None = None


@dataclass(frozen=True)
class Mutant:
    """One mutant: the contract and/or verifier output to serve instead of the real ones."""

    kind: str
    claim: str
    binding: str
    change: str
    contract: Data | None = None
    verifier: Data | None = None
    extra_call: Data | None = None
    equivalent: str | None = None
    forged_text: str | None = None
    """Text whose publication is the harm (``extra-sentence``); ``None``: a PASS is the harm."""
    planted: tuple[str, str] | None = None
    """(cited item's text, injection appended to it in the world): ``planted-injection``."""

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.claim}-{self.binding}"

    @property
    def seed_rule(self) -> str:
        return SEED_RULES[self.kind]


# A mutation returns (what changed, new contract, new verifier output), or a reason string
# when it changes nothing.
_Changed = tuple[str, Data | None, Data | None]
_Outcome = _Changed | str


def derive_mutants(base: MutationBase) -> list[Mutant]:
    """Every mutant of ``base``, in claim, binding, kind order; duplicates marked equivalent."""
    contract = base.contract.model_dump(mode="json", exclude_none=True)
    verifier = base.verifier.model_dump(mode="json", exclude_none=True)
    context = _Context(base, contract, verifier)
    mutants: list[Mutant] = []
    seen: dict[str, str] = {}
    for kind, claim, binding, outcome in context.outcomes():
        extra_call = context.runbook_call if kind in _RUNBOOK_KINDS else None
        mutant = _mutant(kind, claim, binding, outcome, extra_call)
        forged = context.forged.get((kind, claim, binding))
        if mutant.equivalent is None and forged is not None:
            mutant = dataclasses.replace(mutant, forged_text=forged)
        if mutant.equivalent is None:
            planted = context.planted.get((kind, claim, binding))
            mutant = dataclasses.replace(mutant, planted=planted)
            forgery = [mutant.contract, mutant.verifier, mutant.extra_call, mutant.planted]
            key = json.dumps(forgery, sort_keys=True)
            if key in seen:
                mutant = _mutant(kind, claim, binding, f"identical to mutant[{seen[key]}]")
            else:
                seen[key] = mutant.name
        mutants.append(mutant)
    return mutants


def _mutant(
    kind: str, claim: str, binding: str, outcome: _Outcome, extra_call: Data | None = None
) -> Mutant:
    if isinstance(outcome, str):
        return Mutant(kind, claim, binding, change="nothing", equivalent=outcome)
    change, contract, verifier = outcome
    if extra_call is not None:
        change += " (the runbook lookup added to the last tool-call turn)"
    return Mutant(kind, claim, binding, change, contract, verifier, extra_call)


# --------------------------------------------------------------------------- the kinds


class _Context:
    """The base as JSON plus the lookups the mutations share."""

    def __init__(self, base: MutationBase, contract: Data, verifier: Data) -> None:
        self.contract = contract
        self.verifier = verifier
        self.invocations = {row.id: row for row in base.invocations}
        self.services = list(base.services)
        quote = base.runbook
        self.runbook = None if isinstance(quote, str) else quote.binding
        self.no_runbook = quote if isinstance(quote, str) else ""
        self.runbook_call = None if isinstance(quote, str) else quote.call
        self.claim_tokens = _claim_tokens(contract["claims"])
        answer = contract.get("user_facing_answer", "")
        service = next((s for s in self.services if s in answer), None)
        service = service or (self.services[0] if self.services else "the service")
        self.extra_sentence = EXTRA_SENTENCE.format(service=service)
        self.statement_edits = statement_edits(self.services, base.aliases)
        # (kind, claim, binding) -> the text whose publication is the mutant's harm
        self.forged: dict[tuple[str, str, str], str] = {
            ("extra-sentence", "answer", "all"): self.extra_sentence
        }
        # (kind, claim, binding) -> (cited item's text, injection planted into it)
        self.planted: dict[tuple[str, str, str], tuple[str, str]] = {}

    def outcomes(self) -> Iterator[tuple[str, str, str, _Outcome]]:
        binding_kinds: dict[str, Callable[[Data, Data], _Outcome]] = {
            "other-invocation": self._other_invocation,
            "other-path": lambda b, _: self._other_path(b),
            "index-plus-one": lambda b, _: index_plus_one(b),
            "digit-first": lambda b, _: change_digit(b, first=True),
            "digit-last": lambda b, _: change_digit(b, first=False),
            "tool-swap": lambda b, _: self._tool_swap(b),
            "runbook-quote": self._runbook_quote,
            "negation-flip": lambda b, _: flip_negation(b),
            "other-service": lambda b, _: self._other_service(b),
        }
        for index, claim in enumerate(self.contract["claims"]):
            token = self.claim_tokens[index]
            for number in range(len(claim.get("evidence_bindings", []))):
                for kind, mutate in binding_kinds.items():
                    yield kind, token, str(number), self._on_binding(index, number, mutate)
                yield "planted-injection", token, str(number), self._plant(token, claim, number)
            yield "runbook-only", token, "all", self._runbook_only(index)
            yield "unbound", token, "all", self._unbound(index)
            yield "reattributed", token, "all", self._reattributed(index)
            yield "demoted", token, "all", self._demoted(index)
            for number in range(len(claim.get("points") or [])):
                yield "point-flip", token, str(number), self._point_flip(index, number)
            for kind, edit in self.statement_edits.items():
                for target in ("answer", "text"):
                    yield kind, token, target, self._statement(kind, index, target, edit)
        yield "extra-sentence", "answer", "all", self._extra_sentence()
        yield "prose-rewrite", "answer", "all", self._prose_rewrite()

    # ----------------------------------------------------------------- per binding

    def _plant(self, token: str, claim: Data, number: int) -> _Outcome:
        binding = claim["evidence_bindings"][number]
        cited = self.invocations.get(binding.get("source_invocation_id"))
        planted = planting(cited, binding.get("raw_path"), f"{token}-{number}")
        if isinstance(planted, str):
            return planted
        change, self.planted[("planted-injection", token, str(number))] = planted
        return change, None, None

    def _on_binding(
        self, claim: int, number: int, mutate: Callable[[Data, Data], _Outcome]
    ) -> _Outcome:
        contract = copy.deepcopy(self.contract)
        binding = contract["claims"][claim]["evidence_bindings"][number]
        outcome = mutate(binding, contract["claims"][claim])
        if isinstance(outcome, str):
            return outcome
        return outcome[0], contract, None

    def _other_invocation(self, binding: Data, claim: Data) -> _Outcome:
        own = binding.get("source_invocation_id")
        cited = self.invocations.get(own)  # type: ignore[arg-type]
        path = binding.get("raw_path")
        others = [r for r in self.invocations.values() if r.id != own]
        forged = [r for r in others if cited is None or text_at(r, path) != text_at(cited, path)]
        if not forged:
            return "every other invocation holds the same text at this path"
        own_tool = None if cited is None else cited.tool_name
        target = next((r for r in forged if r.tool_name == own_tool), forged[0])
        binding["source_invocation_id"] = target.id
        return f"source_invocation_id {own} → {target.id} ({target.tool_name})", None, None

    def _other_service(self, binding: Data) -> _Outcome:
        own = binding.get("source_invocation_id")
        cited = self.invocations.get(own)  # type: ignore[arg-type]
        if cited is None:
            return "the binding cites no invocation of the session"
        path = binding.get("raw_path")
        same_text = [
            r
            for r in self.invocations.values()
            if text_at(r, path) == text_at(cited, path) and subject(r) != subject(cited)
        ]
        if not same_text:
            return "no invocation about another service holds the same text at this path"
        target = same_text[0]
        binding["source_invocation_id"] = target.id
        return (
            f"source_invocation_id {own} → {target.id}: the same text, about"
            f" {subject(target)} instead of {subject(cited)}",
            None,
            None,
        )

    def _other_path(self, binding: Data) -> _Outcome:
        row = self.invocations.get(binding.get("source_invocation_id"))  # type: ignore[arg-type]
        own = binding.get("raw_path")
        paths = [ref.raw_path for ref in refs(row) if ref.raw_path != own]
        if not paths:
            return "the cited invocation has no other evidence ref"
        binding["raw_path"] = paths[0]
        return f"raw_path {own} → {paths[0]} (same invocation)", None, None

    def _tool_swap(self, binding: Data) -> _Outcome:
        own = binding.get("tool_name")
        used = [row.tool_name for row in self.invocations.values()]
        candidates = [t for t in [*used, *EVIDENCE_TOOLS] if t != own and t in EVIDENCE_TOOLS]
        binding["tool_name"] = candidates[0]
        return f"tool_name {own} → {candidates[0]}", None, None

    def _runbook_quote(self, binding: Data, claim: Data) -> _Outcome:
        if self.runbook is None:
            return self.no_runbook
        if not is_incident(binding, self.invocations):
            return "the binding cites no incident evidence (metrics, logs)"
        others = [b for b in claim["evidence_bindings"] if b is not binding]
        if any(is_incident(other, self.invocations) for other in others):
            # The claim's support rests on any passing incident binding: one more runbook
            # citation beside it changes nothing a guard may judge.
            return "the claim keeps another incident binding"
        before = describe_binding(binding)
        binding.clear()
        binding.update(self.runbook)
        return f"{before} → runbook quote {describe_binding(binding)}", None, None

    # ----------------------------------------------------------------- per claim

    def _runbook_only(self, index: int) -> _Outcome:
        if self.runbook is None:
            return self.no_runbook
        contract = copy.deepcopy(self.contract)
        claim = contract["claims"][index]
        if claim.get("evidence_bindings") == [self.runbook]:
            return "the claim already binds only the runbook quote"
        claim["evidence_bindings"] = [dict(self.runbook)]
        return (
            f"bindings → only the runbook quote {describe_binding(self.runbook)}",
            contract,
            None,
        )

    def _unbound(self, index: int) -> _Outcome:
        contract = copy.deepcopy(self.contract)
        claim = contract["claims"][index]
        if not claim.get("evidence_bindings") and claim.get("support_level") == "none":
            return "the claim already has no binding and support_level none"
        count = len(claim.get("evidence_bindings", []))
        claim["evidence_bindings"] = []
        claim["support_level"] = "none"
        return f"{count} binding(s) dropped, support_level → none", contract, None

    def _reattributed(self, index: int) -> _Outcome:
        contract = copy.deepcopy(self.contract)
        claim = contract["claims"][index]
        named = [s for s in self.services if s in claim["claim_text"]]
        others = [s for s in self.services if s not in claim["claim_text"]]
        if not named or not others:
            return "the claim names no service of the world, or the world has no other"
        for service in named:
            claim["claim_text"] = claim["claim_text"].replace(service, others[0])
            answer = contract.get("user_facing_answer", "")
            contract["user_facing_answer"] = answer.replace(service, others[0])
        self.forged[("reattributed", self.claim_tokens[index], "all")] = claim["claim_text"]
        return f"claim and answer say {others[0]} instead of {', '.join(named)}", contract, None

    def _demoted(self, index: int) -> _Outcome:
        claim_id = self.contract["claims"][index]["claim_id"]
        verifier = copy.deepcopy(self.verifier)
        facts = [f for f in verifier["facts_checked"] if f.get("claim_id") == claim_id]
        if all(not f["is_critical"] and f["verification"] == "no_evidence" for f in facts):
            return "the verifier has no fact about this claim that could be demoted"
        critical = sum(1 for f in facts if f["is_critical"])
        for fact in facts:
            fact["is_critical"] = False
            fact["verification"] = "no_evidence"
        verifier["critical_fact_count"] = max(0, verifier["critical_fact_count"] - critical)
        change = f"{len(facts)} verifier fact(s) of {claim_id} → no_evidence, is_critical false"
        return change, None, verifier

    def _point_flip(self, index: int, number: int) -> _Outcome:
        contract = copy.deepcopy(self.contract)
        point = contract["claims"][index]["points"][number]
        relation = point.get("relation")
        flipped = POINT_FLIPS.get(relation) if isinstance(relation, str) else None
        if flipped is None:
            return f"relation {relation!r} has no flip (it is refused as it is)"
        point["relation"] = flipped
        return f"point {number + 1}: {point.get('field')} {relation} → {flipped}", contract, None

    # ----------------------------------------------------------------- per statement

    def _statement(
        self, kind: str, index: int, target: str, edit: Callable[[str], StatementEdit]
    ) -> _Outcome:
        contract = copy.deepcopy(self.contract)
        claim = contract["claims"][index]
        edited = edit(claim["claim_text"])
        if isinstance(edited, str):
            return edited
        text, change = edited
        if kind == "statement-modality":  # the claim weakens; the answer confirms the original
            if target == "text":
                return "a weaker claim text alone asserts less: nothing to publish"
            text, claim["claim_text"] = f"已确认：{claim['claim_text']}", text
        if target == "answer":
            contract["user_facing_answer"] = contract.get("user_facing_answer", "") + text
        else:
            claim["claim_text"] = text
        self.forged[(kind, self.claim_tokens[index], target)] = text
        return f"{target}: {change} ({text!r})", contract, None

    # ----------------------------------------------------------------- the answer

    def _extra_sentence(self) -> _Outcome:
        contract = copy.deepcopy(self.contract)
        sentence = self.extra_sentence
        contract["user_facing_answer"] = contract.get("user_facing_answer", "") + sentence
        return f"user_facing_answer + {sentence!r}", contract, None

    def _prose_rewrite(self) -> _Outcome:
        """Every string the models wrote carries the canary; ids are renamed consistently, so
        the verifier's facts still name their claims. Citations stay as they are."""
        contract = copy.deepcopy(self.contract)
        verifier = copy.deepcopy(self.verifier)
        ids = {c.get("claim_id"): f"rewritten-{n}" for n, c in enumerate(contract["claims"], 1)}
        for claim in contract["claims"]:
            claim["claim_id"] = ids[claim.get("claim_id")]
            claim["claim_text"] = f"{claim.get('claim_text', '')}{PROSE_CANARY}"
        for key, field in (
            ("hypotheses", "hypothesis_text"),
            ("recommended_actions", "action_text"),
            ("missing_info", "description"),
        ):
            for entry in contract.get(key, []):
                entry[field] = f"{entry.get(field, '')}{PROSE_CANARY}"
        for hypothesis in contract.get("hypotheses", []):
            hypothesis["basis_claim_ids"] = [
                ids.get(i, i) for i in hypothesis.get("basis_claim_ids", [])
            ]
        for key in ("diagnosis_summary", "user_facing_answer"):
            contract[key] = f"{contract.get(key, '')}{PROSE_CANARY}"
        for fact in verifier.get("facts_checked", []):
            fact["fact"] = f"{fact.get('fact', '')}{PROSE_CANARY}"
            fact["detail"] = f"{fact.get('detail', '')}{PROSE_CANARY}"
            if fact.get("claim_id") in ids:
                fact["claim_id"] = ids[fact["claim_id"]]
        verifier["rationale"] = f"{verifier.get('rationale', '')}{PROSE_CANARY}"
        self.forged[("prose-rewrite", "answer", "all")] = PROSE_CANARY
        return f"every model-written string + {PROSE_CANARY!r}", contract, verifier


# --------------------------------------------------------------------------- helpers


def _claim_tokens(claims: Sequence[Data]) -> list[str]:
    """Claim ids as node-id tokens: the id itself when it is a clean, unique token."""
    raw = [str(claim.get("claim_id", "")) for claim in claims]
    tokens = []
    for index, claim_id in enumerate(raw):
        clean = re.fullmatch(r"[\w.]+(?:-[\w.]+)*", claim_id) and raw.count(claim_id) == 1
        tokens.append(claim_id if clean else f"claim{index + 1}")
    return tokens
