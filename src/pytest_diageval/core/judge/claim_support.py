"""Claim ceilings: how far each executor claim can be supported, from its own checked bindings.

The unit the code judges is the executor's claim (seed 004: "Executor 引用证据，Gatekeeper 核对
引用", "Verifier 判为 PASS 必须基于“真实引用 + 可推导结论”两个条件同时成立"). Before any verifier
label is read, each claim gets a *ceiling* from the bindings the gatekeeper checked for it; a
verifier label may lower a claim, never raise it above its ceiling (:mod:`.fact_support`).

================================================  ==================  =============================
the claim's bindings, as the gatekeeper checked   ceiling             rule
================================================  ==================  =============================
none at all (whatever ``support_level`` says)     no_evidence         ``claim.no_bindings``
none passed                                       no_evidence         ``claim.bindings_failed``
passed, incident evidence (metrics, logs items)   direct_evidence
a passed binding on ``lookup_knowledge``          indirect_support    ``claim.runbook_binding``
names a service none of its cited items is about  no_evidence         ``claim.subject_not_cited``
positive claim, passed only on no-hit searches    no_evidence         ``claim.no_hit_not_support``
negative claim, no passed no-hit search        no_evidence      ``claim.negative_without_no_hit``
negative claim, no-hit of another subject         no_evidence         ``claim.negative_subject``
``support_level`` lower than the above            that level          ``claim.support_level``
a point false, unresolvable or not comparable     no_evidence         ``point.*``
================================================  ==================  =============================

* A claim with ``points`` (``docs/points.md``) is judged by its bindings' kinds and its points
  (:mod:`.claim_points`), never by its text: the rows above on bindings hold, the rules that
  read a claim's text (subject, numbers, polarity, a no-hit's subject in the text) do not run,
  and a root cause or risk whose points fall on several items is indirect at most.

* A runbook binding caps the claim at indirect and marks it ``runbook``: 004 "runbook 内容只能进入
  missing_info 或证据收集动作，不能变成 confirmed claim". Such a claim never carries a PASS and no
  template lists it as confirmed.
* A no-hit search (a completed call that found nothing, cited by its collection path such as
  ``$.logs``) supports only a ``negative_observation``, and only about what it searched: each
  cited search must be about what the claim names (the claim names the service it searched,
  unless it searched every service, and one of its keywords or its alert name when it had
  any), and every ``*-service`` the claim names must have been searched. A no-hit on
  inventory-service says nothing about order-service.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pytest_diageval.core.contract.contract_schema import no_hit_fields
from pytest_diageval.core.contract.contracts import (
    CheckedBinding,
    Claim,
    EvidenceBinding,
    FactVerification,
    GatekeeperResult,
    ToolInvocation,
)
from pytest_diageval.core.contract.evidence_tools import INCIDENT_EVIDENCE_TOOLS
from pytest_diageval.core.contract.gatekeeper_rules import NO_HIT_RAW_PATHS
from pytest_diageval.core.contract.rules import ceiling as rule_ceiling
from pytest_diageval.core.judge.claim_grounding import (
    contradicting_claims,
    negative_problem,
    negative_statement_problem,
    ungrounded,
)
from pytest_diageval.core.judge.claim_points import check_point
from pytest_diageval.core.judge.claim_structure import (
    CitedItem,
    negative_window_problem,
    structure_problem,
    term_group,
)
from pytest_diageval.core.judge.instruction_like import addresses_reader
from pytest_diageval.core.text.excerpt_tokens import normalise
from pytest_diageval.core.text.key_facts import SERVICE_RE as _SERVICE_RE

__all__ = [
    "INCIDENT_EVIDENCE_TOOLS",
    "ClaimCeiling",
    "claim_ceilings",
    "label_rank",
]


_RANK: dict[FactVerification, int] = {
    "contradicted": 0,
    "no_evidence": 1,
    "indirect_support": 2,
    "direct_evidence": 3,
}
_SUPPORT_LEVEL_CAP: dict[str, FactVerification] = {
    "direct": "direct_evidence",
    "indirect": "indirect_support",
    "none": "no_evidence",
}
_SUPPORTING = frozenset({"direct_evidence", "indirect_support"})
_CONTRADICTS = "claim.contradicts_claim"


def label_rank(label: FactVerification) -> int:
    """Order of support: contradicted < no_evidence < indirect_support < direct_evidence."""
    return _RANK[label]


class ClaimCeiling(BaseModel):
    """The most a claim's own checked bindings can carry, and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    claim_id: str
    claim_type: str
    ceiling: FactVerification
    runbook: bool = False
    # Invocations the claim bound with a binding that passed the gatekeeper: a verifier fact
    # about the claim may cite these and nothing else.
    bound_invocation_ids: list[int] = Field(default_factory=list)
    rule: str | None = None
    reason: str


