"""The gatekeeper: code, not a model, checks that every cited piece of evidence is real.

For every evidence binding of every claim and every recommended action it writes one
``CheckedBinding`` row (what was cited, what the store holds, which rule stopped it) and
grades the contract. It decides whether a citation is *real*, never whether a claim holds.

The rules and their grades are listed in :mod:`~pytest_diageval.core.gatekeeper_rules`.

Auto-backfill (kept for old executors, tightened as in seed 004): only when the binding has no
``source_invocation_id``, names a ``tool_name``, and exactly one invocation of that tool exists
in the session. Only the id is filled, never ``raw_path``; a warning
``evidence.invocation_auto_backfill`` is always recorded. When a raw path was given, the
normal checks run, so a forged path or excerpt still rejects.

Every binding names its ``tool_name`` (the contract requires it). Model numbers are taken
as they come and never converted blindly: an id outside SQLite's integer range is simply not
in the store (``evidence.invocation_ref``), and a raw-path index is ASCII digits compared as
text (full-width or Arabic-Indic digits are malformed; a 5,000-digit index is no ref), so no
contract can make the check raise. ``status`` is
``pass`` only when no row failed; ``severity`` is the worst grade (reject > low_confid > none);
``failed_rules`` are unique in first-seen order; ``errors`` hold one message per failed row.
``matched_text`` is the system-side text: the matched span on a pass, the whole ref text when
the excerpt was compared and failed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_diageval.core.contracts import (
    CheckedBinding,
    EvidenceBinding,
    ExecutorContract,
    GatekeeperResult,
    RuleMessage,
    Severity,
    ToolInvocation,
)
from pytest_diageval.core.excerpt_match import match_excerpt
from pytest_diageval.core.gatekeeper_rules import (
    ALLOWED_RAW_PATH_FORMS,
    AUTO_BACKFILL,
    BINDINGS_EMPTY,
    CLAIMS_EMPTY,
    EXCERPT_MISMATCH,
    EXCERPT_MISSING,
    EXCERPT_TOO_SHORT,
    INSTRUCTION_LIKE,
    INVOCATION_MISSING,
    INVOCATION_REF,
    NO_HIT_RAW_PATHS,
    PARSE_FAILED_RULE,
    RAW_PATH,
    RAW_PATH_MISSING,
    REFS_UNAVAILABLE,
    TOOL_MISMATCH,
)
from pytest_diageval.core.instruction_like import instruction_signals
from pytest_diageval.core.store import Store

__all__ = ["Gatekeeper", "no_hit_text", "parse_failure_result"]

# [0-9], not \d: \d also matches full-width and Arabic-Indic digits, which are not an index.
_RAW_PATH_RE = re.compile(r"\$\.(alerts|logs|evidence_blocks)\[([0-9]+)\]")
_SQLITE_INTEGER = range(-(2**63), 2**63)
_SEVERITY_RANK: dict[Severity, int] = {"none": 0, "low_confid": 1, "reject": 2}


def parse_failure_result(detail: str) -> GatekeeperResult:
    """An executor output that could not be parsed has nothing to check: low_confid."""
    message = f"executor output could not be parsed, no citation can be checked: {detail}"
    return GatekeeperResult(
        status="fail",
        severity="low_confid",
        failed_rules=[PARSE_FAILED_RULE],
        errors=[RuleMessage(rule=PARSE_FAILED_RULE, message=message)],
    )


@dataclass(frozen=True)
class _Cited:
    """One binding and who cited it, with the fields every row of it repeats."""

    label: str  # "claim claim-1, binding 1" — names the binding in messages
    claim_id: str | None
    action_id: str | None
    binding: EvidenceBinding

    def row(
        self,
        *,
        invocation_id: int | None,
        grade: Severity,
        rule: str | None = None,
        message: str | None = None,
        matched_text: str | None = None,
    ) -> CheckedBinding:
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


class Gatekeeper:
    """Checks an executor contract's citations against the session's ``tool_invocation`` rows."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def check(self, contract: ExecutorContract, session_id: str) -> GatekeeperResult:
        check = _SessionCheck(self._store, session_id)
        rows = [] if contract.claims else [_claims_empty()]
        for claim in contract.claims:
            if not claim.evidence_bindings and claim.support_level in ("direct", "indirect"):
                rows.append(_bindings_empty(claim.claim_id, claim.support_level))
            for number, binding in enumerate(claim.evidence_bindings, start=1):
                label = f"claim {claim.claim_id}, binding {number}"
                rows.append(check.binding(_Cited(label, claim.claim_id, None, binding)))
        for index, action in enumerate(contract.recommended_actions):
            action_id = action.action_id or f"recommended_actions[{index}]"
            for number, binding in enumerate(action.evidence_bindings, start=1):
                label = f"action {action_id}, binding {number}"
                rows.append(check.binding(_Cited(label, None, action_id, binding)))
        return _result(rows, check.warnings)


