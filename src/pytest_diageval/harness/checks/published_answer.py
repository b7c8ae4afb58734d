"""The ``composer`` expectation: what the final answer was built from."""

from __future__ import annotations

from pytest_diageval.agents.results import ChatResult
from pytest_diageval.harness.checks import evidence_lines as ev
from pytest_diageval.harness.checks.outcome import (
    CheckOutcome,
    describe_expected,
    needs_rounds,
    set_difference,
)
from pytest_diageval.harness.format.scenario import ComposerExpectation

__all__ = ["check_composer"]


@needs_rounds
def check_composer(expected: ComposerExpectation, result: ChatResult) -> CheckOutcome:
    """What the composer published: source, status, the claims used and dropped."""
    output = result.composer_output
    if output is None:
        return CheckOutcome(False, describe_expected(expected), "no composer output recorded")
    problems: list[str] = []
    for name in ("source", "status", "statements_dropped"):
        want = getattr(expected, name)
        if want is not None and getattr(output, name) != want:
            problems.append(f"{name}: expected {want}, got {getattr(output, name)}")
    dropped = [d.claim_id for d in output.claims_dropped]
    if expected.claims_used is not None:
        problems += set_difference("claims_used", expected.claims_used, output.claims_used)
    if expected.claims_dropped is not None:
        problems += set_difference("claims_dropped", expected.claims_dropped, dropped)
    actual = (
        f"source={output.source}, status={output.status}, claims_used={output.claims_used},"
        f" claims_dropped={dropped}, statements_dropped={output.statements_dropped}"
    )
    reasons = [f"dropped {d.claim_id}: {d.reason}" for d in output.claims_dropped]
    details = [*problems, *reasons, f"final answer: {ev.shorten(result.final_answer, 200)}"]
    return CheckOutcome(not problems, describe_expected(expected), actual, details)
