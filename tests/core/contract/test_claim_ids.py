"""Repeated claim ids nothing refers to are renamed; a referenced repeat still fails to parse."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from pytest_diageval.agents.executor import parse_contract
from pytest_diageval.core.contract.claim_ids import renumber_repeated_claim_ids
from pytest_diageval.core.contract.contract_schema import contract_parameters
from support.contracts import contract

RECORDED = Path(__file__).parents[2] / "data" / "contracts" / "live-repeated-claim-ids.json"


def _claim(claim_id: str, text: str = "order-service 内存使用率 91%。") -> dict[str, Any]:
    return {"claim_id": claim_id, "claim_type": "observation", "claim_text": text}


def _ids(document: dict[str, Any]) -> list[str]:
    parsed, status = parse_contract(json.dumps(document, ensure_ascii=False))
    assert parsed is not None, status.detail
    return [claim.claim_id for claim in parsed.claims]


def test_the_recorded_contract_with_three_claim_1_parses_with_three_names() -> None:
    text = RECORDED.read_text("utf-8")
    recorded_claims = json.loads(text)["claims"]
    parsed, status = parse_contract(text)
    assert parsed is not None, status.detail
    assert [c.claim_id for c in parsed.claims] == ["claim-1", "claim-2", "claim-3"]
    assert [c.claim_text for c in parsed.claims] == [c["claim_text"] for c in recorded_claims]
    assert status.detail == (
        "parsed executor evidence contract; "
        "repeated claim ids renumbered: claim-1 → claim-2, claim-1 → claim-3"
    )


def test_a_hypothesis_naming_a_repeat_names_every_claim_so_called() -> None:
    hypothesis = {"hypothesis_text": "GC 压力", "basis_claim_ids": ["claim-1", "c", "claim-1"]}
    claims = [_claim("claim-1"), _claim("c"), _claim("claim-1"), _claim("claim-1")]
    parsed, status = parse_contract(
        json.dumps(contract(claims, hypotheses=[hypothesis]), ensure_ascii=False)
    )
    assert parsed is not None, status.detail
    assert [c.claim_id for c in parsed.claims] == ["claim-1", "c", "claim-2", "claim-3"]
    assert parsed.hypotheses[0].basis_claim_ids == ["claim-1", "claim-2", "claim-3", "c"]
    assert status.detail.endswith("renumbered: claim-1 → claim-2, claim-1 → claim-3")


def test_a_repeat_takes_the_lowest_name_no_claim_has() -> None:
    document = contract([_claim("claim-2"), _claim("claim-2"), _claim("claim-1"), _claim("c")])
    assert _ids(document) == ["claim-2", "claim-3", "claim-1", "c"]
    document = contract([_claim("x"), _claim("x"), _claim("x")])
    assert _ids(document) == ["x", "claim-1", "claim-2"]


def test_without_repeats_or_valid_json_nothing_is_renamed() -> None:
    assert renumber_repeated_claim_ids(json.dumps(contract([_claim("claim-1")]))) == (None, [])
    assert renumber_repeated_claim_ids('{"claims": [') == (None, [])
    assert renumber_repeated_claim_ids("[1, 2]") == (None, [])
    _, status = parse_contract(json.dumps(contract([_claim("claim-1")])))
    assert status.detail == "parsed executor evidence contract"


def test_the_schema_names_claims_and_their_references_claim_1_to_claim_3() -> None:
    schema = contract_parameters([])
    claim = schema["properties"]["claims"]["items"]["properties"]
    assert claim["claim_id"] == {"type": "string", "enum": ["claim-1", "claim-2", "claim-3"]}
    hypothesis = schema["properties"]["hypotheses"]["items"]["properties"]
    assert hypothesis["basis_claim_ids"]["items"] == claim["claim_id"]
    assert hypothesis["hypothesis_id"]["enum"] == ["hypothesis-1"]
    validator = jsonschema.Draft202012Validator(schema)
    claim_fields = {"support_level": "direct", "evidence_bindings": []}
    assert validator.is_valid(contract([{**_claim("claim-2"), **claim_fields}]))
    # What the live model wrote with free-text ids: a 65-character id, and "}, {".
    for bad in ("claim-" + "1" * 59, "}, {"):
        assert not validator.is_valid(contract([{**_claim(bad), **claim_fields}]))
        basis = {"hypothesis_id": "hypothesis-1", "hypothesis_text": "h", "missing_info": ""}
        assert not validator.is_valid(
            contract([], hypotheses=[{**basis, "basis_claim_ids": [bad]}])
        )


def test_a_renamed_contract_is_validated_as_strictly_as_any_other() -> None:
    # The renamed path validates decoded JSON instead of the text: a string id stays an error.
    binding = {"tool_name": "query_metrics", "source_invocation_id": "1", "raw_path": "$.alerts[0]"}
    claims = [{**_claim("claim-1"), "evidence_bindings": [binding]}, _claim("claim-1")]
    for document in (contract(claims), contract(claims[:1])):
        parsed, status = parse_contract(json.dumps(document, ensure_ascii=False))
        assert parsed is None
        assert "claims.0.evidence_bindings.0.source_invocation_id" in status.detail
