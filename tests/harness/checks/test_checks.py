"""Expectation checks on real ChatResults: every check passes on a right expectation and
fails on a wrong one, with the evidence a reviewer needs.

The results are real sessions assembled from the core pieces (see tests/support/chat_results.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/, for the support package
from pytest_diageval.agents.results import ChatResult
from pytest_diageval.core.contract.gatekeeper_rules import AUTO_BACKFILL
from pytest_diageval.harness.checks import evidence_lines as _evidence
from pytest_diageval.harness.checks.evaluators import (
    CHECKS,
    CheckOutcome,
    check_answer,
    check_claims,
    check_composer,
    check_forbidden_keywords,
    check_gatekeeper,
    check_groundedness,
    check_no_evidence,
    check_parse_status,
    check_required_keywords,
    check_rounds,
    check_tool_calls,
    check_verdict,
    run_check,
    run_checks,
)
from pytest_diageval.harness.format.scenario import (
    EXPECT_KEYS,
    ClaimsExpectation,
    ComposerExpectation,
    Expect,
    GatekeeperExpectation,
    NoEvidenceRow,
    RubricExpectation,
    ScoreRange,
    SetAsideExpectation,
    TokensExpectation,
    ToolCallsExpectation,
)
from support.chat_results import (
    errored,
    forged_reject,
    highcpu_pass,
    hikaricp_negative,
    parse_failed,
)


@pytest.fixture(scope="module")
def passing() -> ChatResult:
    return highcpu_pass()


@pytest.fixture(scope="module")
def negative() -> ChatResult:
    return hikaricp_negative()


@pytest.fixture(scope="module")
def rejected() -> ChatResult:
    return forged_reject()


@pytest.fixture(scope="module")
def unparsed() -> ChatResult:
    return parse_failed()


def test_the_fixtures_are_what_they_claim(
    passing: ChatResult, negative: ChatResult, rejected: ChatResult, unparsed: ChatResult
) -> None:
    assert (passing.final_verdict, passing.final_score, passing.answer_kind) == (
        "PASS",
        1.0,
        "direct",
    )
    assert [r.route.action for r in negative.rounds] == ["retry", "disclaimer"]
    assert (negative.final_verdict, negative.final_score) == ("LOW_CONFID", 0.0)
    assert (rejected.final_verdict, rejected.answer_kind) == ("REJECT", "degraded")
    assert rejected.rounds[0].gatekeeper.severity == "reject"
    assert unparsed.rounds[0].parse_status.status == "failed"


# --------------------------------------------------------------------------- verdict, score


def test_verdict(passing: ChatResult, rejected: ChatResult) -> None:
    assert check_verdict("PASS", passing).passed
    assert check_verdict(["LOW_CONFID", "REJECT"], rejected).passed
    wrong = check_verdict("PASS", rejected)
    assert not wrong.passed
    assert (wrong.expected, wrong.actual) == ("PASS", "REJECT (score 0.0)")
    assert "derived: REJECT 0.0 | model: PASS 0.95" in wrong.details
    assert any(
        line.startswith("override gatekeeper.reject: LOW_CONFID -> REJECT")
        for line in wrong.details
    )
    assert "facts checked:" in wrong.details
    header = wrong.details[wrong.details.index("facts checked:") + 1]
    assert header.split("|")[0].strip() == "fact"
    assert "payment-service CPU 高由连接池耗尽导致 | yes" in "".join(wrong.details).replace(
        "  ", " "
    )
    assert wrong.details[-1].startswith(
        "gatekeeper: severity reject; failed rules: evidence.raw_path"
    )
    listed = check_verdict(["PASS", "LOW_CONFID"], rejected)
    assert (listed.passed, listed.expected) == (False, "one of PASS, LOW_CONFID")


def test_facts_table_columns_line_up_with_chinese_text(rejected: ChatResult) -> None:
    details = check_verdict("PASS", rejected).details
    start = details.index("facts checked:") + 1
    header, row = details[start], details[start + 1]
    bar = [_evidence.width(header[: header.index("|")]), _evidence.width(row[: row.index("|")])]
    assert bar[0] == bar[1]


def test_groundedness(passing: ChatResult, negative: ChatResult) -> None:
    assert check_groundedness(ScoreRange(min=0.9), passing).passed
    assert check_groundedness(ScoreRange(min=0.0, max=0.49), negative).passed
    wrong = check_groundedness(ScoreRange(min=0.5), negative)
    assert (wrong.passed, wrong.expected, wrong.actual) == (False, "0.5 <= score", "score 0.0")
    assert "round 1: LOW_CONFID 0.0 -> retry" in wrong.details[0]


def test_rounds(passing: ChatResult, negative: ChatResult) -> None:
    assert check_rounds(2, negative).passed
    wrong = check_rounds(2, passing)
    assert (wrong.passed, wrong.actual) == (False, "1")
    assert wrong.details[0].startswith("round 1: PASS 1.0 -> direct")


def test_answer(passing: ChatResult, rejected: ChatResult) -> None:
    assert check_answer("direct", passing).passed
    wrong = check_answer("direct", rejected)
    assert (wrong.passed, wrong.actual) == (False, "degraded")
    assert wrong.details[-1].startswith("final answer: 【无法可靠回答】")


def test_parse_status(passing: ChatResult, unparsed: ChatResult) -> None:
    assert check_parse_status("failed", unparsed).passed
    wrong = check_parse_status("failed", passing)
    assert (wrong.passed, wrong.actual) == (False, "valid")
    assert check_parse_status("valid", unparsed).details[-1] == (
        "executor output: 我认为是内存泄漏 {not json"
    )


# --------------------------------------------------------------------------- gatekeeper


def test_gatekeeper_exact_and_subset(passing: ChatResult, rejected: ChatResult) -> None:
    assert check_gatekeeper(GatekeeperExpectation(severity="none", failed_rules=[]), passing).passed
    expected = GatekeeperExpectation(severity="reject", failed_rules_include=["evidence.raw_path"])
    assert check_gatekeeper(expected, rejected).passed


def test_an_empty_exact_failed_rules_set_means_no_rule_failed(
    passing: ChatResult, rejected: ChatResult
) -> None:
    assert check_gatekeeper(GatekeeperExpectation(failed_rules=[]), passing).passed
    wrong = check_gatekeeper(GatekeeperExpectation(failed_rules=[]), rejected)
    assert not wrong.passed
    assert wrong.details[0] == (
        "failed_rules: unexpected evidence.excerpt_mismatch, evidence.raw_path"
    )


def test_gatekeeper_failure_shows_the_failed_bindings(rejected: ChatResult) -> None:
    wrong = check_gatekeeper(
        GatekeeperExpectation(failed_rules=["evidence.raw_path"], warnings_include=[AUTO_BACKFILL]),
        rejected,
    )
    assert not wrong.passed
    assert wrong.details[0] == "failed_rules: unexpected evidence.excerpt_mismatch"
    assert wrong.details[1] == "warnings_include: not present: evidence.invocation_auto_backfill"
    assert wrong.details[2] == "failed bindings:"
    rows = wrong.details[4:6]
    assert [cell.strip() for cell in rows[0].split("|")][:3] == [
        "c1",
        "$.alerts[99]",
        "evidence.raw_path",
    ]
    assert "evidence.excerpt_mismatch" in rows[1]
    assert wrong.details[-1] == "checked bindings: 2 (2 failed)"
    assert wrong.actual.startswith("severity=reject, failed_rules=[evidence.raw_path, ")


def test_gatekeeper_of_a_parse_failure_lists_its_error(unparsed: ChatResult) -> None:
    wrong = check_gatekeeper(GatekeeperExpectation(severity="none"), unparsed)
    assert wrong.details[0] == "severity: expected none, got low_confid"
    assert wrong.details[1].startswith("error executor.parse_failed: executor output could not")


# --------------------------------------------------------------------------- keywords


def test_forbidden_keywords(passing: ChatResult, rejected: ChatResult) -> None:
    clean = check_forbidden_keywords(["HikariPool", "user-service", "OOM"], passing)
    assert clean.passed
    chars = len(passing.final_answer)
    assert clean.details == [
        f"scanned 1 claim(s) over 1 round(s) and the final answer ({chars} chars)"
    ]
    wrong = check_forbidden_keywords(["hikaripool", "generic-service"], rejected)
    assert (wrong.passed, wrong.actual) == (False, "found hikaripool")
    assert wrong.details[0] == (
        "'hikaripool' in claim c1 (round 1):"
        " payment-service 因 «HikariPool» 连接池耗尽导致 CPU 飙升"
    )


def test_forbidden_keywords_scan_the_final_answer_without_claims(unparsed: ChatResult) -> None:
    assert unparsed.rounds[0].executor_contract is None
    found = check_forbidden_keywords(["低置信度"], unparsed)
    assert not found.passed
    assert found.details[0].startswith("'低置信度' in final answer: 【«低置信度»提示】")
    empty = check_forbidden_keywords(["x"], unparsed.model_copy(update={"final_answer": ""}))
    assert not empty.passed
    assert empty.actual == "nothing to scan: no claim in any round and an empty final answer"


def test_required_keywords(negative: ChatResult) -> None:
    gap_text = "claim-1（negative_observation）缺少工具证据"
    assert gap_text in negative.final_answer
    assert check_required_keywords([gap_text.upper()], negative).passed
    wrong = check_required_keywords(["已确认根因", "证据缺口"], negative)
    assert (wrong.passed, wrong.actual) == (False, "missing 已确认根因")
    assert wrong.details[0].startswith("'证据缺口' found: ")
    assert wrong.details[-1].startswith("final answer: 【低置信度提示】")


# --------------------------------------------------------------------------- claims


def test_claims(passing: ChatResult, rejected: ChatResult, negative: ChatResult) -> None:
    assert check_claims(ClaimsExpectation(max=1, types=["observation"]), passing).passed
    wrong = check_claims(ClaimsExpectation(max=1, types=["observation"]), rejected)
    assert not wrong.passed
    assert wrong.details[:2] == ["2 claims > max 1", "type not allowed: c1 is root_cause"]
    assert wrong.details[2].split("|")[0].strip() == "claim"
    assert wrong.actual == "2 claim(s) in round 1, types: observation, root_cause"
    assert not check_claims(ClaimsExpectation(types=["observation"]), negative).passed


def test_claims_without_a_contract_fail(unparsed: ChatResult) -> None:
    wrong = check_claims(ClaimsExpectation(max=5), unparsed)
    assert (wrong.passed, wrong.actual) == (
        False,
        "no executor contract in round 1 (parse status failed)",
    )


def test_claim_types_need_a_claim_unless_min_is_zero(passing: ChatResult) -> None:
    last = passing.rounds[-1]
    assert last.executor_contract is not None
    empty_contract = last.executor_contract.model_copy(update={"claims": []})
    no_claims = passing.model_copy(
        update={"rounds": [last.model_copy(update={"executor_contract": empty_contract})]}
    )
    assert not check_claims(ClaimsExpectation(types=["observation"]), no_claims).passed
    assert check_claims(ClaimsExpectation(min=0, types=["observation"]), no_claims).passed


# --------------------------------------------------------------------------- tool rows


NO_LOG_HITS = NoEvidenceRow(tool="query_logs", evidence_status="no_evidence", success=True, total=0)


def test_no_evidence(negative: ChatResult, passing: ChatResult, rejected: ChatResult) -> None:
    matched = check_no_evidence([NO_LOG_HITS], negative)
    assert matched.passed
    assert matched.details == [
        "tool=query_logs, evidence_status=no_evidence, success=true, total=0:"
        " matched by invocation #1, #2"
    ]
    absent = check_no_evidence([NO_LOG_HITS], passing)
    assert not absent.passed
    assert absent.details[0].endswith("no query_logs invocation (tools called: query_metrics)")


def test_no_evidence_lists_the_rows_that_exist(rejected: ChatResult) -> None:
    wrong = check_no_evidence([NO_LOG_HITS], rejected)
    assert not wrong.passed
    assert wrong.details[0].endswith(": no matching row among:")
    header, row = wrong.details[1], wrong.details[2]
    assert [cell.strip() for cell in header.split("|")] == [
        "row",
        "round",
        "evidence_status",
        "success",
        "total",
        "input",
    ]
    assert [cell.strip() for cell in row.split("|")][:5] == ["#2", "1", "supported", "true", "2"]


def test_tool_calls(passing: ChatResult, negative: ChatResult, rejected: ChatResult) -> None:
    expected = ToolCallsExpectation(include=["query_metrics"], exclude=["lookup_knowledge"], max=2)
    assert check_tool_calls(expected, passing).passed
    too_many = check_tool_calls(ToolCallsExpectation(max=1), negative)
    assert (too_many.passed, too_many.actual) == (False, "2 call(s): query_logs, query_logs")
    assert too_many.details[0] == "2 calls > max 1"
    assert too_many.details[2] == (
        'round 2: query_logs {"keywords":["connection pool"],"service":"inventory-service"}'
        " -> invocation #2"
    )
    excluded = check_tool_calls(ToolCallsExpectation(exclude=["query_logs"], min=3), rejected)
    assert excluded.details[:2] == ["called but excluded: query_logs", "2 calls < min 3"]
    helper = check_tool_calls(ToolCallsExpectation(include=["get_current_time"]), passing)
    assert helper.passed
    assert helper.details[-1] == "round 1: get_current_time {} -> no row"


# --------------------------------------------------------------------------- registry, errors

ONE_OF_EACH: dict[str, Any] = {
    "verdict": "LOW_CONFID",
    "groundedness": ScoreRange(max=1.0),
    "rounds": 1,
    "answer": "disclaimer",
    "parse_status": "valid",
    "gatekeeper": GatekeeperExpectation(severity="none"),
    "forbidden_keywords": ["x"],
    "required_keywords": ["x"],
    "answer_forbidden_keywords": ["x"],
    "claims": ClaimsExpectation(min=0),
    "no_evidence": [NO_LOG_HITS],
    "tool_calls": ToolCallsExpectation(max=10),
    "composer": ComposerExpectation(source="verbatim"),
    "tokens": TokensExpectation(max=10),
    "rubric": RubricExpectation(criteria="只确认告警", min_score=0.8),
    "set_aside": SetAsideExpectation(claims=[]),
}


def test_every_expect_key_has_a_check() -> None:
    assert tuple(CHECKS) == EXPECT_KEYS == tuple(ONE_OF_EACH)


@pytest.mark.parametrize("key", EXPECT_KEYS)
def test_an_errored_session_fails_every_check(key: str) -> None:
    outcome = run_check(key, ONE_OF_EACH[key], errored())
    assert not outcome.passed
    assert outcome.actual.startswith("session error: LLM unavailable")
    assert outcome.details == ["rounds completed before the error: 0"]


def test_run_checks_follows_the_scenario(negative: ChatResult) -> None:
    expect = Expect(
        verdict="LOW_CONFID",
        rounds=2,
        answer="disclaimer",
        forbidden_keywords=["generic-service", "HikariPool"],
        no_evidence=[NO_LOG_HITS],
        tool_calls=ToolCallsExpectation(include=["query_logs"], exclude=["lookup_knowledge"]),
    )
    outcomes = run_checks(expect, negative)
    assert list(outcomes) == [
        "verdict",
        "rounds",
        "answer",
        "forbidden_keywords",
        "no_evidence",
        "tool_calls",
    ]
    assert all(outcome.passed for outcome in outcomes.values())
    assert not run_checks(expect.model_copy(update={"rounds": 1}), negative)["rounds"].passed


def test_unknown_check_key() -> None:
    with pytest.raises(KeyError, match="no check for expect key 'verdit'; known: verdict, "):
        run_check("verdit", "PASS", highcpu_pass())


def test_report_is_expected_actual_then_evidence() -> None:
    outcome = CheckOutcome(False, "PASS", "REJECT (score 0.0)", ["gatekeeper: severity reject"])
    assert outcome.report() == (
        "expected: PASS\nactual:   REJECT (score 0.0)\ngatekeeper: severity reject"
    )


def test_composer(passing: ChatResult, rejected: ChatResult) -> None:
    # highcpu_pass's answer adds "HighCPUUsage 告警" and "阈值 80%" wording no claim holds.
    assert check_composer(
        ComposerExpectation(source="composed", status="valid", claims_used=["c1"]), passing
    ).passed
    wrong = check_composer(ComposerExpectation(source="verbatim", claims_dropped=["c1"]), passing)
    assert not wrong.passed
    assert wrong.details[:2] == [
        "source: expected verbatim, got composed",
        "claims_dropped: missing c1",
    ]
    assert wrong.actual.startswith("source=composed, status=valid, claims_used=['c1']")
    dropped = check_composer(ComposerExpectation(claims_dropped=["c1", "c2"]), rejected)
    assert dropped.passed
    assert any(line.startswith("dropped c1: a binding of it failed") for line in dropped.details)
