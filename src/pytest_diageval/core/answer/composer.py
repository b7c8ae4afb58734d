"""The Composer (004's ``chat_composer``): the final answer says only what was verified.

Deterministic, after the verdict and the route (004: "Composer 只表达 Verifier 允许输出的内容";
"最终 user_facing_answer 不泄漏 raw JSON、tool raw output 或 Executor 未通过 Verifier 的 claim").

* ``direct`` (PASS): the executor's ``user_facing_answer`` is published **verbatim** only when
  every sentence in it is backed by a used claim (:mod:`.statements`: its facts and words are in
  the claim or its verified evidence; a sentence backed only by an indirectly supported claim
  must be worded as such), or is framing only. There is no hedge exception. Otherwise the
  answer is **composed**: the used claims, numbered
  (indirect ones marked), then one line saying how much was left out. Nothing else of the
  executor's prose reaches the user.
* ``disclaimer`` (LOW_CONFID) and ``degraded`` (REJECT): the fixed **templates** of
  :mod:`.templates`, filled with the used claims only.

Which claims are used and which dropped (and why) is :func:`.verified_claims.select_claims`;
``claims_shown`` are those the published answer really rests on: a verbatim answer's backing
claims, the listed claims of a composed one, the findings a template prints (a degraded
answer prints only directly supported ones, and none after a gatekeeper reject).
Control and bidi-override characters are stripped from every piece of model text. The
decision is returned as :class:`ComposerOutput`, which ChatService persists in the audit.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pytest_diageval.core.answer.routing import RouteDecision
from pytest_diageval.core.answer.statements import backing_claim, is_neutral, strip_control
from pytest_diageval.core.answer.templates import (
    COMPOSED_HEADING,
    INDIRECT_MARK,
    NO_DIRECT_ANSWER,
    assert_no_raw_leak,
    check_route_matches_verdict,
    degraded_answer,
    disclaimer_answer,
    is_presentable,
    left_out_line,
    numbered,
    section,
)
from pytest_diageval.core.answer.verified_claims import (
    ClaimSelection,
    DroppedClaim,
    UsedClaim,
    select_claims,
)
from pytest_diageval.core.contract.contracts import ExecutorContract, GatekeeperResult
from pytest_diageval.core.judge.verdict import VerdictDecision
from pytest_diageval.core.text.key_facts import split_sentences

__all__ = ["INDIRECT_WORDING", "ComposerOutput", "Composition", "compose_answer"]

INDIRECT_WORDING: tuple[str, ...] = ("间接", "可能", "推测", "迹象", "indirect", "suggest")
"""A statement backed only by an indirectly supported claim must carry one of these."""


class ComposerOutput(BaseModel):
    """What the composer did, for the audit trail and the ``composer`` expectation."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["valid", "empty"]
    source: Literal["verbatim", "composed", "template"]
    route: Literal["direct", "disclaimer", "degraded"]
    claims_used: list[str] = Field(default_factory=list)
    claims_dropped: list[DroppedClaim] = Field(default_factory=list)
    statements_dropped: int = 0
    claims_shown: list[str] | None = None
    """The used claims the published answer shows or rests on (None: an audit from before
    this was recorded)."""


@dataclass(frozen=True)
class Composition:
    answer: str
    output: ComposerOutput


def compose_answer(
    route: RouteDecision,
    *,
    decision: VerdictDecision,
    contract: ExecutorContract | None,
    executor_final_answer: str,
    gatekeeper: GatekeeperResult,
    off_scope: Callable[[str], bool] | None = None,
) -> Composition:
    """The user-facing answer for a final route (never ``retry``) and what went into it.

    ``off_scope`` says whether a sentence is about what the question's scope leaves out: such a
    sentence is never published verbatim, whatever claim it resembles (issue 25)."""
    check_route_matches_verdict(route, decision)
    selection = select_claims(decision, contract, gatekeeper, presentable=is_presentable)
    executor_answer = contract.user_facing_answer if contract is not None else executor_final_answer
    if route.action == "direct":
        composition = _direct(selection, executor_answer, off_scope or _never_off_scope)
    elif route.action in ("disclaimer", "degraded"):
        if route.action == "disclaimer":
            printed = selection.used
            answer = disclaimer_answer(decision, contract, [_finding(u) for u in printed])
        else:
            printed = [u for u in selection.used if u.label == "direct_evidence"]
            answer = degraded_answer(decision, contract, gatekeeper, [_finding(u) for u in printed])
        shown = _printed(answer, printed)
        composition = _composition(answer, "template", route.action, selection, 0, shown)
    else:  # check_route_matches_verdict refused "retry" already
        raise ValueError(f"compose_answer: unknown route {route.action!r}")
    assert_no_raw_leak(composition.answer)
    return composition


