"""The one-line headline of a failed check, and reasons printed whole (real ChatResults)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/, for the support package
from pytest_diageval.core.contract.contracts import CheckedBinding, GatekeeperResult, RuleMessage
from pytest_diageval.harness.checks import evidence_lines as _evidence
from pytest_diageval.harness.checks.evaluators import CheckOutcome, check_rounds, check_verdict
from support.chat_results import forged_reject, highcpu_pass

LONG_REASON = (
    "the excerpt 'HighMemoryUsage resolved, service=inventory-service, current=12%' is not"
    " supported by $.logs[0] of invocation 2: no run of its tokens occurs in that item's text,"
    " which reads 'order-service JVM heap at 91% of 4GB, full GC every 30s' instead"
)


def test_the_verdict_headline_names_the_gatekeeper_rule() -> None:
    outcome = check_verdict("PASS", forged_reject())
    assert outcome.headline("verdict") == (
        "verdict: expected PASS, got REJECT"
        " (gatekeeper reject: evidence.raw_path, evidence.excerpt_mismatch)"
    )


def test_the_verdict_headline_gives_the_score_when_the_gatekeeper_passed() -> None:
    outcome = check_verdict(["LOW_CONFID", "REJECT"], highcpu_pass())
    assert outcome.headline("verdict").startswith(
        "verdict: expected one of LOW_CONFID, REJECT, got PASS (score "
    )


def test_other_headlines_are_expected_against_actual() -> None:
    assert check_rounds(2, highcpu_pass()).headline("rounds") == "rounds: expected 2, got 1"
    multiline = CheckOutcome(False, "a\nb", "c", reason="d  e")
    assert multiline.headline("k") == "k: expected a b, got c (d e)"


def test_gatekeeper_reasons_are_printed_whole() -> None:
    gate = GatekeeperResult(
        status="fail",
        severity="reject",
        checked_bindings=[
            CheckedBinding(
                claim_id="claim-1",
                raw_path="$.logs[0]",
                status="fail",
                grade="reject",
                rule="evidence.excerpt_mismatch",
                message=LONG_REASON,
            )
        ],
        failed_rules=["evidence.excerpt_mismatch"],
        warnings=[RuleMessage(rule="evidence.some_warning", message=LONG_REASON)],
    )
    lines = _evidence.gatekeeper_lines(gate)
    assert lines[2].endswith(f"| {LONG_REASON}")
    assert f"warning evidence.some_warning: {LONG_REASON}" in lines
    assert not any("…" in line for line in lines)