def claim_ceilings(
    claims: Sequence[Claim],
    gatekeeper: GatekeeperResult,
    invocations: Iterable[ToolInvocation],
    aliases: Mapping[str, str] | None = None,
) -> dict[str, ClaimCeiling]:
    """One ceiling per claim id (the first claim wins when an id repeats). ``aliases`` (the
    world's: alias -> service) make a claim that writes 订单服务 name order-service."""
    by_id = {row.id: row for row in invocations}
    rows_by_claim: dict[str, list[CheckedBinding]] = {}
    for row in gatekeeper.checked_bindings:
        if row.claim_id is not None and row.source_invocation_id is not None:
            rows_by_claim.setdefault(row.claim_id, []).append(row)
    ceilings: dict[str, ClaimCeiling] = {}
    for claim in claims:
        if claim.claim_id not in ceilings:
            rows = rows_by_claim.get(claim.claim_id, [])
            named = claim.model_copy(update={"claim_text": _canonical(claim.claim_text, aliases)})
            ceilings[claim.claim_id] = _ceiling(named, rows, by_id)
    return _without_contradictions(claims, rows_by_claim, ceilings)


def _without_contradictions(
    claims: Sequence[Claim],
    rows_by_claim: Mapping[str, Sequence[CheckedBinding]],
    ceilings: dict[str, ClaimCeiling],
) -> dict[str, ClaimCeiling]:
    """Two claims that read one item with opposite polarity cannot both stand. The item
    decides first (``claim.polarity_contradicts_item`` stops the claim it contradicts); two
    claims that both still stand after that read items the code cannot decide between, so
    neither stands."""
    passed = {cid: [r for r in rows if r.status == "pass"] for cid, rows in rows_by_claim.items()}
    standing = [c for c in claims if ceilings[c.claim_id].ceiling in _SUPPORTING and not c.points]
    for claim_id, other in contradicting_claims(standing, passed).items():
        ceiling = ceilings[claim_id]
        if label_rank(ceiling.ceiling) > label_rank(rule_ceiling(_CONTRADICTS)):
            ceilings[claim_id] = ceiling.model_copy(
                update={
                    "ceiling": rule_ceiling(_CONTRADICTS),
                    "rule": _CONTRADICTS,
                    "reason": f"claim {claim_id} and claim {other} cite the same item with"
                    " opposite polarity; one piece of evidence cannot derive both",
                }
            )
    return ceilings


def _ceiling(
    claim: Claim, rows: Sequence[CheckedBinding], by_id: Mapping[int, ToolInvocation]
) -> ClaimCeiling:
    passed = [row for row in rows if row.status == "pass"]
    bound = sorted({row.source_invocation_id for row in passed if row.source_invocation_id})
    base = {"claim_id": claim.claim_id, "claim_type": claim.claim_type}
    if not claim.evidence_bindings:
        return _stopped(
            base,
            "claim.no_bindings",
            reason=f"claim {claim.claim_id} binds no evidence (support_level"
            f" {claim.support_level!r} is the executor's word, not evidence)",
        )
    if not passed:
        return _stopped(
            base,
            "claim.bindings_failed",
            reason=f"no binding of claim {claim.claim_id} passed the gatekeeper",
        )
    if claim.points:
        ceiling = _pointed_ceiling(claim, passed, by_id)
    elif claim.claim_type == "negative_observation":
        ceiling = _negative_ceiling(claim, passed, by_id)
    else:
        ceiling = _positive_ceiling(claim, passed, by_id)
    ceiling = ceiling.model_copy(update={"bound_invocation_ids": bound})
    return _apply_support_level(claim, ceiling)