def _claims_empty() -> CheckedBinding:
    # Without claims a verifier PASS over facts of its own choosing would publish the answer
    # unchecked; missing evidence grades low_confid (004), so the answer gets the disclaimer.
    message = "the contract has no claims: nothing in user_facing_answer is bound to evidence"
    return CheckedBinding(status="fail", grade="low_confid", rule=CLAIMS_EMPTY, message=message)


def _bindings_empty(claim_id: str, support_level: str) -> CheckedBinding:
    return CheckedBinding(
        claim_id=claim_id,
        status="fail",
        grade="low_confid",
        rule=BINDINGS_EMPTY,
        message=(
            f"claim {claim_id}: support_level is {support_level!r} but evidence_bindings is"
            " empty; cite source_invocation_id + raw_path + evidence_excerpt"
        ),
    )


def _result(rows: list[CheckedBinding], warnings: list[RuleMessage]) -> GatekeeperResult:
    failed = [row for row in rows if row.status == "fail"]
    severity: Severity = max(
        (row.grade for row in failed), key=_SEVERITY_RANK.__getitem__, default="none"
    )
    errors = [RuleMessage(rule=row.rule or "", message=row.message or "") for row in failed]
    return GatekeeperResult(
        status="fail" if failed else "pass",
        severity=severity,
        checked_bindings=rows,
        failed_rules=list(dict.fromkeys(error.rule for error in errors)),
        warnings=warnings,
        errors=errors,
    )


