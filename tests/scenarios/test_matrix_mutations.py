"""Each acceptance-matrix scenario fails when its key model output changes.

A scenario that still passes after the model output it is about was changed proves nothing.
For each of the seven matrix files a mutation changes that output the way a misbehaving
model would (forge an excerpt, point a binding at the wrong invocation, add a forbidden word,
make the negative claim positive, flip a verifier label, repair a forgery), writes the file to
``tmp_path`` and runs it through the plugin's runner and checks. The test names the
expectations that must now fail, as the exact set, so a reviewer also sees which expectations
do *not* notice the change (a root_cause claim with a real citation passes the verdict; only
``claims`` and ``forbidden_keywords`` catch it). One test runs the mutated files with pytest
itself (``pytester``), and one shows that scenario 6's gatekeeper audit is persisted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_diageval.agents.chat_service import ChatService
from pytest_diageval.agents.scripted.model import scripted_llm
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.harness.format.loader import load_scenario, load_scenario_world
from support.scenario_runs import (
    MATRIX_DIR,
    failed_keys,
    load_raw,
    run_file,
    script_entries,
    write_scenario,
)
from support.shipped import shipped_files

Data = dict[str, Any]


def _contract(data: Data) -> Data:
    """The executor contract: the first executor ``content`` entry (round 1)."""
    finals = [e for e in script_entries(data, "executor") if "content" in e]
    content: Data = finals[0]["content"]
    return content


def _verifier(data: Data) -> Data:
    """The verifier output of round 1."""
    content: Data = script_entries(data, "verifier")[0]["content"]
    return content


def _binding(data: Data, claim: int, binding: int) -> Data:
    found: Data = _contract(data)["claims"][claim]["evidence_bindings"][binding]
    return found


# --------------------------------------------------------------------------- mutations


def forge_cpu_excerpt(data: Data) -> None:
    """The alert says current=92%; the executor quotes 97%."""
    excerpt = _binding(data, 0, 0)["evidence_excerpt"]
    _binding(data, 0, 0)["evidence_excerpt"] = excerpt.replace("current=92%", "current=97%")


def mention_memory_alert_in_cpu_claim(data: Data) -> None:
    """Names payment-service, which its citations are about, and an alert none of them shows:
    the claim is no_evidence (claim.entity_not_cited); round 2 repeats round 1."""
    _contract(data)["claims"][0]["claim_text"] += "同时 payment-service 也有 HighMemoryUsage 告警。"
    _repeat_round(data)


def _repeat_round(data: Data) -> None:
    script = data["llm"]["script"]
    script.extend(dict(entry) for entry in list(script))


def point_memory_log_binding_at_metrics_call(data: Data) -> None:
    """The log binding cites invocation 1, which is the query_metrics call."""
    _binding(data, 0, 2)["source_invocation_id"] = 1


def confirm_memory_leak(data: Data) -> None:
    """A root_cause under 只确认: set aside (scope.narrow_claim_type), so no claim is left in
    scope, LOW_CONFID 0.0 and a retry; round 2 repeats round 1."""
    claim = _contract(data)["claims"][0]
    claim["claim_type"] = "root_cause"
    claim["claim_text"] = "order-service 内存泄漏已确认，内存使用率达到 91%。"
    script = data["llm"]["script"]
    script.extend(dict(entry) for entry in list(script) if "tool_calls" not in entry)


def reword_memory_leak_confirmation(data: Data) -> None:
    """The observation claim and the answer assert the leak, worded unlike 内存泄漏已确认: the
    claim names a diagnosis its alert is not about (claim.topic_not_cited, since issue 37), so
    it is no_evidence; round 2 repeats round 1."""
    contract = _contract(data)
    contract["claims"][0]["claim_text"] += "，已确认存在内存泄漏"
    _repeat_round(data)
    answer = contract["user_facing_answer"]
    hedge = "是否存在内存泄漏尚不能确认，需要堆 dump 或对象分配统计。"
    assert hedge in answer, "the scenario's answer no longer holds the hedge this mutation flips"
    contract["user_facing_answer"] = answer.replace(hedge, "已确认存在内存泄漏。")


def flip_memory_label_to_contradicted(data: Data) -> None:
    _verifier(data)["facts_checked"][0]["verification"] = "contradicted"


def add_pool_root_cause_to_slowresponse(data: Data) -> None:
    """A second, root_cause claim with a real binding, which the scripted verifier ignores."""
    contract = _contract(data)
    real_log = dict(contract["claims"][0]["evidence_bindings"][5])
    contract["claims"].append(
        {
            "claim_id": "claim-2",
            "claim_type": "root_cause",
            "claim_text": "user-service 响应变慢由数据库连接池耗尽导致。",
            "evidence_bindings": [real_log],
        }
    )


def query_hikaricp_on_the_wrong_service(data: Data) -> None:
    """The executor asks inventory-service; the cited $.logs[0], $.logs[1] then do not exist."""
    calls = script_entries(data, "executor")[0]["tool_calls"]
    calls[0]["arguments"]["service"] = "inventory-service"


def make_negative_claim_positive(data: Data) -> None:
    """Claim, answer and verifier fact turn positive; round 2 repeats round 1 (the code retries)."""
    contract = _contract(data)
    claim = contract["claims"][0]
    claim["claim_type"] = "observation"
    claim["claim_text"] = "inventory-service 存在 HikariCP 连接池耗尽。"
    contract["user_facing_answer"] = "inventory-service 存在 HikariCP 连接池耗尽。"
    _verifier(data)["facts_checked"][0]["fact"] = "inventory-service 存在 HikariCP 连接池耗尽"
    script = data["llm"]["script"]
    script.extend(dict(entry) for entry in list(script))


def repair_forged_raw_path(data: Data) -> None:
    _binding(data, 0, 0)["raw_path"] = "$.alerts[0]"


def repair_both_forgeries(data: Data) -> None:
    repair_forged_raw_path(data)
    _binding(data, 1, 0)["evidence_excerpt"] = "JVM heap usage 3.8GB/4GB"


def leak_user_service_into_answer(data: Data) -> None:
    _contract(data)["user_facing_answer"] += "另外 user-service 也有 SlowResponse 告警。"


def mention_order_123_in_claim(data: Data) -> None:
    """A number none of its citations shows: no_evidence (claim.number_not_cited), retried."""
    _contract(data)["claims"][0]["claim_text"] += "订单123 的失败与此无关。"
    _repeat_round(data)


def add_cited_memory_alert_claim_to_narrow_scope(data: Data) -> None:
    """A second claim off the HighCPUUsage / payment-service scope, really cited and verified.

    The all-alerts query_metrics call (invocation 1) does return the order-service
    HighMemoryUsage alert at ``$.alerts[1]``: the gatekeeper passes the binding, the scripted
    verifier labels the fact direct, the verdict stays PASS. Only the forbidden list notices.
    """
    contract = _contract(data)
    contract["claims"].append(
        {
            "claim_id": "claim-2",
            "claim_type": "observation",
            "claim_text": "order-service 同时存在 HighMemoryUsage 告警。",
            "evidence_bindings": [
                {
                    "tool_name": "query_metrics",
                    "source_invocation_id": 1,
                    "raw_path": "$.alerts[1]",
                    "evidence_excerpt": "HighMemoryUsage firing, service=order-service",
                }
            ],
        }
    )
    contract["user_facing_answer"] += "另外 order-service 同时存在 HighMemoryUsage 告警。"
    verifier = _verifier(data)
    verifier["critical_fact_count"] = 2
    verifier["facts_checked"].append(
        {
            "fact": "order-service 同时存在 HighMemoryUsage 告警",
            "claim_id": "claim-2",
            "is_critical": True,
            "verification": "direct_evidence",
            "detail": "已核验的告警片段直接支持。",
            "evidence_refs": [{"trace_ref": "trace-1", "source_invocation_ids": [1]}],
        }
    )


@dataclass(frozen=True)
class Mutation:
    scenario: str
    mutate: Callable[[Data], None]
    must_fail: frozenset[str]  # exactly the expectations that fail after the mutation

    @property
    def id(self) -> str:
        return f"{self.scenario}:{self.mutate.__name__}"


def _keys(*keys: str) -> frozenset[str]:
    return frozenset(keys)


CPU, MEMORY, SLOW = (
    "01-highcpu-narrow-baseline",
    "02-highmemory-positive",
    "03-slowresponse-positive",
)
HIKARI, NEGATIVE = "04-hikaricp-positive", "05-hikaricp-negative"
REJECT, NARROW = "06-gatekeeper-reject", "07-narrow-forbidden-claim"
DEGRADED = _keys("verdict", "groundedness", "answer", "gatekeeper", "required_keywords")
FORBIDDEN = _keys("forbidden_keywords")
# Retried to LOW_CONFID: the disclaimer lacks 未检索到. It confirms nothing (no "已确认" heading
# without a verified claim) and names the unsupported claim by id, so no forbidden word shows.
RETRIED = DEGRADED - {"gatekeeper"} | {"rounds", "claims", "tool_calls"}
# A claim naming what its citations never show is no_evidence and retried to LOW_CONFID; the
# claim's text stays in the claims table (forbidden_keywords reads it).
UNGROUNDED = RETRIED - {"claims"} | FORBIDDEN
MUTATIONS = [
    Mutation(CPU, forge_cpu_excerpt, DEGRADED),
    Mutation(CPU, mention_memory_alert_in_cpu_claim, UNGROUNDED),
    Mutation(MEMORY, point_memory_log_binding_at_metrics_call, DEGRADED),
    # Since issue 25 the root_cause is set aside under 只确认: no claim answers the question,
    # so two rounds end in the disclaimer (the claims table still holds the leak: forbidden).
    Mutation(MEMORY, confirm_memory_leak, RETRIED - {"tool_calls"} | FORBIDDEN),
    # Still one verified observation claim: only the forbidden rewordings catch it.
    Mutation(MEMORY, reword_memory_leak_confirmation, UNGROUNDED),
    Mutation(MEMORY, flip_memory_label_to_contradicted, DEGRADED - {"gatekeeper"}),
    # Since issue 25 the root_cause is set aside under 只确认 before the verdict (it was a
    # critical gap the verifier never checked): the PASS rests on claim-1, the answer never
    # shows claim-2, and only the claims checks (its type, its words) see it.
    Mutation(SLOW, add_pool_root_cause_to_slowresponse, FORBIDDEN | {"claims"}),
    Mutation(HIKARI, query_hikaricp_on_the_wrong_service, DEGRADED | {"no_evidence"}),
    Mutation(NEGATIVE, make_negative_claim_positive, RETRIED),
    Mutation(REJECT, repair_forged_raw_path, _keys("gatekeeper")),
    Mutation(REJECT, repair_both_forgeries, DEGRADED),
    # An extra sentence outside every claim never reaches the user: the composer builds the
    # answer from the verified claims instead (issue 10), so no expectation sees it.
    Mutation(NARROW, leak_user_service_into_answer, frozenset()),
    Mutation(NARROW, mention_order_123_in_claim, UNGROUNDED),
    Mutation(NARROW, add_cited_memory_alert_claim_to_narrow_scope, FORBIDDEN),
]
BY_NAME = {m.mutate.__name__: m for m in MUTATIONS}
MATRIX = sorted({m.scenario for m in MUTATIONS})


def _mutated_file(mutation: Mutation, folder: Path) -> Path:
    data = load_raw(MATRIX_DIR / f"{mutation.scenario}.yaml")
    mutation.mutate(data)
    return write_scenario(data, folder / f"{mutation.scenario}.yaml")


def test_every_matrix_scenario_has_a_mutation() -> None:
    shipped = [path.stem for path in shipped_files("scenarios/matrix", "*.yaml")]
    assert len(shipped) == 7
    assert shipped == MATRIX


@pytest.mark.parametrize("scenario", MATRIX)
def test_unmutated_scenario_passes_every_expectation(
    scenario: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome = run_file(MATRIX_DIR / f"{scenario}.yaml", monkeypatch)
    assert failed_keys(outcome) == set()


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.id)
def test_mutated_model_output_fails_the_named_expectations(
    mutation: Mutation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome = run_file(_mutated_file(mutation, tmp_path), monkeypatch)
    assert failed_keys(outcome) == mutation.must_fail


def test_gatekeeper_failures_name_the_mutated_binding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = {
        "forge_cpu_excerpt": ["evidence.excerpt_mismatch"],
        "point_memory_log_binding_at_metrics_call": ["evidence.tool_mismatch"],
        "query_hikaricp_on_the_wrong_service": ["evidence.raw_path"],
        "repair_forged_raw_path": ["evidence.excerpt_mismatch"],
    }
    for name, rules in cases.items():
        mutation = BY_NAME[name]
        folder = tmp_path / mutation.mutate.__name__
        folder.mkdir()
        outcome = run_file(_mutated_file(mutation, folder), monkeypatch)
        assert outcome.result.rounds[-1].gatekeeper.failed_rules == rules, mutation.id


def test_mutated_files_fail_under_pytest(pytester: pytest.Pytester) -> None:
    """The same mutations, run by pytest itself: the named items fail, by node id."""
    first_of_each = {m.scenario: m for m in reversed(MUTATIONS)}  # one file per scenario
    expected: set[str] = set()
    folder = pytester.mkdir("scenarios")  # where the plugin collects scenarios
    for mutation in first_of_each.values():
        path = _mutated_file(mutation, folder)
        scenario_id = load_scenario(path).scenario_id
        expected |= {f"scenarios/{path.name}::{scenario_id}::{key}" for key in mutation.must_fail}
    recorder = pytester.inline_run("-p", "no:cacheprovider")
    passed, _, failed = recorder.listoutcomes()
    failed_ids = {report.nodeid for report in failed}
    assert len(passed) + len(failed) == 69  # every item of the seven files ran
    assert len(expected) == 26  # 5 + 5 + 2 + 6 + 7 + 1 + 0 named expectations
    assert failed_ids == expected


def test_gatekeeper_reject_audit_is_persisted(tmp_path: Path) -> None:
    """Scenario 6 through ChatService: the store holds the reject with the failed bindings."""
    path = MATRIX_DIR / "06-gatekeeper-reject.yaml"
    scenario = load_scenario(path)
    assert scenario.llm is not None
    assert scenario.llm.script is not None
    database = tmp_path / "audit.sqlite"
    store = Store(database)
    llm, transport = scripted_llm(scenario.llm.script)
    with llm:
        result = ChatService(store=store).run(
            scenario.query, load_scenario_world(scenario, path), llm, session_id="audit-6"
        )
    transport.assert_exhausted()
    store.close()

    reopened = Store(database)  # a fresh connection: the audit is on disk, not in memory
    evaluation = reopened.get_session("audit-6")["self_evaluation"]["verifier_evaluation"]
    reopened.close()
    gate = evaluation["gatekeeper_result"]
    assert (gate["status"], gate["severity"]) == ("fail", "reject")
    assert gate["failed_rules"] == ["evidence.raw_path", "evidence.excerpt_mismatch"]
    failed = [
        (b["claim_id"], b["source_invocation_id"], b["raw_path"], b["rule"])
        for b in gate["checked_bindings"]
        if b["status"] == "fail"
    ]
    assert failed == [
        ("claim-1", 1, "$.alerts[99]", "evidence.raw_path"),
        ("claim-2", 1, "$.alerts[0]", "evidence.excerpt_mismatch"),
    ]
    assert [e["rule"] for e in gate["errors"]] == gate["failed_rules"]
    # What the executor cited, what the gatekeeper found: the forged excerpt and the real text.
    mismatch = next(b for b in gate["checked_bindings"] if b["rule"] == "evidence.excerpt_mismatch")
    assert mismatch["evidence_excerpt"] == "HikariCP active=50/50"
    assert mismatch["matched_text"].startswith("HighMemoryUsage firing, service=order-service")
    assert (evaluation["model_verdict"], evaluation["derived_verdict"]) == ("PASS", "REJECT")
    assert evaluation["rounds"][0]["gatekeeper_result"] == gate
    # The degraded answer shows neither forged claim.
    assert result.final_verdict == "REJECT"
    assert "HikariCP" not in result.final_answer
    assert "91%" not in result.final_answer
