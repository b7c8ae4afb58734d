"""The gatekeeper: code, not a model, checks that every cited piece of evidence is real.

For every evidence binding of every claim and every recommended action it writes one
``CheckedBinding`` row (what was cited, what the store holds, which rule stopped it) and
grades the contract. It decides whether a citation is *real*, never whether a claim holds.

The rules and their grades are rows of :mod:`~pytest_diageval.core.contract.rules` (each row's
severity is read from there), described in :mod:`~pytest_diageval.core.contract.gatekeeper_rules`.
This module settles which invocation a binding cites; :mod:`.citation` checks the raw path and
the excerpt against that invocation's row.

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

from collections.abc import Sequence

from pytest_diageval.core.contract.contracts import (
    CheckedBinding,
    ExecutorContract,
    GatekeeperResult,
    RuleMessage,
    Severity,
)
from pytest_diageval.core.contract.gatekeeper_rules import (
    AUTO_BACKFILL,
    BINDINGS_EMPTY,
    CLAIMS_EMPTY,
    INVOCATION_MISSING,
    INVOCATION_REF,
    PARSE_FAILED_RULE,
    TOOL_MISMATCH,
)
from pytest_diageval.core.contract.rules import severity
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.judge.citation import Cited, check_location

__all__ = ["Gatekeeper", "parse_failure_result"]

_SQLITE_INTEGER = range(-(2**63), 2**63)
_SEVERITY_RANK: dict[Severity, int] = {"none": 0, "low_confid": 1, "reject": 2}


def parse_failure_result(detail: str) -> GatekeeperResult:
    """An executor output that could not be parsed has nothing to check: low_confid."""
    message = f"executor output could not be parsed, no citation can be checked: {detail}"
    return GatekeeperResult(
        status="fail",
        severity=severity(PARSE_FAILED_RULE),
        failed_rules=[PARSE_FAILED_RULE],
        errors=[RuleMessage(rule=PARSE_FAILED_RULE, message=message)],
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
                rows.append(check.binding(Cited(label, claim.claim_id, None, binding)))
        for index, action in enumerate(contract.recommended_actions):
            action_id = action.action_id or f"recommended_actions[{index}]"
            for number, binding in enumerate(action.evidence_bindings, start=1):
                label = f"action {action_id}, binding {number}"
                rows.append(check.binding(Cited(label, None, action_id, binding)))
        return _result(rows, check.warnings)


def _claims_empty() -> CheckedBinding:
    # Without claims a verifier PASS over facts of its own choosing would publish the answer
    # unchecked; missing evidence grades low_confid (004), so the answer gets the disclaimer.
    message = "the contract has no claims: nothing in user_facing_answer is bound to evidence"
    return CheckedBinding(
        status="fail", grade=severity(CLAIMS_EMPTY), rule=CLAIMS_EMPTY, message=message
    )


def _bindings_empty(claim_id: str, support_level: str) -> CheckedBinding:
    return CheckedBinding(
        claim_id=claim_id,
        status="fail",
        grade=severity(BINDINGS_EMPTY),
        rule=BINDINGS_EMPTY,
        message=(
            f"claim {claim_id}: support_level is {support_level!r} but evidence_bindings is"
            " empty; cite source_invocation_id + raw_path + evidence_excerpt"
        ),
    )


def _result(rows: list[CheckedBinding], warnings: list[RuleMessage]) -> GatekeeperResult:
    failed = [row for row in rows if row.status == "fail"]
    worst: Severity = max(
        (row.grade for row in failed), key=_SEVERITY_RANK.__getitem__, default="none"
    )
    errors = [RuleMessage(rule=row.rule or "", message=row.message or "") for row in failed]
    return GatekeeperResult(
        status="fail" if failed else "pass",
        severity=worst,
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

    def binding(self, cited: Cited) -> CheckedBinding:
        binding = cited.binding
        if binding.source_invocation_id is not None:
            return self._cited_id(cited, binding.source_invocation_id)
        legacy = binding.source_invocation_ids or []
        if len(legacy) > 1:
            return self._several_ids(cited, legacy)
        return self._backfill(cited)

    # ---------------------------------------------------------------- the id

    def _foreign_or_unknown(self, cited: Cited, invocation_id: int) -> CheckedBinding | None:
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
            rule=INVOCATION_REF,
            message=f"source_invocation_id {invocation_id} {where}",
        )

    def _cited_id(self, cited: Cited, invocation_id: int) -> CheckedBinding:
        rejected = self._foreign_or_unknown(cited, invocation_id)
        if rejected is not None:
            return rejected
        invocation = self._by_id[invocation_id]
        claimed = cited.binding.tool_name
        if claimed != invocation.tool_name:
            return cited.row(
                invocation_id=invocation_id,
                rule=TOOL_MISMATCH,
                message=(
                    f"tool_name is {claimed!r} but invocation {invocation_id} is a"
                    f" {invocation.tool_name!r} call"
                ),
            )
        return check_location(cited, invocation)

    def _several_ids(self, cited: Cited, ids: Sequence[int]) -> CheckedBinding:
        for invocation_id in ids:
            rejected = self._foreign_or_unknown(cited, invocation_id)
            if rejected is not None:
                return rejected
        return cited.row(
            invocation_id=None,
            rule=INVOCATION_MISSING,
            message=(
                f"source_invocation_ids lists {len(ids)} invocations {list(ids)} and no single"
                " source_invocation_id; one binding must cite exactly one invocation"
            ),
        )

    def _backfill(self, cited: Cited) -> CheckedBinding:
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
        checked = check_location(cited, invocation)
        if checked.status == "fail":
            return checked
        return cited.row(
            invocation_id=invocation.id,
            rule=AUTO_BACKFILL,
            message=(
                f"source_invocation_id {invocation.id} was auto-filled, not cited;"
                " an auto-filled binding never supports a PASS"
            ),
            matched_text=checked.matched_text,
        )