class _SessionCheck:
    """Checks the bindings of one contract against one session's rows."""

    def __init__(self, store: Store, session_id: str) -> None:
        self._store = store
        self._session_id = session_id
        self._rows = store.list_invocations(session_id)
        self._by_id = {row.id: row for row in self._rows}
        self.warnings: list[RuleMessage] = []

    def binding(self, cited: _Cited) -> CheckedBinding:
        binding = cited.binding
        if binding.source_invocation_id is not None:
            return self._cited_id(cited, binding.source_invocation_id)
        legacy = binding.source_invocation_ids or []
        if len(legacy) > 1:
            return self._several_ids(cited, legacy)
        return self._backfill(cited)

    # ---------------------------------------------------------------- the id

    def _foreign_or_unknown(self, cited: _Cited, invocation_id: int) -> CheckedBinding | None:
        """The reject row when the id is not one of this session's invocations."""
        if invocation_id in self._by_id:
            return None
        # SQLite refuses (OverflowError) an integer beyond 64 bits; no row can have such an id.
        storable = invocation_id in _SQLITE_INTEGER
        other = self._store.get_invocation(invocation_id) if storable else None
        where = (
            "does not exist"
            if other is None
            else f"belongs to session {other.session_id!r}, not {self._session_id!r}"
        )
        return cited.row(
            invocation_id=invocation_id,
            grade="reject",
            rule=INVOCATION_REF,
            message=f"source_invocation_id {invocation_id} {where}",
        )

    def _cited_id(self, cited: _Cited, invocation_id: int) -> CheckedBinding:
        rejected = self._foreign_or_unknown(cited, invocation_id)
        if rejected is not None:
            return rejected
        invocation = self._by_id[invocation_id]
        claimed = cited.binding.tool_name
        if claimed != invocation.tool_name:
            return cited.row(
                invocation_id=invocation_id,
                grade="reject",
                rule=TOOL_MISMATCH,
                message=(
                    f"tool_name is {claimed!r} but invocation {invocation_id} is a"
                    f" {invocation.tool_name!r} call"
                ),
            )
        return _check_location(cited, invocation)

    def _several_ids(self, cited: _Cited, ids: Sequence[int]) -> CheckedBinding:
        for invocation_id in ids:
            rejected = self._foreign_or_unknown(cited, invocation_id)
            if rejected is not None:
                return rejected
        return cited.row(
            invocation_id=None,
            grade="low_confid",
            rule=INVOCATION_MISSING,
            message=(
                f"source_invocation_ids lists {len(ids)} invocations {list(ids)} and no single"
                " source_invocation_id; one binding must cite exactly one invocation"
            ),
        )

    def _backfill(self, cited: _Cited) -> CheckedBinding:
        tool = cited.binding.tool_name
        candidates = [row for row in self._rows if row.tool_name == tool]
        if len(candidates) != 1:
            why = (
                f"and the session has {len(candidates)} {tool!r} invocations"
                f" {[row.id for row in candidates]}, so it cannot be backfilled"
                " (backfill needs exactly one)"
            )
            return cited.row(
                invocation_id=None,
                grade="low_confid",
                rule=INVOCATION_MISSING,
                message=f"source_invocation_id is missing {why}",
            )
        invocation = candidates[0]
        path = cited.binding.raw_path
        rest = (
            "raw_path remains missing"
            if not path
            else f"raw_path {path!r} was given by the executor and is checked as usual"
        )
        self.warnings.append(
            RuleMessage(
                rule=AUTO_BACKFILL,
                message=(
                    f"{cited.label}: source_invocation_id was auto-filled with {invocation.id}"
                    f" from the unique {tool!r} invocation candidate; {rest}"
                ),
            )
        )
        checked = _check_location(cited, invocation)
        if checked.status == "fail":
            return checked
        return cited.row(
            invocation_id=invocation.id,
            grade="low_confid",
            rule=AUTO_BACKFILL,
            message=(
                f"source_invocation_id {invocation.id} was auto-filled, not cited;"
                " an auto-filled binding never supports a PASS"
            ),
            matched_text=checked.matched_text,
        )


# --------------------------------------------------------------------------- path and excerpt


def _canonical_raw_path(raw_path: str) -> str | None:
    """``$.alerts[01]`` -> ``$.alerts[1]``; ``None`` for any other form.

    Leading zeros are stripped as text: ``int()`` refuses strings over 4,300 digits.
    """
    found = _RAW_PATH_RE.fullmatch(raw_path.strip())
    if found is None:
        return None
    return f"$.{found.group(1)}[{found.group(2).lstrip('0') or '0'}]"


