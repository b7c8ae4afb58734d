"""Where a citation points: its raw path, its excerpt, or a search's empty result.

The gatekeeper (:mod:`.gatekeeper`) settles *which* invocation a binding cites; this module
checks the rest against that invocation's row: the raw path must be one of its ``evidence_refs``
(or, for a completed search that found nothing, its collection path, see
:data:`~pytest_diageval.core.contract.gatekeeper_rules.NO_HIT_RAW_PATHS`), and the excerpt a
quote of that ref's text (:mod:`.excerpt_match`). A real citation of an item that reads as an
instruction to the model is flagged (:mod:`.instruction_like`). Each outcome is one
``CheckedBinding`` row.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_diageval.core.contract.contracts import (
    CheckedBinding,
    EvidenceBinding,
    EvidenceRef,
    Severity,
    ToolInvocation,
)
from pytest_diageval.core.contract.evidence_tools import EVIDENCE_TOOL_TABLE
from pytest_diageval.core.contract.gatekeeper_rules import (
    ALLOWED_RAW_PATH_FORMS,
    EXCERPT_MISMATCH,
    EXCERPT_MISSING,
    EXCERPT_TOO_SHORT,
    INSTRUCTION_LIKE,
    NO_HIT_RAW_PATHS,
    RAW_PATH,
    RAW_PATH_MISSING,
    REFS_UNAVAILABLE,
)
from pytest_diageval.core.contract.rules import severity
from pytest_diageval.core.judge.excerpt_match import match_excerpt
from pytest_diageval.core.judge.instruction_like import fields_signals, instruction_signals

__all__ = ["Cited", "canonical_raw_path", "check_location", "no_hit_text"]

# [0-9], not \d: \d also matches full-width and Arabic-Indic digits, which are not an index.
_LIST_KEYS = "|".join(re.escape(tool.list_key) for tool in EVIDENCE_TOOL_TABLE)
_RAW_PATH_RE = re.compile(rf"\$\.({_LIST_KEYS})\[([0-9]+)\]")


@dataclass(frozen=True)
class Cited:
    """One binding and who cited it, with the fields every row of it repeats."""

    label: str  # "claim claim-1, binding 1" — names the binding in messages
    claim_id: str | None
    action_id: str | None
    binding: EvidenceBinding

    def row(
        self,
        *,
        invocation_id: int | None,
        rule: str | None = None,
        message: str | None = None,
        matched_text: str | None = None,
    ) -> CheckedBinding:
        """The binding's row: a pass without ``rule``, else a fail graded by the rules table."""
        grade: Severity = "none" if rule is None else severity(rule)
        return CheckedBinding(
            claim_id=self.claim_id,
            action_id=self.action_id,
            tool_name=self.binding.tool_name,
            source_invocation_id=invocation_id,
            raw_path=self.binding.raw_path,
            evidence_excerpt=self.binding.evidence_excerpt,
            status="pass" if grade == "none" else "fail",
            grade=grade,
            matched_text=matched_text,
            rule=rule,
            message=None if message is None else f"{self.label}: {message}",
        )


# --------------------------------------------------------------------------- path and excerpt


def canonical_raw_path(raw_path: str) -> str | None:
    """``$.alerts[01]`` -> ``$.alerts[1]``; ``None`` for any other form.

    Leading zeros are stripped as text: ``int()`` refuses strings over 4,300 digits.
    """
    found = _RAW_PATH_RE.fullmatch(raw_path.strip())
    if found is None:
        return None
    return f"$.{found.group(1)}[{found.group(2).lstrip('0') or '0'}]"


def check_location(cited: Cited, invocation: ToolInvocation) -> CheckedBinding:
    """Raw path, then excerpt, of a binding whose invocation is real and of the right tool."""
    raw_path = cited.binding.raw_path
    where = f"invocation {invocation.id} ({invocation.tool_name})"
    if raw_path is None or not raw_path.strip():
        return cited.row(
            invocation_id=invocation.id,
            rule=RAW_PATH_MISSING,
            message=f"raw_path is missing for {where}; expected one of its evidence_refs paths",
        )
    if raw_path.strip() == NO_HIT_RAW_PATHS.get(invocation.tool_name):
        return _check_no_hit(cited, invocation)
    canonical = canonical_raw_path(raw_path)
    if canonical is None:
        return cited.row(
            invocation_id=invocation.id,
            rule=RAW_PATH,
            message=(
                f"raw_path {raw_path!r} is malformed; allowed forms:"
                f" {', '.join(ALLOWED_RAW_PATH_FORMS)} (i = item index), or"
                f" {NO_HIT_RAW_PATHS.get(invocation.tool_name, '$.logs')} for the empty"
                " result of a search that found nothing"
            ),
        )
    details = invocation.retrieval_details
    refs = None if details is None else details.evidence_refs
    if refs is None:
        return cited.row(
            invocation_id=invocation.id,
            rule=REFS_UNAVAILABLE,
            message=f"{where} has no evidence_refs (legacy row), so {raw_path!r} cannot be checked",
        )
    ref = next((ref for ref in refs if ref.raw_path == canonical), None)
    if ref is None:
        available = ", ".join(r.raw_path for r in refs) or "none"
        return cited.row(
            invocation_id=invocation.id,
            rule=RAW_PATH,
            message=(
                f"raw_path {raw_path!r} is not among the evidence_refs of {where};"
                f" available: {available}"
            ),
        )
    fields = next(
        (
            item.fields
            for item in (details.evidence_items or [] if details is not None else [])
            if item.raw_path == canonical
        ),
        None,
    )
    return _check_excerpt(
        cited, invocation.id, canonical, ref.text, _neighbours(refs, canonical), fields
    )


