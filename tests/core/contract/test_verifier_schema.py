"""The verifier's per-session schema: a fact names a claim of the contract and cites the
session's trace refs, and nothing else validates (issue 25 part 5)."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest

from pytest_diageval.agents.structured_output import structured_request
from pytest_diageval.core.contract.contracts import VerifierOutput
from pytest_diageval.core.contract.verifier_schema import constrain_verifier_parameters

GENERIC: dict[str, Any] = structured_request(VerifierOutput)[1]["tools"][0]["function"][
    "parameters"
]
CLAIMS = ["claim-1", "claim-2"]
TRACES = ["trace-1", "trace-2", "trace-3"]


def _answer(claim_id: Any, *trace_refs: str) -> dict[str, Any]:
    fact: dict[str, Any] = {
        "fact": "order-service 存在 HighMemoryUsage 告警",
        "is_critical": True,
        "verification": "direct_evidence",
        "detail": "告警原文",
        "evidence_refs": [{"trace_ref": ref, "source_invocation_ids": [1]} for ref in trace_refs],
        "claim_id": claim_id,
    }
    if claim_id is ...:
        del fact["claim_id"]
    return {
        "verdict": "PASS",
        "groundedness_score": 1.0,
        "critical_fact_count": 1,
        "facts_checked": [fact],
        "rationale": "-",
    }


def _valid(schema: dict[str, Any], answer: dict[str, Any]) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(answer)


def test_claim_ids_and_trace_refs_are_enums_of_the_session_in_its_order() -> None:
    schema = constrain_verifier_parameters(GENERIC, CLAIMS, TRACES)
    fact = schema["$defs"]["FactChecked"]
    assert fact["properties"]["claim_id"] == {"type": "string", "enum": CLAIMS}
    assert "claim_id" in fact["required"]
    ref = schema["$defs"]["FactEvidenceRef"]["properties"]["trace_ref"]
    assert ref == {"type": "string", "enum": TRACES}


@pytest.mark.parametrize(
    ("claim_id", "refs", "valid"),
    [
        ("claim-2", ("trace-3",), True),
        ("claim-9", ("trace-1",), False),  # a claim the contract does not have
        (None, ("trace-1",), False),  # the generic schema allowed null
        (..., ("trace-1",), False),  # ... and leaving it out
        ("claim-1", ("trace-1", "trace-7"), False),  # a trace ref the session does not have
    ],
)
def test_only_the_sessions_claims_and_refs_validate(
    claim_id: Any, refs: tuple[str, ...], valid: bool
) -> None:
    answer = _answer(claim_id, *refs)
    assert _valid(GENERIC, answer) or claim_id is None or claim_id is ...
    assert _valid(constrain_verifier_parameters(GENERIC, CLAIMS, TRACES), answer) is valid


def test_without_claims_a_fact_names_none_and_without_traces_cites_nothing() -> None:
    schema = constrain_verifier_parameters(GENERIC, [], [])
    fact = schema["$defs"]["FactChecked"]
    assert fact["properties"]["claim_id"] == {"type": "null"}
    assert fact["properties"]["evidence_refs"]["maxItems"] == 0
    assert _valid(schema, _answer(None))
    assert not _valid(schema, _answer("claim-1"))
    assert not _valid(schema, _answer(None, "trace-1"))


def test_the_generic_schema_is_left_untouched_and_the_rest_is_unchanged() -> None:
    before = copy.deepcopy(GENERIC)
    schema = constrain_verifier_parameters(GENERIC, CLAIMS, TRACES)
    assert before == GENERIC
    assert {k: v for k, v in schema.items() if k != "$defs"} == {
        k: v for k, v in GENERIC.items() if k != "$defs"
    }
    unchanged = ("fact", "is_critical", "verification", "detail", "evidence_refs")
    for name in unchanged:
        assert (
            schema["$defs"]["FactChecked"]["properties"][name]
            == GENERIC["$defs"]["FactChecked"]["properties"][name]
        )


def test_the_same_session_gives_byte_identical_schemas() -> None:
    first = json.dumps(constrain_verifier_parameters(GENERIC, CLAIMS, TRACES), ensure_ascii=False)
    again = json.dumps(constrain_verifier_parameters(GENERIC, CLAIMS, TRACES), ensure_ascii=False)
    assert first == again
