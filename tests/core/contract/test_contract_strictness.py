"""The contracts are strict where the seeds are, and no number a model writes can make the
gatekeeper raise: required fields, ``tool_name`` on every binding, strict integers, ASCII
raw-path indexes, ids beyond SQLite's range."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from pytest_diageval.agents.executor import parse_contract
from pytest_diageval.core.contract.contracts import ExecutorContract, VerifierOutput
from pytest_diageval.core.evidence.recorder import ToolInvocationRecorder
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.evidence.tools import Toolbox
from pytest_diageval.core.evidence.world import default_world
from pytest_diageval.core.judge.gatekeeper import Gatekeeper
from support.contracts import contract

SESSION = "s1"
NOW = "2026-07-08T11:17:00+08:00"
ALERT_EXCERPT = "HighMemoryUsage firing, service=order-service, current=91%, duration=15m"
REQUIRED = (
    "answer_version",
    "diagnosis_summary",
    "claims",
    "hypotheses",
    "recommended_actions",
    "missing_info",
    "user_facing_answer",
)


def _binding(**fields: Any) -> dict[str, Any]:
    base = {
        "tool_name": "query_metrics",
        "source_invocation_id": 1,
        "raw_path": "$.alerts[1]",
        "evidence_excerpt": ALERT_EXCERPT,
    }
    return {**base, **fields}


def _claim(*bindings: dict[str, Any]) -> dict[str, Any]:
    return {
        "claim_id": "claim-1",
        "claim_type": "observation",
        "claim_text": "order-service 存在 HighMemoryUsage 告警，内存使用率 91%。",
        "evidence_bindings": list(bindings),
    }


def _parse(document: dict[str, Any]) -> tuple[ExecutorContract | None, str]:
    parsed, status = parse_contract(json.dumps(document, ensure_ascii=False))
    return parsed, status.detail


@pytest.fixture
def store() -> Store:
    """Session s1 with one real query_metrics call on the default world (invocation 1)."""
    store = Store()
    store.create_session(SESSION, "order-service 是否存在 HighMemoryUsage 告警?", NOW)
    recorder = ToolInvocationRecorder(store, Toolbox(default_world()), SESSION)
    assert recorder.call("query_metrics", {}, round=1).invocation_id == 1
    return store


def _check(store: Store, *bindings: dict[str, Any]) -> tuple[str, str, list[str]]:
    parsed = ExecutorContract.model_validate(contract([_claim(*bindings)]))
    result = Gatekeeper(store).check(parsed, SESSION)
    return result.status, result.severity, result.failed_rules


# --------------------------------------------------------------------------- required fields


def test_a_complete_contract_parses_and_the_true_citation_passes(store: Store) -> None:
    parsed, detail = _parse(contract([_claim(_binding())]))
    assert parsed is not None, detail
    assert _check(store, _binding()) == ("pass", "none", [])


@pytest.mark.parametrize("field", REQUIRED)
def test_each_of_the_seven_top_level_fields_is_required(field: str) -> None:
    document = contract([_claim(_binding())])
    del document[field]
    parsed, detail = _parse(document)
    assert parsed is None
    assert detail == f"executor contract invalid: {field}: Field required"


def test_empty_values_are_values() -> None:
    parsed, _ = _parse(contract([], diagnosis_summary="", user_facing_answer=""))
    assert parsed is not None
    assert (parsed.claims, parsed.hypotheses, parsed.missing_info) == ([], [], [])


@pytest.mark.parametrize(
    ("where", "document"),
    [
        ("claims.0.evidence_bindings.0", contract([_claim({"source_invocation_id": 1})])),
        (
            "recommended_actions.0.evidence_bindings.0",
            contract([], recommended_actions=[{"action_text": "看 GC", "evidence_bindings": [{}]}]),
        ),
        ("claims.0.evidence_bindings.0", contract([_claim(_binding(tool_name=None))])),
    ],
)
def test_tool_name_is_required_on_every_binding(where: str, document: dict[str, Any]) -> None:
    parsed, detail = _parse(document)
    assert parsed is None
    assert f"{where}.tool_name: " in detail


# --------------------------------------------------------------------------- strict integers


@pytest.mark.parametrize("value", [True, False, 1.0, "1", [1]])
def test_only_a_json_integer_is_an_invocation_id(value: object) -> None:
    parsed, detail = _parse(contract([_claim(_binding(source_invocation_id=value))]))
    assert parsed is None
    assert "claims.0.evidence_bindings.0.source_invocation_id: Input should be a valid integer" in (
        detail
    )


def test_a_legacy_id_list_holding_true_is_not_invocation_1() -> None:
    binding = _binding(source_invocation_id=None, source_invocation_ids=[True])
    parsed, detail = _parse(contract([_claim(binding)]))
    assert parsed is None
    assert "source_invocation_ids.0: Input should be a valid integer" in detail


def test_verifier_integers_are_strict_too() -> None:
    fact = {"fact": "f", "is_critical": True, "verification": "direct_evidence", "detail": "d"}
    good = {
        "verdict": "PASS",
        "groundedness_score": 1,
        "critical_fact_count": 1,
        "facts_checked": [{**fact, "evidence_refs": [{"trace_ref": "trace-1"}]}],
        "rationale": "r",
    }
    assert VerifierOutput.model_validate_json(json.dumps(good)).groundedness_score == 1.0
    bad_ref = {**fact, "evidence_refs": [{"trace_ref": "trace-1", "source_invocation_ids": [True]}]}
    for bad in (
        {**good, "critical_fact_count": True},
        {**good, "groundedness_score": True},
        {**good, "facts_checked": [bad_ref]},
    ):
        with pytest.raises(ValidationError, match="Input should be a valid"):
            VerifierOutput.model_validate_json(json.dumps(bad))


# --------------------------------------------------------------------------- absurd numbers


@pytest.mark.parametrize("index", ["１", "١", "۱", "𝟏", "1١"])
def test_non_ascii_digits_are_not_an_index(store: Store, index: str) -> None:
    result = Gatekeeper(store).check(
        ExecutorContract.model_validate(
            contract([_claim(_binding(raw_path=f"$.alerts[{index}]"))])
        ),
        SESSION,
    )
    (row,) = result.checked_bindings
    assert (row.status, row.grade, row.rule) == ("fail", "reject", "evidence.raw_path")
    assert "is malformed; allowed forms:" in (row.message or "")


def test_a_five_thousand_digit_index_is_a_clean_raw_path_reject(store: Store) -> None:
    huge = "9" * 5000
    assert _check(store, _binding(raw_path=f"$.alerts[{huge}]")) == (
        "fail",
        "reject",
        ["evidence.raw_path"],
    )
    # leading zeros are stripped as text, so a padded real index still names the real ref
    padded = "0" * 5000 + "1"
    assert _check(store, _binding(raw_path=f"$.alerts[{padded}]")) == ("pass", "none", [])


@pytest.mark.parametrize("invocation_id", [2**63, 2**70, -(2**63) - 1, -(2**70)])
def test_an_id_beyond_sqlite_integers_is_a_clean_invocation_ref_reject(
    store: Store, invocation_id: int
) -> None:
    result = Gatekeeper(store).check(
        ExecutorContract.model_validate(
            contract([_claim(_binding(source_invocation_id=invocation_id))])
        ),
        SESSION,
    )
    (row,) = result.checked_bindings
    assert (row.rule, row.grade, row.source_invocation_id) == (
        "evidence.invocation_ref",
        "reject",
        invocation_id,
    )
    assert row.message == (
        f"claim claim-1, binding 1: source_invocation_id {invocation_id} does not exist"
    )


def test_the_largest_sqlite_integer_is_still_looked_up(store: Store) -> None:
    assert _check(store, _binding(source_invocation_id=2**63 - 1))[2] == ["evidence.invocation_ref"]


_INDEXES = st.one_of(
    st.text(st.characters(categories=["Nd"]), min_size=1, max_size=12),
    st.integers(min_value=0, max_value=10**30).map(str),
    st.text(max_size=12),
)
_IDS = st.one_of(st.integers(min_value=-(2**90), max_value=2**90), st.none())


_FIXTURE_REUSED = [HealthCheck.function_scoped_fixture]  # the store is only read


@settings(max_examples=150, deadline=None, suppress_health_check=_FIXTURE_REUSED)
@given(
    invocation_id=_IDS,
    kind=st.sampled_from(["alerts", "logs", "evidence_blocks", "x"]),
    index=_INDEXES,
    excerpt=st.one_of(st.none(), st.text(max_size=80)),
)
def test_no_binding_a_model_can_write_makes_the_gatekeeper_raise(
    store: Store, invocation_id: int | None, kind: str, index: str, excerpt: str | None
) -> None:
    binding = _binding(
        source_invocation_id=invocation_id, raw_path=f"$.{kind}[{index}]", evidence_excerpt=excerpt
    )
    parsed, detail = _parse(contract([_claim(binding)]))
    assert parsed is not None, detail
    result = Gatekeeper(store).check(parsed, SESSION)
    (row,) = result.checked_bindings
    ascii_index = index.isascii() and index.isdigit()
    if row.status == "pass":
        # only the real alert at a real ASCII index can pass
        assert ascii_index
        assert int(index) in (0, 1)
        assert kind == "alerts"
        assert invocation_id in (1, None)
    if not ascii_index and invocation_id == 1:
        assert row.rule == "evidence.raw_path"