def _check_location(cited: _Cited, invocation: ToolInvocation) -> CheckedBinding:
    """Raw path, then excerpt, of a binding whose invocation is real and of the right tool."""
    raw_path = cited.binding.raw_path
    where = f"invocation {invocation.id} ({invocation.tool_name})"
    if raw_path is None or not raw_path.strip():
        return cited.row(
            invocation_id=invocation.id,
            grade="low_confid",
            rule=RAW_PATH_MISSING,
            message=f"raw_path is missing for {where}; expected one of its evidence_refs paths",
        )
    if raw_path.strip() == NO_HIT_RAW_PATHS.get(invocation.tool_name):
        return _check_no_hit(cited, invocation)
    canonical = _canonical_raw_path(raw_path)
    if canonical is None:
        return cited.row(
            invocation_id=invocation.id,
            grade="reject",
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
            grade="low_confid",
            rule=REFS_UNAVAILABLE,
            message=f"{where} has no evidence_refs (legacy row), so {raw_path!r} cannot be checked",
        )
    ref = next((ref for ref in refs if ref.raw_path == canonical), None)
    if ref is None:
        available = ", ".join(r.raw_path for r in refs) or "none"
        return cited.row(
            invocation_id=invocation.id,
            grade="reject",
            rule=RAW_PATH,
            message=(
                f"raw_path {raw_path!r} is not among the evidence_refs of {where};"
                f" available: {available}"
            ),
        )
    return _check_excerpt(cited, invocation.id, canonical, ref.text)


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


def _check_no_hit(cited: _Cited, invocation: ToolInvocation) -> CheckedBinding:
    """A collection path quotes the empty result: real only for a completed no-hit search."""
    details = invocation.retrieval_details
    status = None if details is None else details.evidence_status
    path = cited.binding.raw_path
    if not invocation.success or status != "no_evidence":
        what = "failed" if not invocation.success else f"has evidence_status {status!r}"
        return cited.row(
            invocation_id=invocation.id,
            grade="reject",
            rule=RAW_PATH,
            message=(
                f"raw_path {path!r} cites the empty result of invocation {invocation.id}"
                f" ({invocation.tool_name}), but that call {what}; only a completed search"
                " that found nothing has an empty result to cite"
            ),
        )
    text = no_hit_text(invocation)
    excerpt = cited.binding.evidence_excerpt
    if excerpt is not None and excerpt.strip():
        match = match_excerpt(excerpt, text)
        if match.outcome == "mismatch":
            return cited.row(
                invocation_id=invocation.id,
                grade="reject",
                rule=EXCERPT_MISMATCH,
                message=f"evidence_excerpt {excerpt!r} is not supported by the empty result"
                f" of invocation {invocation.id}: {match.reason}",
                matched_text=text,
            )
    return cited.row(invocation_id=invocation.id, grade="none", matched_text=text)


def _check_excerpt(cited: _Cited, invocation_id: int, path: str, text: str) -> CheckedBinding:
    excerpt = cited.binding.evidence_excerpt
    where = f"{path} of invocation {invocation_id}"
    if excerpt is None or not excerpt.strip():
        return cited.row(
            invocation_id=invocation_id,
            grade="low_confid",
            rule=EXCERPT_MISSING,
            message=f"evidence_excerpt is missing; nothing from {where} was quoted",
            matched_text=text,
        )
    match = match_excerpt(excerpt, text)
    if match.outcome == "too_short":
        return cited.row(
            invocation_id=invocation_id,
            grade="low_confid",
            rule=EXCERPT_TOO_SHORT,
            message=f"evidence_excerpt {excerpt!r} is too short or generic to compare with"
            f" {where}: " + match.reason,
            matched_text=text,
        )
    if match.outcome == "mismatch":
        return cited.row(
            invocation_id=invocation_id,
            grade="reject",
            rule=EXCERPT_MISMATCH,
            message=f"evidence_excerpt {excerpt!r} is not supported by {where}: {match.reason}",
            matched_text=text,
        )
    signals = instruction_signals(text)
    if signals:
        found = "; ".join(f"{signal.name}: {signal.snippet!r}" for signal in signals)
        return cited.row(
            invocation_id=invocation_id,
            grade="low_confid",
            rule=INSTRUCTION_LIKE,
            message=f"{where} reads as an instruction to the model ({found}); evidence is"
            " data, and an item that gives orders cannot carry a PASS",
            matched_text=match.matched_text,
        )
    return cited.row(invocation_id=invocation_id, grade="none", matched_text=match.matched_text)