def _pointed_ceiling(
    claim: Claim, passed: Sequence[CheckedBinding], by_id: Mapping[int, ToolInvocation]
) -> ClaimCeiling:
    """A claim with points (``docs/points.md``): its bindings' kinds and its points decide;
    its text is not read. The kinds first (a no-hit backs only a negative observation, which
    needs one; a runbook caps at indirect), then every point on its item, then a cause or
    risk spread over several items, then an item addressing a reader."""
    base = {"claim_id": claim.claim_id, "claim_type": claim.claim_type}
    negative = claim.claim_type == "negative_observation"
    if negative and not any(_is_no_hit(row) for row in passed):
        return _standard_stop(claim, "claim.negative_without_no_hit")
    items = [row for row in passed if not _is_no_hit(row)]
    if not negative and not items:
        return _standard_stop(claim, "claim.no_hit_not_support")
    cited = enumerate(claim.evidence_bindings, start=1)
    fields = {number: _binding_fields(binding, passed, by_id) for number, binding in cited}
    checks = [check_point(point, fields) for point in claim.points]
    failed = next((check for check in checks if check.rule is not None), None)
    if failed is not None and failed.rule is not None:  # (for the type checker)
        return _stopped(base, failed.rule, reason=f"claim {claim.claim_id}: {failed.reason}")
    if any(row.tool_name not in INCIDENT_EVIDENCE_TOOLS for row in passed):
        return _standard_stop(claim, "claim.runbook_binding")
    # Every point holds, so each names a binding of the claim; two bindings quoting one item
    # are one item.
    pointed = {_cited_place(claim.evidence_bindings[check.point.binding - 1]) for check in checks}
    if claim.claim_type in ("root_cause", "risk") and len(pointed) > 1:
        return _stopped(
            base,
            "claim.causal_across_items",
            reason=f"{claim.claim_type} {claim.claim_id} points at {len(pointed)} items; items"
            " side by side do not show that one caused the other",
        )
    addressed = _addressed(claim, items, by_id)
    if addressed is not None:
        return addressed
    return ClaimCeiling(
        **base,
        ceiling="direct_evidence",
        reason=f"claim {claim.claim_id}: every point holds on the items it cites"
        f" ({len(checks)} point{'s' if len(checks) != 1 else ''})",
    )


def _binding_fields(
    binding: EvidenceBinding,
    passed: Sequence[CheckedBinding],
    by_id: Mapping[int, ToolInvocation],
) -> Mapping[str, Any] | None:
    """The fields of the item ``binding`` cites, when the gatekeeper passed it: an item's own
    fields, or a no-hit's search arguments and ``results`` 0. None for a binding that did not
    pass (or whose call the caller did not hand over)."""
    path = (binding.raw_path or "").strip()
    row = next(
        (
            row
            for row in passed
            if row.source_invocation_id == binding.source_invocation_id
            and (row.raw_path or "").strip() == path
        ),
        None,
    )
    invocation = None if row is None else by_id.get(row.source_invocation_id or -1)
    if row is None or invocation is None:
        return None
    if _is_no_hit(row):
        return no_hit_fields(invocation)
    return _cited_item(row, by_id).fields


def _cited_place(binding: EvidenceBinding) -> tuple[int | None, str]:
    return (binding.source_invocation_id, (binding.raw_path or "").strip())


