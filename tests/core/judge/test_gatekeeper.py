"""The gatekeeper on a real store: each reject rule, each low-confidence rule, the tightened
auto-backfill, severity aggregation, recommended-action bindings, and refs built by the
real recorder from the default world."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import ValidationError

from pytest_diageval.core.contract.contracts import (
    CheckedBinding,
    EvidenceRef,
    GatekeeperResult,
    RetrievalDetails,
    RuleMessage,
)
from pytest_diageval.core.evidence.recorder import ToolInvocationRecorder, extract_evidence_refs
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.evidence.tools import Toolbox
from pytest_diageval.core.evidence.world import default_world
from pytest_diageval.core.judge.gatekeeper import Gatekeeper, parse_failure_result
from support.contracts import parsed_contract

NOW = "2026-07-08T11:17:00+08:00"
SESSION, OTHER_SESSION = "s1", "s2"

# Ref texts exactly as the recorder writes them (test_refs_built_by_the_recorder pins this).
CPU_ALERT = (
    "HighCPUUsage firing, service=payment-service, current=92%, threshold=80%, duration=25m;"
    " CPU usage 92% on payment-service (process java, PID 1), above 80% for 25m"
)
MEMORY_ALERT = (
    "HighMemoryUsage firing, service=order-service, current=91%, threshold=85%, duration=15m;"
    " JVM heap usage 3.8GB/4GB; samples=86.2, 87.4, 88.6, 89.8, 91.0"
)
HIKARI_LOG = (
    "[2026-07-08T11:13:47+08:00][ERROR][order-service] HikariPool-1 - Connection is not"
    " available, request timed out after 30000ms"
)
MEMORY_LOG = (
    "[2026-07-08T11:17:00+08:00][WARN][order-service] 内存使用率过高: 91.0%,"
    " JVM堆内存: 3.8GB/4GB, GC次数: 128"
)
ALERT_EXCERPT = "HighMemoryUsage firing, service=order-service, current=91%, duration=15m"
LOG_EXCERPT = "内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB, GC次数: 128"
ALLOWED_FORMS = (
    "allowed forms: $.alerts[i], $.logs[i], $.evidence_blocks[i] (i = item index), or $.alerts"
    " for the empty result of a search that found nothing"
)


@dataclass(frozen=True)
class Evidence:
    """A store with session s1 (metrics, logs, a legacy logs row, a legacy knowledge row)
    and session s2 (a metrics row holding the very same memory alert)."""

    store: Store
    metrics: int
    logs: int
    legacy_logs: int
    legacy_knowledge: int
    foreign_metrics: int

    def check(
        self, *claims: dict[str, Any], actions: tuple[dict[str, Any], ...] = ()
    ) -> GatekeeperResult:
        contract = parsed_contract(list(claims), recommended_actions=list(actions))
        return Gatekeeper(self.store).check(contract, SESSION)


def _insert(store: Store, session: str, tool: str, details: RetrievalDetails | None) -> int:
    return store.insert_invocation(
        session_id=session,
        round=1,
        tool_name=tool,
        input_params={"service": "order-service"},
        duration_ms=12,
        success=True,
        error_message=None,
        output_preview='{"success":true}',
        output_truncated=False,
        retrieval_details=details,
    )


def _refs(key: str, *texts: str) -> RetrievalDetails:
    refs = [EvidenceRef(raw_path=f"$.{key}[{i}]", text=text) for i, text in enumerate(texts)]
    return RetrievalDetails(evidence_status="supported", evidence_refs=refs, total=len(refs))


@pytest.fixture
def evidence() -> Evidence:
    store = Store()
    store.create_session(SESSION, "order-service 是否存在 HighMemoryUsage 告警?", NOW)
    store.create_session(OTHER_SESSION, "another diagnosis", NOW)
    legacy_knowledge = RetrievalDetails(evidence_status="supported", evidence_refs=None)
    return Evidence(
        store=store,
        metrics=_insert(store, SESSION, "query_metrics", _refs("alerts", CPU_ALERT, MEMORY_ALERT)),
        logs=_insert(store, SESSION, "query_logs", _refs("logs", HIKARI_LOG, MEMORY_LOG)),
        legacy_logs=_insert(store, SESSION, "query_logs", None),
        legacy_knowledge=_insert(store, SESSION, "lookup_knowledge", legacy_knowledge),
        foreign_metrics=_insert(
            store, OTHER_SESSION, "query_metrics", _refs("alerts", MEMORY_ALERT)
        ),
    )


def _binding(
    invocation_id: int | None,
    raw_path: str | None = "$.alerts[1]",
    excerpt: str | None = ALERT_EXCERPT,
    tool: str | None = "query_metrics",
) -> dict[str, Any]:
    return {
        "tool_name": tool,
        "source_invocation_id": invocation_id,
        "raw_path": raw_path,
        "evidence_excerpt": excerpt,
    }


def _log_binding(invocation_id: int | None, raw_path: str, excerpt: str) -> dict[str, Any]:
    return _binding(invocation_id, raw_path, excerpt, "query_logs")


def _action(action_id: str | None, *bindings: dict[str, Any]) -> dict[str, Any]:
    action: dict[str, Any] = {"action_text": "继续查看 order-service 的 GC 日志或堆 dump。"}
    if action_id is not None:
        action["action_id"] = action_id
    if bindings:
        action["evidence_bindings"] = list(bindings)
    return action


def _claim(claim_id: str, *bindings: dict[str, Any], support: str = "direct") -> dict[str, Any]:
    return {
        "claim_id": claim_id,
        "claim_type": "observation",
        "claim_text": "order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。",
        "support_level": support,
        "evidence_bindings": list(bindings),
    }


def _only_row(result: GatekeeperResult) -> CheckedBinding:
    assert len(result.checked_bindings) == 1
    return result.checked_bindings[0]


# --------------------------------------------------------------------------- pass


def test_real_citations_pass_with_the_matched_span(evidence: Evidence) -> None:
    result = evidence.check(
        _claim("claim-1", _binding(evidence.metrics)),
        _claim("claim-2", _binding(evidence.metrics, excerpt="JVM heap usage 3.8GB/4GB")),
        _claim("claim-3", _log_binding(evidence.logs, "$.logs[1]", LOG_EXCERPT)),
        actions=(_action("action-1", _binding(evidence.metrics)),),
    )
    assert (result.status, result.severity) == ("pass", "none")
    assert (result.failed_rules, result.warnings, result.errors) == ([], [], [])
    assert [
        (r.claim_id, r.action_id, r.status, r.grade, r.rule) for r in result.checked_bindings
    ] == [
        ("claim-1", None, "pass", "none", None),
        ("claim-2", None, "pass", "none", None),
        ("claim-3", None, "pass", "none", None),
        (None, "action-1", "pass", "none", None),
    ]
    assert [r.matched_text for r in result.checked_bindings] == [
        "HighMemoryUsage firing, service=order-service, current=91%, threshold=85%, duration=15m",
        "JVM heap usage 3.8GB/4GB",
        LOG_EXCERPT,
        "HighMemoryUsage firing, service=order-service, current=91%, threshold=85%, duration=15m",
    ]


def test_a_zero_padded_or_spaced_raw_path_names_the_same_ref(evidence: Evidence) -> None:
    result = evidence.check(
        _claim("claim-1", _binding(evidence.metrics, " $.alerts[01] ")),
    )
    assert _only_row(result).status == "pass"
    assert _only_row(result).raw_path == " $.alerts[01] "  # the row keeps what was cited


# --------------------------------------------------------------------------- reject rules


def _assert_single_failure(result: GatekeeperResult, grade: str, rule: str, message: str) -> None:
    row = _only_row(result)
    assert (row.status, row.grade, row.rule, row.message) == ("fail", grade, rule, message)
    assert (result.status, result.severity, result.failed_rules) == ("fail", grade, [rule])
    assert result.errors == [RuleMessage(rule=rule, message=message)]


def test_invocation_ref_rejects_an_id_that_does_not_exist(evidence: Evidence) -> None:
    result = evidence.check(_claim("claim-1", _binding(999)))
    _assert_single_failure(
        result,
        "reject",
        "evidence.invocation_ref",
        "claim claim-1, binding 1: source_invocation_id 999 does not exist",
    )
    assert _only_row(result).source_invocation_id == 999


def test_invocation_ref_rejects_another_sessions_id_even_with_a_true_excerpt(
    evidence: Evidence,
) -> None:
    result = evidence.check(_claim("claim-1", _binding(evidence.foreign_metrics, "$.alerts[0]")))
    _assert_single_failure(
        result,
        "reject",
        "evidence.invocation_ref",
        f"claim claim-1, binding 1: source_invocation_id {evidence.foreign_metrics}"
        " belongs to session 's2', not 's1'",
    )


def test_tool_mismatch_rejects_a_real_id_cited_under_another_tool(evidence: Evidence) -> None:
    result = evidence.check(_claim("claim-1", _binding(evidence.metrics, tool="query_logs")))
    _assert_single_failure(
        result,
        "reject",
        "evidence.tool_mismatch",
        f"claim claim-1, binding 1: tool_name is 'query_logs' but invocation {evidence.metrics}"
        " is a 'query_metrics' call",
    )


def test_raw_path_rejects_a_path_the_invocation_does_not_have(evidence: Evidence) -> None:
    # the 004 "Gatekeeper reject" scenario: invented path and invented excerpt
    result = evidence.check(
        _claim("claim-1", _binding(evidence.metrics, "$.alerts[99]", "HikariCP active=50/50"))
    )
    _assert_single_failure(
        result,
        "reject",
        "evidence.raw_path",
        "claim claim-1, binding 1: raw_path '$.alerts[99]' is not among the evidence_refs of"
        f" invocation {evidence.metrics} (query_metrics); available: $.alerts[0], $.alerts[1]",
    )
    assert _only_row(result).matched_text is None


@pytest.mark.parametrize(
    "raw_path",
    [
        "$.alerts[1].description",
        "$.data.alerts[0]",
        "$.retrieval_details.evidence_blocks[0]",
        "alerts[1]",
        "$.alerts[-1]",
        "$.alerts[?(@.service=='order-service')]",
    ],
)
def test_raw_path_rejects_a_malformed_path_and_lists_the_allowed_forms(
    evidence: Evidence, raw_path: str
) -> None:
    result = evidence.check(_claim("claim-1", _binding(evidence.metrics, raw_path)))
    _assert_single_failure(
        result,
        "reject",
        "evidence.raw_path",
        f"claim claim-1, binding 1: raw_path {raw_path!r} is malformed; {ALLOWED_FORMS}",
    )


@pytest.mark.parametrize(
    ("raw_path", "excerpt", "reason"),
    [
        ("$.alerts[1]", "HikariCP active=50/50", "no excerpt token occurs in the source"),
        (
            "$.alerts[1]",
            "HighMemoryUsage firing, service=order-service, current=99%, duration=15m",
            "number 99 does not occur in the source",
        ),
        ("$.alerts[1]", LOG_EXCERPT, "not found in order in the source"),  # another invocation
        ("$.alerts[0]", ALERT_EXCERPT, "'memory'"),  # another ref of the same invocation
    ],
)
def test_excerpt_mismatch_rejects_and_shows_what_the_ref_holds(
    evidence: Evidence, raw_path: str, excerpt: str, reason: str
) -> None:
    result = evidence.check(_claim("claim-1", _binding(evidence.metrics, raw_path, excerpt)))
    row = _only_row(result)
    assert (row.status, row.grade, row.rule) == ("fail", "reject", "evidence.excerpt_mismatch")
    assert row.matched_text == (MEMORY_ALERT if raw_path == "$.alerts[1]" else CPU_ALERT)
    assert row.message is not None
    assert row.message.startswith(
        f"claim claim-1, binding 1: evidence_excerpt {excerpt!r} is not supported by"
        f" {raw_path} of invocation {evidence.metrics}: "
    )
    assert reason in row.message
    assert (result.severity, result.failed_rules) == ("reject", ["evidence.excerpt_mismatch"])


def test_excerpt_mismatch_rejects_a_flipped_negation(evidence: Evidence) -> None:
    flipped = "HikariPool-1 - Connection is available, request timed out after 30000ms"
    result = evidence.check(_claim("claim-1", _log_binding(evidence.logs, "$.logs[0]", flipped)))
    row = _only_row(result)
    assert (row.grade, row.rule, row.matched_text) == (
        "reject",
        "evidence.excerpt_mismatch",
        HIKARI_LOG,
    )
    assert row.message is not None
    assert "negation differs" in row.message


@pytest.mark.parametrize(
    ("tool", "raw_path", "excerpt", "text", "reason"),
    [
        ("query_metrics", "$.alerts[1]", "99%", MEMORY_ALERT, "number 99 does not occur"),
        ("query_logs", "$.logs[1]", "GC 129", MEMORY_LOG, "number 129 does not occur"),
        ("query_logs", "$.logs[0]", "Connection available", HIKARI_LOG, "negation differs"),
    ],
)
def test_a_short_forged_quote_rejects_instead_of_being_too_short(
    evidence: Evidence, tool: str, raw_path: str, excerpt: str, text: str, reason: str
) -> None:
    invocation = evidence.metrics if tool == "query_metrics" else evidence.logs
    result = evidence.check(_claim("claim-1", _binding(invocation, raw_path, excerpt, tool)))
    row = _only_row(result)
    assert (row.grade, row.rule, row.matched_text) == ("reject", "evidence.excerpt_mismatch", text)
    assert row.message is not None
    assert reason in row.message
    assert result.severity == "reject"


# --------------------------------------------------------------------------- low-confid rules


def test_bindings_empty_for_direct_and_indirect_claims_only(evidence: Evidence) -> None:
    result = evidence.check(
        _claim("claim-1"), _claim("claim-2", support="indirect"), _claim("claim-3", support="none")
    )
    assert result.checked_bindings == [
        CheckedBinding(
            claim_id=claim_id,
            status="fail",
            grade="low_confid",
            rule="evidence.bindings_empty",
            message=f"claim {claim_id}: support_level is {level!r} but evidence_bindings is"
            " empty; cite source_invocation_id + raw_path + evidence_excerpt",
        )
        for claim_id, level in (("claim-1", "direct"), ("claim-2", "indirect"))
    ]
    assert (result.severity, result.failed_rules) == ("low_confid", ["evidence.bindings_empty"])
    assert len(result.errors) == 2


def test_raw_path_missing_is_low_confid_and_the_excerpt_is_not_compared(
    evidence: Evidence,
) -> None:
    result = evidence.check(_claim("claim-1", _binding(evidence.metrics, None, "invented text")))
    _assert_single_failure(
        result,
        "low_confid",
        "evidence.raw_path_missing",
        f"claim claim-1, binding 1: raw_path is missing for invocation {evidence.metrics}"
        " (query_metrics); expected one of its evidence_refs paths",
    )


@pytest.mark.parametrize(
    ("row", "tool"), [("legacy_logs", "query_logs"), ("legacy_knowledge", "lookup_knowledge")]
)
def test_refs_unavailable_for_a_legacy_row(evidence: Evidence, row: str, tool: str) -> None:
    invocation = getattr(evidence, row)
    result = evidence.check(_claim("claim-1", _binding(invocation, "$.logs[0]", LOG_EXCERPT, tool)))
    _assert_single_failure(
        result,
        "low_confid",
        "evidence.refs_unavailable",
        f"claim claim-1, binding 1: invocation {invocation} ({tool}) has no evidence_refs"
        " (legacy row), so '$.logs[0]' cannot be checked",
    )


@pytest.mark.parametrize("excerpt", ["91%", "内", "order-service", "内存过高"])
def test_excerpt_too_short_is_low_confid_not_a_mismatch(evidence: Evidence, excerpt: str) -> None:
    result = evidence.check(_claim("claim-1", _binding(evidence.metrics, excerpt=excerpt)))
    row = _only_row(result)
    assert (row.grade, row.rule, row.matched_text) == (
        "low_confid",
        "evidence.excerpt_too_short",
        MEMORY_ALERT,
    )
    assert row.message is not None
    assert "below the minimum of 3" in row.message
    assert result.severity == "low_confid"


@pytest.mark.parametrize(
    ("tool", "raw_path", "excerpt", "text"),
    [
        ("query_logs", "$.logs[1]", "[WARN][order-service]", MEMORY_LOG),
        ("query_logs", "$.logs[1]", "2026-07-08T11:17:00+08:00", MEMORY_LOG),
        ("query_metrics", "$.alerts[1]", "firing service=order-service", MEMORY_ALERT),
    ],
)
def test_a_generic_excerpt_is_too_short_though_every_token_is_found(
    evidence: Evidence, tool: str, raw_path: str, excerpt: str, text: str
) -> None:
    invocation = evidence.metrics if tool == "query_metrics" else evidence.logs
    result = evidence.check(_claim("claim-1", _binding(invocation, raw_path, excerpt, tool)))
    row = _only_row(result)
    assert (row.grade, row.rule, row.matched_text) == (
        "low_confid",
        "evidence.excerpt_too_short",
        text,
    )
    assert row.message == (
        f"claim claim-1, binding 1: evidence_excerpt {excerpt!r} is too short or generic to"
        f" compare with {raw_path} of invocation {invocation}: excerpt is generic: it quotes"
        " only metadata of the item (timestamp, log level, service, alert state); what remains"
        " after metadata is nothing, 0 comparable units, below the minimum of 3"
    )
    assert result.severity == "low_confid"


@pytest.mark.parametrize("excerpt", [None, "", "   "])
def test_excerpt_missing_is_low_confid(evidence: Evidence, excerpt: str | None) -> None:
    result = evidence.check(_claim("claim-1", _binding(evidence.metrics, excerpt=excerpt)))
    _assert_single_failure(
        result,
        "low_confid",
        "evidence.excerpt_missing",
        "claim claim-1, binding 1: evidence_excerpt is missing; nothing from $.alerts[1] of"
        f" invocation {evidence.metrics} was quoted",
    )


def test_a_binding_without_tool_name_never_reaches_the_gatekeeper(evidence: Evidence) -> None:
    # 004's binding table marks tool_name 必填: such a contract does not parse (the session
    # then records executor.parse_failed), so backfill always has a tool to go by.
    with pytest.raises(ValidationError, match=r"claims\.0\.evidence_bindings\.0\.tool_name"):
        evidence.check(_claim("claim-1", _binding(None, tool=None)))


def test_a_legacy_id_list_of_one_is_a_normal_citation(evidence: Evidence) -> None:
    binding = {**_binding(None), "source_invocation_ids": [evidence.metrics]}
    result = evidence.check(_claim("claim-1", binding))
    assert (result.status, result.warnings) == ("pass", [])


def test_a_legacy_id_list_of_several_is_low_confid_unless_one_is_foreign(
    evidence: Evidence,
) -> None:
    own = [evidence.metrics, evidence.logs]
    several = evidence.check(_claim("claim-1", {**_binding(None), "source_invocation_ids": own}))
    _assert_single_failure(
        several,
        "low_confid",
        "evidence.invocation_missing",
        f"claim claim-1, binding 1: source_invocation_ids lists 2 invocations {own} and no"
        " single source_invocation_id; one binding must cite exactly one invocation",
    )
    foreign = [evidence.metrics, evidence.foreign_metrics]
    mixed = evidence.check(_claim("claim-1", {**_binding(None), "source_invocation_ids": foreign}))
    assert (mixed.severity, mixed.failed_rules) == ("reject", ["evidence.invocation_ref"])


# --------------------------------------------------------------------------- auto-backfill


def test_backfill_from_the_unique_candidate_warns_and_never_passes(evidence: Evidence) -> None:
    result = evidence.check(_claim("claim-1", _binding(None)))
    row = _only_row(result)
    assert (row.source_invocation_id, row.raw_path, row.matched_text) == (
        evidence.metrics,
        "$.alerts[1]",
        "HighMemoryUsage firing, service=order-service, current=91%, threshold=85%, duration=15m",
    )
    assert (row.status, row.grade, row.rule) == (
        "fail",
        "low_confid",
        "evidence.invocation_auto_backfill",
    )
    assert result.warnings == [
        RuleMessage(
            rule="evidence.invocation_auto_backfill",
            message=f"claim claim-1, binding 1: source_invocation_id was auto-filled with"
            f" {evidence.metrics} from the unique 'query_metrics' invocation candidate;"
            " raw_path '$.alerts[1]' was given by the executor and is checked as usual",
        )
    ]
    assert (result.status, result.severity) == ("fail", "low_confid")
    assert result.failed_rules == ["evidence.invocation_auto_backfill"]


def test_backfill_never_fills_the_raw_path(evidence: Evidence) -> None:
    result = evidence.check(_claim("claim-1", _binding(None, raw_path=None)))
    row = _only_row(result)
    assert (row.source_invocation_id, row.raw_path) == (evidence.metrics, None)
    assert (row.grade, row.rule) == ("low_confid", "evidence.raw_path_missing")
    assert [w.message for w in result.warnings] == [
        f"claim claim-1, binding 1: source_invocation_id was auto-filled with {evidence.metrics}"
        " from the unique 'query_metrics' invocation candidate; raw_path remains missing"
    ]


def test_backfill_still_rejects_a_forged_excerpt(evidence: Evidence) -> None:
    result = evidence.check(_claim("claim-1", _binding(None, excerpt="HikariCP active=50/50")))
    assert (result.severity, result.failed_rules) == ("reject", ["evidence.excerpt_mismatch"])
    assert [w.rule for w in result.warnings] == ["evidence.invocation_auto_backfill"]


def test_no_backfill_when_the_tool_has_two_candidates(evidence: Evidence) -> None:
    result = evidence.check(
        _claim("claim-1", _binding(None, "$.logs[1]", LOG_EXCERPT, tool="query_logs"))
    )
    _assert_single_failure(
        result,
        "low_confid",
        "evidence.invocation_missing",
        "claim claim-1, binding 1: source_invocation_id is missing and the session has 2"
        f" 'query_logs' invocations {[evidence.logs, evidence.legacy_logs]}, so it cannot be"
        " backfilled (backfill needs exactly one)",
    )
    assert result.warnings == []
    assert _only_row(result).source_invocation_id is None


def test_no_backfill_from_another_sessions_rows(evidence: Evidence) -> None:
    # s2 has a query_metrics row too; only s1's single candidate may be used
    result = Gatekeeper(evidence.store).check(
        parsed_contract([_claim("claim-1", _binding(None))]),
        OTHER_SESSION,
    )
    assert _only_row(result).source_invocation_id == evidence.foreign_metrics


# --------------------------------------------------------------------------- aggregation


def test_mixed_severities_worst_wins_and_rules_are_unique_in_first_seen_order(
    evidence: Evidence,
) -> None:
    result = evidence.check(
        _claim("claim-1", _binding(evidence.metrics)),  # pass
        _claim("claim-2", _binding(evidence.metrics, None)),  # low_confid
        _claim("claim-3", _binding(999), _binding(evidence.metrics, "$.alerts[7]")),  # rejects
        _claim("claim-4", _binding(evidence.metrics, excerpt="91%"), _binding(998)),
    )
    assert [row.status for row in result.checked_bindings] == [
        "pass",
        "fail",
        "fail",
        "fail",
        "fail",
        "fail",
    ]
    assert (result.status, result.severity) == ("fail", "reject")
    assert result.failed_rules == [
        "evidence.raw_path_missing",
        "evidence.invocation_ref",
        "evidence.raw_path",
        "evidence.excerpt_too_short",
    ]
    assert [error.rule for error in result.errors] == [
        "evidence.raw_path_missing",
        "evidence.invocation_ref",
        "evidence.raw_path",
        "evidence.excerpt_too_short",
        "evidence.invocation_ref",
    ]


def test_low_confid_alone_stays_low_confid(evidence: Evidence) -> None:
    result = evidence.check(
        _claim("claim-1", _binding(evidence.metrics)),
        _claim("claim-2", _binding(evidence.metrics, None)),
    )
    assert (result.status, result.severity) == ("fail", "low_confid")


def test_recommended_action_bindings_are_checked_under_their_action_id(evidence: Evidence) -> None:
    result = evidence.check(
        _claim("claim-1", _binding(evidence.metrics)),
        actions=(
            _action("action-1", _binding(evidence.metrics, "$.alerts[5]")),
            _action(None, _binding(evidence.foreign_metrics)),
            _action("action-3"),
        ),
    )
    actions = [(r.claim_id, r.action_id, r.rule) for r in result.checked_bindings[1:]]
    assert actions == [
        (None, "action-1", "evidence.raw_path"),
        (None, "recommended_actions[1]", "evidence.invocation_ref"),
    ]
    assert result.errors[0].message.startswith("action action-1, binding 1: raw_path '$.alerts[5]'")
    assert result.severity == "reject"


def test_a_contract_without_claims_is_low_confid_and_forged_action_bindings_still_reject(
    evidence: Evidence,
) -> None:
    empty = evidence.check()
    assert empty.checked_bindings == [
        CheckedBinding(
            status="fail",
            grade="low_confid",
            rule="executor.claims_empty",
            message="the contract has no claims: nothing in user_facing_answer is bound to"
            " evidence",
        )
    ]
    assert (empty.status, empty.severity, empty.failed_rules) == (
        "fail",
        "low_confid",
        ["executor.claims_empty"],
    )
    forged = evidence.check(actions=(_action("action-1", _binding(evidence.foreign_metrics)),))
    assert (forged.severity, forged.failed_rules) == (
        "reject",
        ["executor.claims_empty", "evidence.invocation_ref"],
    )
    assert evidence.check(_claim("claim-1", _binding(evidence.metrics))).status == "pass"


def test_parse_failure_result_is_low_confid_with_its_rule() -> None:
    result = parse_failure_result("no JSON object found in the executor message")
    assert result == GatekeeperResult(
        status="fail",
        severity="low_confid",
        failed_rules=["executor.parse_failed"],
        errors=[
            RuleMessage(
                rule="executor.parse_failed",
                message="executor output could not be parsed, no citation can be checked:"
                " no JSON object found in the executor message",
            )
        ],
    )


# --------------------------------------------------------------------------- real recorder


def test_refs_built_by_the_recorder_from_real_tool_output_are_checked() -> None:
    toolbox = Toolbox(default_world())
    alerts = extract_evidence_refs("query_metrics", toolbox.call("query_metrics", {}))
    assert [ref.text for ref in alerts[:2]] == [CPU_ALERT, MEMORY_ALERT]

    store = Store()
    store.create_session(SESSION, "order-service 是否存在 HighMemoryUsage 告警?", NOW)
    recorder = ToolInvocationRecorder(store, Toolbox(default_world()), SESSION)
    metrics = recorder.call("query_metrics", {}, round=1)
    logs = recorder.call("query_logs", {"service": "order-service"}, round=1)
    memory_log = next(ref for ref in logs.evidence_refs if ref.text == MEMORY_LOG)
    hikari_log = next(ref for ref in logs.evidence_refs if ref.text == HIKARI_LOG)

    flipped = "Connection is available, request timed out"
    claims = [
        _claim("claim-1", _binding(metrics.invocation_id)),
        _claim("claim-2", _log_binding(logs.invocation_id, memory_log.raw_path, LOG_EXCERPT)),
        _claim("claim-3", _log_binding(logs.invocation_id, hikari_log.raw_path, flipped)),
    ]
    contract = parsed_contract(claims)
    result = Gatekeeper(store).check(contract, SESSION)
    assert [(row.status, row.rule) for row in result.checked_bindings] == [
        ("pass", None),
        ("pass", None),
        ("fail", "evidence.excerpt_mismatch"),
    ]
    assert result.checked_bindings[2].matched_text == HIKARI_LOG
    assert result.severity == "reject"


class _OneOutputToolbox:
    """A toolbox whose only answer is ``output``: a long item the default world lacks."""

    def __init__(self, output: dict[str, Any]) -> None:
        self._output = output

    def call(self, name: str, arguments: Any) -> dict[str, Any]:
        return self._output


def test_a_true_quote_from_the_end_of_a_long_item_passes() -> None:
    message = (
        "GC pauses: "
        + ", ".join(f"young pause {i} took {10 + i}ms" for i in range(40))
        + "; final: old gen occupancy 97.5% after Full GC 128"
    )
    log = {"timestamp": NOW, "level": "WARN", "service": "order-service", "message": message}
    store = Store()
    store.create_session(SESSION, "order-service 的 GC 情况?", NOW)
    toolbox = _OneOutputToolbox({"success": True, "logs": [log], "total": 1})
    logs = ToolInvocationRecorder(store, toolbox, SESSION).call("query_logs", {}, round=1)
    quote = "final: old gen occupancy 97.5% after Full GC 128"
    binding = _log_binding(logs.invocation_id, "$.logs[0]", quote)
    contract = parsed_contract([_claim("claim-1", binding)])
    result = Gatekeeper(store).check(contract, SESSION)
    row = _only_row(result)
    assert (row.status, row.grade, row.rule, row.matched_text) == ("pass", "none", None, quote)
    assert (result.status, result.severity) == ("pass", "none")
    assert len(logs.evidence_refs[0].text) > 1000  # refs used to be cut at 600 characters
