"""One session's scope, and the claims it sets aside.

:func:`session_scope` is the session's :class:`ScopeContract`: the floor read from the query
(:func:`~.floor.scope_floor`), in a world of :class:`ScopeNames`. The planner's proposal is a
later step: :func:`session_scope` takes it already (``proposed``) and applies it with
:func:`~.floor.narrowed`, so it can narrow the floor and never widen it.

:func:`split_claims` judges every claim of a contract with :func:`~.claims.scope_problems`,
on its text and on the items its passed bindings cite (:func:`cited_item_texts`: the
gatekeeper's passed bindings, resolved in the session's invocations' ``evidence_items``). A
claim with any finding is *set aside*: it is left out of the contract the verdict and the
answer read (never a finding, never the answer's text) and kept in the audit as a
:class:`SetAsideClaim` (its id, the rules, the reasons). What each rule then does to severity
and verdict is :mod:`pytest_diageval.core.judge.verdict`'s step 5.

:func:`checked_plan` does the same to the planner's plan before the executor sees it:
a step that names a service or alert outside the scope, or an excluded item, is
dropped (``scope.out_of_scope_plan_step``), and a plan whose sentence does so is withheld
whole; each is kept in the audit as a :class:`SetAsidePlanStep`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from pytest_diageval.core.contract.contracts import (
    Claim,
    ExecutorContract,
    FactChecked,
    GatekeeperResult,
    Plan,
    ToolInvocation,
)
from pytest_diageval.core.contract.scope_contract import DecodingScope, ScopeContract, excluded
from pytest_diageval.core.scope.claims import (
    EXCLUDED_TOPIC,
    OUT_OF_SCOPE,
    excluded_named,
    scope_problems,
)
from pytest_diageval.core.scope.floor import named_services, narrowed, scope_floor
from pytest_diageval.core.text.normalised import normalise

__all__ = [
    "OUT_OF_SCOPE_PLAN_STEP",
    "ScopeNames",
    "ScopeSplit",
    "SetAsideClaim",
    "SetAsidePlanStep",
    "about_set_aside",
    "anchored",
    "checked_plan",
    "cited_item_texts",
    "decoding_scope",
    "is_off_scope",
    "session_scope",
    "split_claims",
]


@dataclass(frozen=True)
class ScopeNames:
    """What a question and a claim can name: the world's services (with their aliases) and
    its alert names. Sorted and unique, so the scope of a query is the same on every run."""

    services: tuple[str, ...]
    alerts: tuple[str, ...] = ()
    aliases: Mapping[str, Sequence[str]] = field(default_factory=dict)
    foreign: tuple[str, ...] = ()
    """Names no question asks about (the prompts' example subjects): always out of scope."""
    alert_services: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The services each alert belongs to, in the world's alert catalog (whatever its state)."""

    @classmethod
    def of(
        cls,
        services: Sequence[str],
        alerts: Sequence[str] = (),
        aliases: Mapping[str, Sequence[str]] | None = None,
        foreign: Sequence[str] = (),
        alert_services: Iterable[tuple[str, str]] = (),
    ) -> ScopeNames:
        """``alert_services``: ``(alert_name, service)`` pairs, one per alert of the catalog."""
        owners: dict[str, set[str]] = {}
        for alert, service in alert_services:
            owners.setdefault(alert, set()).add(service)
        return cls(
            tuple(sorted(set(services))),
            tuple(sorted(set(alerts))),
            dict(aliases or {}),
            tuple(sorted(set(foreign))),
            {alert: tuple(sorted(owners[alert])) for alert in sorted(owners)},
        )


class SetAsideClaim(BaseModel):
    """A claim outside the question's scope: what it was, which rules it broke and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    claim_id: str
    claim_type: str
    rules: list[str]
    reason: str


OUT_OF_SCOPE_PLAN_STEP = "scope.out_of_scope_plan_step"


class SetAsidePlanStep(BaseModel):
    """A plan step (or the plan's sentence) withheld from the executor, and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step: str
    rule: str = OUT_OF_SCOPE_PLAN_STEP
    reason: str


@dataclass(frozen=True)
class ScopeSplit:
    """A contract with its out-of-scope claims taken out, and those claims."""

    contract: ExecutorContract | None
    set_aside: list[SetAsideClaim]
    claims_set_aside: list[Claim]


def session_scope(
    query: str, names: ScopeNames, proposed: ScopeContract | None = None
) -> tuple[ScopeContract, list[str]]:
    """The session's scope and what a proposal tried to widen (``[]`` without one)."""
    floor = anchored(scope_floor(query, names.services, names.alerts, names.aliases), names)
    if proposed is None:  # the seam: the planner's proposed scope_contract, when it has one
        return floor, []
    return narrowed(floor, proposed)


def anchored(scope: ScopeContract, names: ScopeNames) -> ScopeContract:
    """A question that names an alert and no service is about that alert where it belongs: its
    services (the world's alert catalog, less what the question excludes) become the scope's.

    004's own line for "只确认 HighCPUUsage": "claims 只围绕 HighCPUUsage / payment-service".
    Recorded live, a model asked that question searched order-service and claimed about it;
    the world's catalog knows which service an alert belongs to, firing or not, so this reads
    no evidence. An alert the catalog lacks, or one whose services are all excluded, anchors
    nothing: the services stay unrestricted, as before."""
    if scope.services or not scope.alerts:
        return scope
    owners = [s for alert in scope.alerts for s in names.alert_services.get(alert, ())]
    services = [s for s in dict.fromkeys(owners) if not excluded(scope.excluded, s)]
    if not services:
        return scope
    return scope.model_copy(update={"services": services, "services_from_alerts": True})


def decoding_scope(scope: ScopeContract, names: ScopeNames) -> DecodingScope:
    """What the session's requests let a model generate, with the scope rules' reading of an
    excluded topic for the tools' keywords (``不要分析 OOM``: a search for ``oom`` is refused)
    and the foreign names (the prompts' example subjects) no call may search for."""

    def excluded_in(keyword: str) -> list[str]:
        text = normalise(keyword)
        return excluded_named(text, scope, named_services(text, names.services, names.aliases))

    return DecodingScope.of(scope, excluded_in, names.foreign)


def split_claims(
    contract: ExecutorContract | None,
    scope: ScopeContract,
    names: ScopeNames,
    *,
    invocations: Sequence[ToolInvocation] = (),
    gatekeeper: GatekeeperResult | None = None,
) -> ScopeSplit:
    """Judge every claim against ``scope``; the contract keeps the in-scope claims only.

    A claim is judged on its text and on the items its passed bindings cite in
    ``invocations`` (:func:`cited_item_texts`); without invocations, on its text alone."""
    if contract is None:
        return ScopeSplit(None, [], [])
    kept: list[Claim] = []
    set_aside: list[SetAsideClaim] = []
    outside: list[Claim] = []
    for claim in contract.claims:
        problems = scope_problems(
            claim.claim_type,
            claim.claim_text,
            scope,
            names.services,
            names.alerts,
            names.aliases,
            names.foreign,
            item_texts=cited_item_texts(claim, invocations, gatekeeper),
        )
        if not problems:
            kept.append(claim)
            continue
        outside.append(claim)
        set_aside.append(
            SetAsideClaim(
                claim_id=claim.claim_id,
                claim_type=claim.claim_type,
                rules=[problem.rule for problem in problems],
                reason="; ".join(problem.message for problem in problems),
            )
        )
    if not outside:
        return ScopeSplit(contract, [], [])
    return ScopeSplit(contract.model_copy(update={"claims": kept}), set_aside, outside)


# The fields of a cited item that say what it is about (issue 37): an alert's name, service and
# metric (its current value and description), a log's service and message, a runbook's title.
# Never a runbook's content (guidance naming every cause), an alert's API paths or samples.
_TOPIC_FIELDS = ("alert_name", "service", "current", "description", "message", "title")


def cited_item_texts(
    claim: Claim,
    invocations: Sequence[ToolInvocation],
    gatekeeper: GatekeeperResult | None = None,
) -> list[str]:
    """The texts of the items ``claim``'s bindings cite, one per item, from the items' own
    fields (:data:`_TOPIC_FIELDS`, joined by spaces), in binding order.

    With ``gatekeeper``, only the bindings it passed count (a fabricated citation tells nothing
    about the claim); without it, every binding that resolves to a recorded item. A row made
    before ``evidence_items`` falls back to the ref's text for an alert or a log."""
    by_id = {row.id: row for row in invocations}
    if gatekeeper is not None:
        cited = [
            (checked.source_invocation_id, checked.raw_path)
            for checked in gatekeeper.checked_bindings
            if checked.claim_id == claim.claim_id and checked.status == "pass"
        ]
    else:
        cited = [(b.source_invocation_id, b.raw_path) for b in claim.evidence_bindings]
    texts: list[str] = []
    for invocation_id, raw_path in dict.fromkeys(cited):
        row = by_id.get(invocation_id) if invocation_id is not None else None
        details = row.retrieval_details if row is not None else None
        if details is None or raw_path is None:
            continue
        item = next((i for i in details.evidence_items or () if i.raw_path == raw_path), None)
        if item is not None:
            values = [item.fields.get(key) for key in _TOPIC_FIELDS]
            texts.append(" ".join(str(value) for value in values if isinstance(value, str)))
            continue
        if details.evidence_items is None and raw_path.startswith(("$.alerts[", "$.logs[")):
            ref = next((r for r in details.evidence_refs or () if r.raw_path == raw_path), None)
            if ref is not None:
                texts.append(ref.text)
    return [text for text in texts if text.strip()]


def checked_plan(
    plan: Plan | None, scope: ScopeContract, names: ScopeNames
) -> tuple[Plan | None, list[SetAsidePlanStep]]:
    """The plan the executor may see, and what was withheld from it.

    The planner copied its prompt's example plan in every live round; a copied step about
    another service would steer the executor there. A step naming a service, alert or topic
    the question leaves out or excludes is dropped; when the plan's own sentence does, the whole
    plan is withheld (the executor then works from the question alone, as after a planner
    failure), since a plan without its sentence is not one the model wrote.
    """
    if plan is None:
        return None, []
    withheld = [
        SetAsidePlanStep(step=text, reason=reason)
        for text in [plan.plan, *plan.steps]
        if (reason := _off_scope_reason(text, scope, names)) is not None
    ]
    if not withheld:
        return plan, []
    if withheld[0].step == plan.plan:  # the sentence itself is off scope
        return None, withheld
    dropped = {item.step for item in withheld}
    return plan.model_copy(update={"steps": [s for s in plan.steps if s not in dropped]}), withheld


def _off_scope_reason(text: str, scope: ScopeContract, names: ScopeNames) -> str | None:
    problems = scope_problems(
        "observation", text, scope, names.services, names.alerts, names.aliases, names.foreign
    )
    reasons = [
        p.message.replace("the claim", "it", 1)  # said of a claim, an answer line or a step
        for p in problems
        if p.rule in (OUT_OF_SCOPE, EXCLUDED_TOPIC)
    ]
    return "; ".join(reasons) or None


def about_set_aside(fact: FactChecked, claims_set_aside: Sequence[Claim]) -> bool:
    """Whether a verifier fact is about a set-aside claim: by its ``claim_id``, or, without
    one, by the claim's identical text (how the judge ties a fact to a claim)."""
    if fact.claim_id is not None:
        return any(fact.claim_id == claim.claim_id for claim in claims_set_aside)
    text = fact.fact.strip()
    return any(claim.claim_text.strip() == text for claim in claims_set_aside)


def is_off_scope(text: str, scope: ScopeContract, names: ScopeNames) -> bool:
    """Whether a sentence of an answer names a service, alert or topic the question's scope
    leaves out or excludes (the claim-type rule is for claims: a sentence has no type)."""
    return _off_scope_reason(text, scope, names) is not None