_STANDARD_STOPS: dict[str, str] = {
    "claim.runbook_binding": "claim {id} rests on runbook / knowledge guidance"
    " (lookup_knowledge); guidance is never a confirmed incident fact",
    "claim.no_hit_not_support": "claim {id} ({type}) cites only searches that found nothing;"
    " a no-hit supports a negative_observation and nothing else",
    "claim.negative_without_no_hit": "negative_observation {id} cites no completed search that"
    " found nothing; only such a search supports \u201c未检索到 \u2026\u201d",
}
"""The stops a claim gets from its bindings' kinds alone, read or pointed alike."""


def _standard_stop(claim: Claim, rule: str) -> ClaimCeiling:
    reason = _STANDARD_STOPS[rule].format(id=claim.claim_id, type=claim.claim_type)
    base = {"claim_id": claim.claim_id, "claim_type": claim.claim_type}
    return _stopped(base, rule, reason=reason, runbook=rule == "claim.runbook_binding")


def _stopped(
    base: Mapping[str, str], rule: str, *, reason: str, runbook: bool = False
) -> ClaimCeiling:
    """The ceiling ``rule`` puts on the claim (its grade in the rules table), and why."""
    return ClaimCeiling(
        **base, ceiling=rule_ceiling(rule), runbook=runbook, rule=rule, reason=reason
    )


def _is_no_hit(row: CheckedBinding) -> bool:
    """A passed binding that quotes a search's empty result (the gatekeeper passes a
    collection path only on a completed call that found nothing)."""
    return row.raw_path is not None and row.raw_path.strip() in NO_HIT_RAW_PATHS.values()


def _positive_ceiling(
    claim: Claim, passed: Sequence[CheckedBinding], by_id: Mapping[int, ToolInvocation]
) -> ClaimCeiling:
    base = {"claim_id": claim.claim_id, "claim_type": claim.claim_type}
    items = [row for row in passed if not _is_no_hit(row)]
    if not items:
        return _standard_stop(claim, "claim.no_hit_not_support")
    runbook = any(row.tool_name not in INCIDENT_EVIDENCE_TOOLS for row in items)
    incident = [row for row in items if row.tool_name in INCIDENT_EVIDENCE_TOOLS]
    stray = _services_not_cited(claim.claim_text, incident, by_id) if incident else []
    if stray:
        return _stopped(
            base,
            "claim.subject_not_cited",
            reason=f"claim {claim.claim_id} names {', '.join(stray)}, but none of the items"
            " it cites is about that service",
        )
    rows_known = all(row.source_invocation_id in by_id for row in items)
    problem = _structure(claim, items, by_id) if rows_known else None
    if problem is not None and rule_ceiling(problem[0]) == "no_evidence":
        rule, reason = problem
        return _stopped(base, rule, reason=f"claim {claim.claim_id}: {reason}", runbook=runbook)
    if runbook:
        return _standard_stop(claim, "claim.runbook_binding")
    if problem is not None:
        rule, reason = problem
        return _stopped(base, rule, reason=f"claim {claim.claim_id}: {reason}")
    addressed = _addressed(claim, items, by_id)
    if addressed is not None:
        return addressed
    return ClaimCeiling(
        **base,
        ceiling="direct_evidence",
        reason=f"claim {claim.claim_id} cites incident evidence that passed the gatekeeper",
    )


def _addressed(
    claim: Claim, items: Sequence[CheckedBinding], by_id: Mapping[int, ToolInvocation]
) -> ClaimCeiling | None:
    """An item written *to* a machine reader ("to any tool reading this log") is not an
    observation of the incident, order or not: the claim it backs is indirect at most."""
    for row in items:
        if row.source_invocation_id not in by_id:
            continue
        item = _cited_item(row, by_id)
        form = addresses_reader(item.text)
        if form is not None:
            return _stopped(
                {"claim_id": claim.claim_id, "claim_type": claim.claim_type},
                "claim.item_addresses_reader",
                reason=f"claim {claim.claim_id} cites an item that addresses a machine reader"
                f" ({form!r}); such text is not an observation of the incident",
            )
    return None