def _neighbours(refs: list[EvidenceRef], canonical: str) -> tuple[str | None, str | None]:
    """The texts of the items right before and after ``canonical`` in the same collection:
    an order split across two log rows of one search is read whole."""
    found = _RAW_PATH_RE.fullmatch(canonical)
    assert found is not None  # canonical paths come from canonical_raw_path
    collection, index = found.group(1), int(found.group(2))
    texts = {ref.raw_path: ref.text for ref in refs}
    return texts.get(f"$.{collection}[{index - 1}]"), texts.get(f"$.{collection}[{index + 1}]")


def no_hit_text(invocation: ToolInvocation) -> str:
    """The system's description of a completed search that found nothing."""
    searched = ", ".join(
        f"{key}={value}"
        for key, value in sorted(invocation.input_params.items())
        if value not in (None, "", [])
    )
    text = f"{invocation.tool_name}({searched}) 未命中：total=0"
    message = _preview_message(invocation.output_preview)
    return text if message is None else f"{text}，{message}"


def _preview_message(preview: str | None) -> str | None:
    """The tool's own no-hit ``message`` (e.g. 未找到匹配的日志), when the preview holds it."""
    try:
        output = json.loads(preview or "")
    except ValueError:
        return None
    message = output.get("message") if isinstance(output, dict) else None
    return message if isinstance(message, str) and message.strip() else None


def _check_no_hit(cited: Cited, invocation: ToolInvocation) -> CheckedBinding:
    """A collection path quotes the empty result: real only for a completed no-hit search."""
    details = invocation.retrieval_details
    status = None if details is None else details.evidence_status
    path = cited.binding.raw_path
    if not invocation.success or status != "no_evidence":
        what = "failed" if not invocation.success else f"has evidence_status {status!r}"
        return cited.row(
            invocation_id=invocation.id,
            rule=RAW_PATH,
            message=(
                f"raw_path {path!r} cites the empty result of invocation {invocation.id}"
                f" ({invocation.tool_name}), but that call {what}; only a completed search"
                " that found nothing has an empty result to cite"
            ),
        )
    text = no_hit_text(invocation)
    # The same comparison as any citation (004: the excerpt 必须与系统侧 text 一致或高度相似):
    # "[]" or "not []" says nothing comparable about the search, so it cannot carry a PASS.
    where = f"the empty result of invocation {invocation.id}"
    compared = _compare_excerpt(cited, invocation.id, where, text)
    if isinstance(compared, CheckedBinding):
        return compared
    return cited.row(invocation_id=invocation.id, matched_text=text)


def _check_excerpt(
    cited: Cited,
    invocation_id: int,
    path: str,
    text: str,
    neighbours: tuple[str | None, str | None] = (None, None),
    fields: Mapping[str, Any] | None = None,
) -> CheckedBinding:
    """The excerpt compared with the item's text, then the item read for orders: its text
    with the rows beside it, and its fields read together (an order split across an alert's
    summary and description)."""
    where = f"{path} of invocation {invocation_id}"
    compared = _compare_excerpt(cited, invocation_id, where, text)
    if isinstance(compared, CheckedBinding):
        return compared
    before, after = neighbours
    signals = instruction_signals(text, before=before, after=after) or (
        fields_signals(fields) if fields else []
    )
    if signals:
        found = "; ".join(f"{signal.name}: {signal.snippet!r}" for signal in signals)
        return cited.row(
            invocation_id=invocation_id,
            rule=INSTRUCTION_LIKE,
            message=f"{where} reads as an instruction to the model ({found}); evidence is"
            " data, and an item that gives orders cannot carry a PASS",
            matched_text=compared,
        )
    return cited.row(invocation_id=invocation_id, matched_text=compared)


def _compare_excerpt(
    cited: Cited, invocation_id: int, where: str, text: str
) -> CheckedBinding | str:
    """The graded row of an excerpt that is missing, too short to compare or not in ``text``;
    otherwise the text it matched."""
    excerpt = cited.binding.evidence_excerpt
    if excerpt is None or not excerpt.strip():
        return cited.row(
            invocation_id=invocation_id,
            rule=EXCERPT_MISSING,
            message=f"evidence_excerpt is missing; nothing from {where} was quoted",
            matched_text=text,
        )
    match = match_excerpt(excerpt, text)
    if match.outcome == "too_short":
        return cited.row(
            invocation_id=invocation_id,
            rule=EXCERPT_TOO_SHORT,
            message=f"evidence_excerpt {excerpt!r} is too short or generic to compare with"
            f" {where}: " + match.reason,
            matched_text=text,
        )
    if match.outcome == "mismatch":
        return cited.row(
            invocation_id=invocation_id,
            rule=EXCERPT_MISMATCH,
            message=f"evidence_excerpt {excerpt!r} is not supported by {where}: {match.reason}",
            matched_text=text,
        )
    return match.matched_text or text
