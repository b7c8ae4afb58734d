"""The persisted ``self_evaluation.verifier_evaluation`` record.

One record per verified round (including a verifier fallback, which is persisted too). The
channel keeps the seeds' flat shape for the latest round — so the latest gatekeeper result
is at ``self_evaluation.verifier_evaluation.gatekeeper_result`` — plus a ``rounds`` list with
every round's record in round order:

.. code-block:: text

    verifier_evaluation = {<latest round's record>, "rounds": [<round 1>, <round 2>]}

``scope_set_aside`` lists the round's claims outside the question's scope (claim id, type,
rules, reason); the session's scope itself is the ``scope_contract`` channel. The final
round's record also holds ``composer_output`` (what the answer published: verbatim,
composed or template, the claims used and the claims dropped with the reason).

Each record holds what an auditor needs to answer "what was cited, what was found, why was
it stopped": the ``tool_trace_summary`` snapshot the verifier saw, the gatekeeper result,
the executor parse status, what the model said, what the code decided and every override.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pytest_diageval.core.answer.composer import ComposerOutput
from pytest_diageval.core.answer.routing import RouteDecision
from pytest_diageval.core.contract.contracts import (
    GatekeeperResult,
    ParseStatus,
    ToolTraceSummaryItem,
    VerifierOutput,
)
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.judge.verdict import VerdictDecision
from pytest_diageval.core.scope.session import SetAsideClaim

__all__ = [
    "TRACEABILITY_VERSION",
    "build_verifier_evaluation",
    "persist_composer_output",
    "persist_verifier_evaluation",
]

TRACEABILITY_VERSION = "2"
_CHANNEL = "verifier_evaluation"


def build_verifier_evaluation(
    *,
    round: int,
    verifier_output: VerifierOutput | None,
    decision: VerdictDecision,
    gatekeeper: GatekeeperResult,
    trace_summary: Sequence[ToolTraceSummaryItem],
    parse_status: ParseStatus,
    route: RouteDecision,
    fallback_reason: str | None,
    set_aside: Sequence[SetAsideClaim] = (),
) -> dict[str, Any]:
    """One round's JSON-ready audit record."""
    if round < 1:
        raise ValueError(f"build_verifier_evaluation: round must be >= 1, got {round}")
    if (verifier_output is None) != (fallback_reason is not None):
        raise ValueError(
            "build_verifier_evaluation: fallback_reason is required exactly when"
            " verifier_output is None"
        )
    return {
        "traceability_version": TRACEABILITY_VERSION,
        "round": round,
        "verdict": decision.derived_verdict,
        "groundedness_score": decision.derived_score,
        "model_verdict": decision.model_verdict,
        "model_score": decision.model_score,
        "derived_verdict": decision.derived_verdict,
        "derived_score": decision.derived_score,
        "overrides": [o.model_dump(mode="json") for o in decision.overrides],
        "facts_checked": [f.model_dump(mode="json") for f in decision.facts],
        "verifier_output": (
            None if verifier_output is None else verifier_output.model_dump(mode="json")
        ),
        "verifier_fallback": fallback_reason is not None,
        "fallback_reason": fallback_reason,
        "tool_trace_summary": [item.model_dump(mode="json") for item in trace_summary],
        "gatekeeper_result": gatekeeper.model_dump(mode="json"),
        "executor_output_parse_status": parse_status.model_dump(mode="json"),
        "route": route.model_dump(mode="json"),
        "claim_ceilings": [c.model_dump(mode="json") for c in decision.claim_ceilings],
        "scope_set_aside": [claim.model_dump(mode="json") for claim in set_aside],
    }


def persist_verifier_evaluation(
    store: Store,
    session_id: str,
    record: dict[str, Any],
    *,
    rule_evaluation: dict[str, Any] | None = None,
) -> None:
    """Write ``record`` as the latest round, keeping every earlier round.

    A record for a round already stored replaces that round (a re-run is idempotent). The
    whole read-modify-write is one store transaction, so no concurrent writer is lost; a
    ``rule_evaluation`` given (the round's, JSON-ready) replaces that channel in the same
    transaction.
    """
    if "rounds" in record or not isinstance(record.get("round"), int):
        raise ValueError(
            "persist_verifier_evaluation: record must come from build_verifier_evaluation"
            " (an int 'round' and no 'rounds' key)"
        )

    def add_round(channel: Any) -> dict[str, Any]:
        rounds = [r for r in _stored_rounds(channel) if r.get("round") != record["round"]]
        rounds.append(record)
        rounds.sort(key=lambda r: int(r["round"]))
        return {**rounds[-1], "rounds": rounds}

    updates: dict[str, Callable[[Any], Any]] = {_CHANNEL: add_round}
    if rule_evaluation is not None:
        updates["rule_evaluation"] = lambda _old: rule_evaluation
    store.modify_self_evaluation_channels(session_id, updates)


def _stored_rounds(channel: Any) -> list[dict[str, Any]]:
    if not isinstance(channel, dict):
        return []
    rounds = channel.get("rounds")
    return [r for r in rounds if isinstance(r, dict)] if isinstance(rounds, list) else []


def persist_composer_output(store: Store, session_id: str, output: ComposerOutput) -> None:
    """Record what the composer published beside the final round's verdict: at
    ``verifier_evaluation.composer_output`` and in that round's entry of ``rounds``."""
    dumped = output.model_dump(mode="json")

    def add_output(channel: Any) -> dict[str, Any]:
        rounds = _stored_rounds(channel)
        if not rounds:
            raise ValueError("persist_composer_output: no verified round is stored yet")
        rounds[-1] = {**rounds[-1], "composer_output": dumped}
        return {**rounds[-1], "rounds": rounds}

    store.modify_self_evaluation(session_id, _CHANNEL, add_output)