def _structure(
    claim: Claim, items: Sequence[CheckedBinding], by_id: Mapping[int, ToolInvocation]
) -> tuple[str, str] | None:
    """The first thing the claim says that its cited items do not (:mod:`.claim_structure`),
    after the rules on what a claim may say at all (:func:`ungrounded`)."""
    texts = [_item_text(row, by_id) for row in items]
    problem = ungrounded(claim.claim_text, texts)
    if problem is not None:
        return problem
    cited = [_cited_item(row, by_id) for row in items]
    found = structure_problem(claim.claim_text, claim.claim_type, cited)
    return None if found is None else (found.rule, found.reason)


def _cited_item(row: CheckedBinding, by_id: Mapping[int, ToolInvocation]) -> CitedItem:
    """The item a passed binding cites, field by field (its ref text on a row made before
    items were recorded)."""
    invocation = by_id[row.source_invocation_id or -1]
    details = invocation.retrieval_details
    wanted = (row.raw_path or "").strip()
    for item in (details.evidence_items or []) if details is not None else []:
        if item.raw_path == wanted:
            return CitedItem(invocation.tool_name, item.fields)
    return CitedItem(invocation.tool_name, {"text": _ref_text(invocation, row.raw_path)})


def _services_not_cited(
    claim_text: str, items: Sequence[CheckedBinding], by_id: Mapping[int, ToolInvocation]
) -> list[str]:
    """The ``*-service`` names of the claim that no cited item (its text or the service its
    call asked for) is about: evidence about payment-service says nothing about inventory.
    Without the session's rows (a caller that passed none) there is nothing to compare."""
    named = sorted(set(_SERVICE_RE.findall(claim_text.lower())))
    cited: set[str] = set()
    if not any(row.source_invocation_id in by_id for row in items if row.source_invocation_id):
        return []
    for row in items:
        invocation = by_id.get(row.source_invocation_id or -1)
        if invocation is None:
            continue
        asked = _param(invocation, "service")
        if asked:
            cited.add(asked)
        cited.update(_SERVICE_RE.findall(_ref_text(invocation, row.raw_path).lower()))
    return [service for service in named if service not in cited]


def _item_text(row: CheckedBinding, by_id: Mapping[int, ToolInvocation]) -> str:
    """The whole text of the item a passed binding cites (its ref in the session's row)."""
    invocation = by_id.get(row.source_invocation_id or -1)
    return "" if invocation is None else _ref_text(invocation, row.raw_path)


_PRODUCT_SUFFIX = "(?:服务|系统|中心|平台|模块|应用|后台)"


def _canonical(text: str, aliases: Mapping[str, str] | None) -> str:
    """``text`` with every alias of a service written as the service's name; a Chinese alias's
    stem names the service under any product suffix (订单服务's 订单系统, 订单中心)."""
    for alias in sorted(aliases or {}, key=lambda a: (-len(a), a)):
        pattern = re.escape(alias).replace(r"\ ", r"\s+")
        edge = r"(?<![a-z0-9])" if alias[:1].isascii() else ""
        tail = r"(?![a-z0-9])" if alias[-1:].isascii() else ""
        stem = re.sub(_PRODUCT_SUFFIX + "$", "", alias)
        if stem != alias and len(stem) >= 2 and not stem.isascii():
            pattern = re.escape(stem) + _PRODUCT_SUFFIX
        text = re.sub(edge + pattern + tail, f" {(aliases or {})[alias]} ", text, flags=re.I)
    return text


def _ref_text(invocation: ToolInvocation, raw_path: str | None) -> str:
    details = invocation.retrieval_details
    refs = [] if details is None or details.evidence_refs is None else details.evidence_refs
    wanted = (raw_path or "").strip()
    return next((ref.text for ref in refs if ref.raw_path == wanted), "")