def _never_off_scope(_statement: str) -> bool:
    return False


def _direct(
    selection: ClaimSelection, executor_answer: str, off_scope: Callable[[str], bool]
) -> Composition:
    candidate = strip_control(executor_answer).strip()
    sentences = split_sentences(candidate)
    unbacked = [s for s in sentences if off_scope(s) or not _allowed(s, selection.used)]
    if selection.used and is_presentable(candidate) and not unbacked:
        backers = {_backing(s, selection.used) for s in sentences}
        shown = [u.claim.claim_id for u in selection.used if u.claim.claim_id in backers]
        return _composition(candidate, "verbatim", "direct", selection, 0, shown)
    if not selection.used:
        return _composition(NO_DIRECT_ANSWER, "composed", "direct", selection, len(unbacked), [])
    lines = numbered([_finding(used) for used in selection.used])
    parts = [section(COMPOSED_HEADING, lines)]
    left_out = left_out_line(len(unbacked), [d.claim_id for d in selection.dropped])
    if left_out:
        parts.append(left_out)
    answer = "\n\n".join(parts)
    shown = [u.claim.claim_id for u in selection.used]  # each is a numbered line
    return _composition(answer, "composed", "direct", selection, len(unbacked), shown)


def _allowed(statement: str, used: list[UsedClaim]) -> bool:
    """Whether ``statement`` may be published verbatim: framing, or backed by a used claim."""
    return _backing(statement, used) is not None


def _backing(statement: str, used: list[UsedClaim]) -> str | None:
    """The id of the used claim that backs ``statement``; ``""`` for framing (allowed, backed
    by none); None when the statement may not be published."""
    if is_neutral(statement):
        return ""
    direct = [u.source() for u in used if u.label == "direct_evidence"]
    claim = backing_claim(statement, direct)
    if claim is not None:
        return claim
    indirect = [u.source() for u in used if u.label != "direct_evidence"]
    if any(word in statement.lower() for word in INDIRECT_WORDING):
        return backing_claim(statement, indirect)
    return None


def _printed(answer: str, printed: list[UsedClaim]) -> list[str]:
    """The claims whose finding a template really printed: a finding the template screens out
    (or prints for an earlier claim of the same text) and a degraded answer after a gatekeeper
    reject (which prints none) do not count."""
    lines = {line.strip() for line in answer.splitlines()}
    shown: list[str] = []
    seen: set[str] = set()
    for used in printed:
        text = " ".join(strip_control(_finding(used)).split())
        numbered_line = re.compile(rf"\d+\. {re.escape(text)}")
        listed = f"- {text}" in lines or any(numbered_line.fullmatch(line) for line in lines)
        if listed and text not in seen:
            shown.append(used.claim.claim_id)
        seen.add(text)
    return shown


def _finding(used: UsedClaim) -> str:
    return used.text if used.label == "direct_evidence" else f"{INDIRECT_MARK}{used.text}"


def _composition(
    answer: str,
    source: Literal["verbatim", "composed", "template"],
    route: Literal["direct", "disclaimer", "degraded"],
    selection: ClaimSelection,
    statements_dropped: int,
    claims_shown: list[str],
) -> Composition:
    output = ComposerOutput(
        status="valid" if selection.used else "empty",
        source=source,
        route=route,
        claims_used=[u.claim.claim_id for u in selection.used],
        claims_dropped=list(selection.dropped),
        statements_dropped=statements_dropped,
        claims_shown=claims_shown,
    )
    return Composition(answer=answer, output=output)
