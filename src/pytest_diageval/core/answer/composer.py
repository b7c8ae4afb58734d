"""The Composer (004's ``chat_composer``): the model points, the code speaks.

Deterministic, after the verdict and the route (004: "Composer 只表达 Verifier 允许输出的内容";
"最终 user_facing_answer 不泄漏 raw JSON、tool raw output 或 Executor 未通过 Verifier 的 claim").

What the user reads as confirmed is never the model's prose: it is the evidence the used
claims cite, rendered by code from the items' own fields (:mod:`.confirmed`). The executor's
``user_facing_answer``, its claim texts, ids and hypotheses are never published; they stay in
the audit trail and the HTML report, beside the rendering (:class:`RenderedClaim`).

* ``direct`` (PASS): the confirmed heading, the rendered evidence grouped by service, runbook
  blocks under a heading of their own (knowledge, never confirmed), and a line naming the
  claims left out by code id.
* ``disclaimer`` (LOW_CONFID) and ``degraded`` (REJECT): the fixed templates of
  :mod:`.answer_templates` around the same rendering (a degraded answer renders only directly
  supported claims, and none after a gatekeeper reject).

Which claims are used and which dropped (and why) is :func:`.verified_claims.select_claims`;
``claims_shown`` are the used claims at least one rendered line came from. An evidence line
that names something outside the question's scope (``off_scope``) or whose own text looks like
raw output is withheld and counted. The decision is returned as :class:`ComposerOutput`, which
ChatService persists in the audit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import tzinfo
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pytest_diageval.core.answer.answer_templates import (
    assert_no_raw_leak,
    check_route_matches_verdict,
    code_claim_ids,
    degraded_answer,
    disclaimer_answer,
    is_presentable,
    left_out_line,
    section,
)
from pytest_diageval.core.answer.confirmed import (
    SOURCE_TAG_RE,
    ConfirmedEvidence,
    render_confirmed,
)
from pytest_diageval.core.answer.routing import RouteDecision
from pytest_diageval.core.answer.verified_claims import (
    ClaimSelection,
    DroppedClaim,
    UsedClaim,
    select_claims,
)
from pytest_diageval.core.answer.wording import Wording, wording_for
from pytest_diageval.core.contract.contracts import (
    ExecutorContract,
    GatekeeperResult,
    ToolInvocation,
)
from pytest_diageval.core.judge.verdict import VerdictDecision

__all__ = ["ComposerOutput", "Composition", "RenderedClaim", "compose_answer", "confirmed_part"]


class RenderedClaim(BaseModel):
    """One used claim: the evidence lines the answer rendered for it, beside the model's
    wording (which the answer never shows)."""

    model_config = ConfigDict(extra="forbid")

    code_id: str
    claim_id: str
    model_wording: str
    lines: list[str] = Field(default_factory=list)


class ComposerOutput(BaseModel):
    """What the composer did, for the audit trail and the ``composer`` expectation."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["valid", "empty"]
    # "verbatim" (the executor's answer published as written) is only in older audits.
    source: Literal["verbatim", "composed", "template"]
    route: Literal["direct", "disclaimer", "degraded"]
    claims_used: list[str] = Field(default_factory=list)
    claims_dropped: list[DroppedClaim] = Field(default_factory=list)
    statements_dropped: int = 0
    claims_shown: list[str] | None = None
    """The used claims the published answer shows evidence of (None: an audit from before
    this was recorded)."""
    rendered: list[RenderedClaim] | None = None
    """Each used claim's rendered evidence beside its wording (None: an older audit)."""
    withheld: int = 0
    """Cited items not rendered: off the question's scope, or raw machine output."""


@dataclass(frozen=True)
class Composition:
    answer: str
    output: ComposerOutput