def _negative_ceiling(
    claim: Claim, passed: Sequence[CheckedBinding], by_id: Mapping[int, ToolInvocation]
) -> ClaimCeiling:
    base = {"claim_id": claim.claim_id, "claim_type": claim.claim_type}
    ids = [row.source_invocation_id for row in passed if _is_no_hit(row)]
    searches = [by_id[i] for i in ids if i is not None and i in by_id]
    if not searches:
        return _standard_stop(claim, "claim.negative_without_no_hit")
    problem = _subject_problem(claim.claim_text, searches)
    if problem is not None:
        reason = f"negative_observation {claim.claim_id}: {problem}"
        return _stopped(base, "claim.negative_subject", reason=reason)
    no_hits = [_item_text(row, by_id) for row in passed if _is_no_hit(row)]
    uncovered = negative_problem(claim.claim_text, searches) or negative_statement_problem(
        claim.claim_text, no_hits
    )
    window = negative_window_problem(claim.claim_text, [s.input_params for s in searches])
    if uncovered is None and window is not None:
        uncovered = window.rule, window.reason
    if uncovered is not None:
        rule, reason = uncovered
        return _stopped(base, rule, reason=f"negative_observation {claim.claim_id}: {reason}")
    if any(row.tool_name not in INCIDENT_EVIDENCE_TOOLS for row in passed):
        reason = f"negative_observation {claim.claim_id} also rests on runbook guidance"
        return _stopped(base, "claim.runbook_binding", runbook=True, reason=reason)
    return ClaimCeiling(
        **base,
        ceiling="direct_evidence",
        reason=f"negative_observation {claim.claim_id} cites completed no-hit searches of"
        " what it names",
    )


def _subject_problem(claim_text: str, searches: Sequence[ToolInvocation]) -> str | None:
    """Why the no-hit searches do not cover the claim's subject; None when they do.

    A search covers the claim when the claim names the service it searched (or it searched
    every service) and one of its keywords / alert name (when it had any). Every cited search
    must cover the claim (a no-hit about something else is no citation for it), and every
    service the claim names must have been searched."""
    text = normalise(claim_text)
    for search in searches:
        if not _covers(search, text):
            return (
                f"invocation {search.id} searched {_subject(search)}, which is not what the"
                " claim names"
            )
    services = {_param(s, "service") for s in searches}
    for service in sorted(set(_SERVICE_RE.findall(claim_text.lower()))):
        if None not in services and service not in services:
            return f"it names {service}, which none of its no-hit searches looked at"
    return None


def _covers(search: ToolInvocation, text: str) -> bool:
    service = _param(search, "service")
    if service is not None and normalise(service) not in text:
        return False
    terms = [normalise(term) for term in _search_terms(search)]
    return not terms or any(term and _named(term, text) for term in terms)


def _named(term: str, text: str) -> bool:
    """The claim names a searched term: as written, in another form of its term group
    (连接池 = connection pool), or word by word in any order ("disk full" = "full disk")."""
    if term in text or any(form in text for form in term_group(term) if len(form) > 1):
        return True
    words = term.split()
    return len(words) > 1 and all(word in text.split() for word in words)


def _subject(search: ToolInvocation) -> str:
    service = _param(search, "service") or "every service"
    return f"{service}, terms {_search_terms(search) or 'none'}"


def _param(invocation: ToolInvocation, name: str) -> str | None:
    value = invocation.input_params.get(name)
    return value.strip().lower() if isinstance(value, str) and value.strip() else None


def _search_terms(invocation: ToolInvocation) -> list[str]:
    keywords = invocation.input_params.get("keywords")
    if isinstance(keywords, str):
        keywords = keywords.split()
    terms = [k for k in keywords or [] if isinstance(k, str) and k.strip()]
    # As sent, not lower-cased: normalise splits HighCPUUsage as it splits the claim's text.
    named = [invocation.input_params.get(name) for name in ("alert_name", "query")]
    return terms + [t.strip() for t in named if isinstance(t, str) and t.strip()]


def _apply_support_level(claim: Claim, ceiling: ClaimCeiling) -> ClaimCeiling:
    own = _SUPPORT_LEVEL_CAP[claim.support_level]
    if label_rank(own) >= label_rank(ceiling.ceiling):
        return ceiling
    return ceiling.model_copy(
        update={
            "ceiling": own,
            "rule": "claim.support_level",
            "reason": f"claim {claim.claim_id} declares support_level {claim.support_level!r}",
        }
    )
