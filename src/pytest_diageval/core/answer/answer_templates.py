"""Answer templates: the fixed text around the evidence the composer renders.

The composer (:mod:`.composer`) decides *which* claims an answer rests on
(:mod:`.verified_claims`) and has their cited evidence rendered by code (:mod:`.confirmed`);
this module lays the answer out, in the question's language (:mod:`.wording`):

* disclaimer (LOW_CONFID): the disclaimer, the rendered evidence of the used claims, then the
  evidence gaps (the critical ``no_evidence`` facts).
* degraded (REJECT): the header, the rendered evidence of the directly supported used claims
  (none when the gatekeeper graded reject), the evidence gaps and the fixed next steps.

Nothing a model wrote is printed (000: REJECT output "SHALL NOT include unverified raw answer
content"): a gap names a claim by its code id (``claim-2``, its position in the contract,
:func:`code_claim_ids`) and the executor's type label as a fixed word ("claim-2（执行器标为根因）
缺少工具证据"), never by the executor's own id or text; next steps come from the fixed list.

:func:`find_raw_leak` screens every evidence text before it is rendered, and the finished
answer once more (:func:`assert_no_raw_leak`, source tags aside): tool outputs are JSON objects,
so the JSON check is also what keeps raw tool output out.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence

from pytest_diageval.core.answer.routing import RouteDecision
from pytest_diageval.core.answer.wording import ZH, Wording
from pytest_diageval.core.contract.contracts import Claim, ExecutorContract
from pytest_diageval.core.judge.verdict import NO_CLAIM_IN_SCOPE, VerdictDecision

__all__ = [
    "CLAIM_GAP",
    "COMPOSED_HEADING",
    "CONFIRMED_FACTS_HEADING",
    "CONFIRMED_FINDINGS_HEADING",
    "DEGRADED_HEADER",
    "DISCLAIMER",
    "EVIDENCE_GAPS_HEADING",
    "FACT_GAP",
    "FALLBACK_NEXT_STEPS",
    "INDIRECT_MARK",
    "NEXT_STEPS_HEADING",
    "NO_CLAIM_IN_SCOPE_GAP",
    "NO_DIRECT_ANSWER",
    "RawLeakError",
    "assert_no_raw_leak",
    "check_route_matches_verdict",
    "code_claim_ids",
    "degraded_answer",
    "disclaimer_answer",
    "find_raw_leak",
    "hides_text",
    "is_presentable",
    "left_out_line",
    "numbered",
    "section",
    "strip_control",
]

# The Chinese texts under their historical names (the English ones are in wording.EN).
DISCLAIMER = ZH.disclaimer
DEGRADED_HEADER = ZH.degraded_header
CONFIRMED_FINDINGS_HEADING = ZH.confirmed_heading
COMPOSED_HEADING = ZH.confirmed_heading
INDIRECT_MARK = "（间接支持）"  # no longer printed: an item is evidence, whatever its claim's label
CONFIRMED_FACTS_HEADING = ZH.confirmed_facts_heading
EVIDENCE_GAPS_HEADING = ZH.evidence_gaps_heading
NEXT_STEPS_HEADING = ZH.next_steps_heading
NO_FINDINGS = ZH.no_findings
NO_DIRECT_ANSWER = ZH.no_direct_answer
CLAIM_GAP = ZH.claim_gap
FACT_GAP = ZH.fact_gap
NO_CLAIM_IN_SCOPE_GAP = ZH.no_claim_in_scope_gap
FALLBACK_NEXT_STEPS: tuple[str, ...] = ZH.fallback_next_steps

_EXPECTED_VERDICT = {"direct": "PASS", "disclaimer": "LOW_CONFID", "degraded": "REJECT"}


_MACHINE_FIELDS = (
    "answer_version", "claim_id", "claim_text", "claim_type", "diagnosis_summary",
    "evidence_bindings", "evidence_blocks", "evidence_excerpt", "evidence_refs",
    "evidence_status", "facts_checked", "groundedness_score", "missing_info",
    "output_preview", "raw_path", "recommended_actions", "retrieval_details",
    "source_invocation_id", "source_invocation_ids", "user_facing_answer",
)  # fmt: skip
_MACHINE_FIELD_RE = re.compile(
    r"(?<![A-Za-z0-9_])(" + "|".join(_MACHINE_FIELDS) + r")(?![A-Za-z0-9_])"
)
_JSON_KEY_RE = re.compile(r'"[^"\n]{1,80}"\s*:')
_JSON_ARRAY_RE = re.compile(r"\[\s*[{\[]")
_RAW_PATH_RE = re.compile(r"\$\.[A-Za-z_]+\[")
# A whole line that is one bracketed token is a template slot (``<事实>``), not a statement.
_PLACEHOLDER_RE = re.compile(r"[<‹〈＜{]\s*[^<>‹›〈〉＜＞{}]*\s*[>›〉＞}]")


_KEEP_CONTROLS = frozenset("\n\t")
_STRUCK_RE = re.compile(r"~~|</?(?:del|s|strike)\b", re.IGNORECASE)


def strip_control(text: str) -> str:
    """Drop control and format characters (bidi overrides, zero-width joiners, …) except
    newline and tab: they can hide or reorder what a reader sees."""
    return "".join(
        ch
        for ch in text
        if ch in _KEEP_CONTROLS or unicodedata.category(ch) not in ("Cc", "Cf", "Co", "Cs")
    )


def hides_text(text: str) -> bool:
    """Markup or marks that make a reader see other text than the words: strikethrough
    (``~~未~~``, ``<del>``) or a combining mark left after NFC (``未\u0336``, an overlay that
    strikes a negation out). How a text will be rendered is unknown, so such a claim is
    never used (its verifier saw other words than its reader would)."""
    normal = unicodedata.normalize("NFC", text)
    marks = any(unicodedata.category(ch) in ("Mn", "Me") for ch in normal)
    return marks or _STRUCK_RE.search(normal) is not None


class RawLeakError(ValueError):
    """A finished answer would show raw JSON, a code fence or machine fields to the user."""


def find_raw_leak(text: str) -> str | None:
    """Describe why ``text`` looks like raw machine output; None when it reads as prose."""
    if "```" in text:
        return "code fence"
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and _parses_as_json(stripped):
        return "a whole JSON value"
    for pattern, what in (
        (_JSON_KEY_RE, "a JSON object key"),
        (_JSON_ARRAY_RE, "a JSON array of objects"),
        (_RAW_PATH_RE, "a raw evidence path"),
        (_MACHINE_FIELD_RE, "a machine field name"),
    ):
        match = pattern.search(text)
        if match:
            return f"{what} ({match.group(0)!r})"
    return None


def assert_no_raw_leak(answer: str) -> None:
    """Raise :class:`RawLeakError` if ``answer`` shows raw machine output."""
    leak = find_raw_leak(answer)
    if leak is not None:
        raise RawLeakError(f"final answer would leak raw output to the user: {leak}")


def disclaimer_answer(
    decision: VerdictDecision,
    contract: ExecutorContract | None,
    confirmed: Sequence[str],
    wording: Wording = ZH,
) -> str:
    """LOW_CONFID: the disclaimer, the rendered evidence of the used claims, the gaps."""
    parts = [wording.disclaimer]
    if any(o.rule == "verifier.fallback" for o in decision.overrides):
        parts.append(wording.verifier_fallback_notice)
    parts.append("\n".join(confirmed) if confirmed else wording.no_findings)
    gaps = _gap_lines(decision, contract, wording)
    if gaps:
        parts.append(section(wording.evidence_gaps_heading, gaps))
    return "\n\n".join(parts)


def degraded_answer(
    decision: VerdictDecision,
    contract: ExecutorContract | None,
    gatekeeper_rejected: bool,
    confirmed: Sequence[str],
    wording: Wording = ZH,
) -> str:
    """REJECT: the header, the rendered direct evidence, gaps and the fixed next steps."""
    if gatekeeper_rejected:
        shown = wording.no_facts_after_gatekeeper_reject
    elif confirmed:
        shown = "\n".join(confirmed)
    else:
        shown = wording.no_findings
    return "\n\n".join(
        [
            wording.degraded_header,
            shown,
            section(
                wording.evidence_gaps_heading,
                _gap_lines(decision, contract, wording) or [wording.no_gaps],
            ),
            section(wording.next_steps_heading, _bulleted(wording.fallback_next_steps)),
        ]
    )


def left_out_line(dropped_code_ids: Sequence[str], wording: Wording = ZH) -> str:
    """Which claims a PASS answer left out, by code id ('' if none)."""
    if not dropped_code_ids:
        return ""
    return wording.left_out_claims.format(ids=wording.list_separator.join(dropped_code_ids))


def code_claim_ids(contract: ExecutorContract | None) -> dict[str, str]:
    """The executor's claim id -> ``claim-N``, N its position in the contract (first of a
    repeated id): how an answer names a claim, whatever id the model gave it."""
    ids: dict[str, str] = {}
    for position, claim in enumerate(contract.claims if contract is not None else (), start=1):
        ids.setdefault(claim.claim_id, f"claim-{position}")
    return ids


# --------------------------------------------------------------------------- content


def _gap_lines(
    decision: VerdictDecision, contract: ExecutorContract | None, wording: Wording
) -> list[str]:
    """One line per claim with a critical no_evidence fact, named by code id and type label,
    never quoted; one line for facts outside the claims."""
    claims = {c.claim_id: c for c in contract.claims} if contract is not None else {}
    code_ids = code_claim_ids(contract)
    gaps = []
    for fact in decision.facts:
        if fact.is_critical and fact.verification == "no_evidence":
            claim = claims.get(fact.claim_id or "")
            gaps.append(_claim_gap(claim, code_ids, wording))
    if any(override.rule == NO_CLAIM_IN_SCOPE for override in decision.overrides):
        gaps.append(wording.no_claim_in_scope_gap)  # a fixed line: never a set-aside claim
    return [f"- {gap}" for gap in dict.fromkeys(gaps)]


def _claim_gap(claim: Claim | None, code_ids: dict[str, str], wording: Wording) -> str:
    if claim is None:
        return wording.fact_gap
    claim_type = wording.claim_types.get(claim.claim_type, wording.claim_types["observation"])
    return wording.claim_gap.format(code_id=code_ids[claim.claim_id], claim_type=claim_type)


def is_presentable(text: str) -> bool:
    """Says something (a word, not just a slot or punctuation) and does not look raw."""
    informative = any(ch.isalnum() for ch in text) and not _PLACEHOLDER_RE.fullmatch(text)
    return informative and find_raw_leak(text) is None


# --------------------------------------------------------------------------- layout


def section(heading: str, lines: Sequence[str]) -> str:
    return "\n".join([heading, *lines])


def numbered(items: Sequence[str]) -> list[str]:
    return [f"{index}. {item}" for index, item in enumerate(items, start=1)]


def _bulleted(items: Sequence[str]) -> list[str]:
    return [f"- {item}" for item in items]


def _parses_as_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def check_route_matches_verdict(route: RouteDecision, decision: VerdictDecision) -> None:
    if route.action == "retry":
        raise ValueError("compose_answer: route 'retry' is not a final answer; run another round")
    expected = _EXPECTED_VERDICT[route.action]
    if decision.derived_verdict != expected:
        raise ValueError(
            f"compose_answer: route {route.action!r} needs derived_verdict {expected!r},"
            f" got {decision.derived_verdict!r}"
        )