def compose_answer(
    route: RouteDecision,
    *,
    decision: VerdictDecision,
    contract: ExecutorContract | None,
    executor_final_answer: str = "",
    gatekeeper: GatekeeperResult,
    invocations: Iterable[ToolInvocation] = (),
    question: str = "",
    zone: tzinfo | None = None,
    off_scope: Callable[[str], bool] | None = None,
) -> Composition:
    """The user-facing answer for a final route (never ``retry``) and what went into it.

    ``invocations`` are the session's rows (the cited items' fields), ``question`` decides the
    language, ``zone`` the time zone times are shown in (the world's); ``off_scope`` says
    whether a text names what the question's scope leaves out. ``executor_final_answer`` is
    the executor's prose when it gave no contract: never published, kept for the signature."""
    del executor_final_answer  # the model's prose never reaches the answer
    check_route_matches_verdict(route, decision)
    wording = wording_for(question)
    selection = select_claims(decision, contract, gatekeeper, presentable=is_presentable)
    if route.action == "degraded":
        rejected = gatekeeper.severity == "reject"
        shown = [] if rejected else [u for u in selection.used if u.label == "direct_evidence"]
    else:
        shown = selection.used
    screen = off_scope or _never_off_scope
    evidence = render_confirmed(
        [u.claim.claim_id for u in shown],
        gatekeeper,
        invocations,
        wording,
        zone=zone,
        presentable=lambda text: is_presentable(text) and not screen(text),
    )
    heading = wording.confirmed_facts_heading if route.action == "degraded" else None
    confirmed = confirmed_part(evidence, wording, heading or wording.confirmed_heading, zone)
    if route.action == "direct":
        answer = _direct(selection, evidence, confirmed, contract, wording)
        source: Literal["composed", "template"] = "composed"
    elif route.action == "disclaimer":
        answer = _with_knowledge(
            disclaimer_answer(decision, contract, confirmed, wording), evidence, wording
        )
        source = "template"
    elif route.action == "degraded":
        answer = degraded_answer(decision, contract, rejected, confirmed, wording)
        source = "template"
    else:  # check_route_matches_verdict refused "retry" already
        raise ValueError(f"compose_answer: unknown route {route.action!r}")
    assert_no_raw_leak(SOURCE_TAG_RE.sub("", answer))
    output = _output(selection, evidence, contract, source, route.action)
    return Composition(answer=answer, output=output)


def confirmed_part(
    evidence: ConfirmedEvidence, wording: Wording, heading: str, zone: tzinfo | None = None
) -> list[str]:
    """The confirmed lines of an answer: the rendered sections, the zone note when a time is
    shown and the count of withheld items ([] when nothing was rendered)."""
    lines = evidence.sections(wording, heading)
    offset = _offset(zone)
    if lines and offset and evidence.timed:
        lines.append(wording.zone_note.format(offset=offset))
    if evidence.withheld:
        lines.append(wording.withheld_items.format(count=evidence.withheld))
    return lines


def _never_off_scope(_text: str) -> bool:
    return False


def _offset(zone: tzinfo | None) -> str:
    delta = zone.utcoffset(None) if zone is not None else None
    if delta is None:
        return ""
    minutes = int(delta.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _direct(
    selection: ClaimSelection,
    evidence: ConfirmedEvidence,
    confirmed: list[str],
    contract: ExecutorContract | None,
    wording: Wording,
) -> str:
    if not confirmed and not evidence.knowledge:
        return wording.no_findings if selection.used else wording.no_direct_answer
    answer = _with_knowledge("\n".join(confirmed) or wording.no_findings, evidence, wording)
    code_ids = code_claim_ids(contract)
    left_out = left_out_line(
        [code_ids[d.claim_id] for d in selection.dropped if d.claim_id in code_ids], wording
    )
    return f"{answer}\n\n{left_out}" if left_out else answer


def _with_knowledge(answer: str, evidence: ConfirmedEvidence, wording: Wording) -> str:
    if not evidence.knowledge:
        return answer
    knowledge = section(wording.knowledge_heading, [f"- {line}" for line in evidence.knowledge])
    return f"{answer}\n\n{knowledge}"


def _output(
    selection: ClaimSelection,
    evidence: ConfirmedEvidence,
    contract: ExecutorContract | None,
    source: Literal["composed", "template"],
    route: Literal["direct", "disclaimer", "degraded", "retry"],
) -> ComposerOutput:
    code_ids = code_claim_ids(contract)
    assert route != "retry"
    return ComposerOutput(
        status="valid" if selection.used else "empty",
        source=source,
        route=route,
        claims_used=[u.claim.claim_id for u in selection.used],
        claims_dropped=list(selection.dropped),
        statements_dropped=0,
        claims_shown=evidence.claims_shown,
        rendered=[_rendered(u, evidence, code_ids) for u in selection.used],
        withheld=evidence.withheld,
    )


def _rendered(
    used: UsedClaim, evidence: ConfirmedEvidence, code_ids: dict[str, str]
) -> RenderedClaim:
    return RenderedClaim(
        code_id=code_ids.get(used.claim.claim_id, used.claim.claim_id),
        claim_id=used.claim.claim_id,
        model_wording=used.text,
        lines=evidence.per_claim.get(used.claim.claim_id, []),
    )
