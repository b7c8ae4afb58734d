"""The per-session contract schema against the gatekeeper, on invocations the real recorder made.

What the schema allows a binding to say about where it cites (tool, invocation, raw path) is
exactly what the gatekeeper's location rules pass: a schema-following model cannot produce a
forged location, and no honest location is out of its reach.
"""

from __future__ import annotations

import itertools
from typing import Any

import jsonschema
import pytest

from pytest_diageval.core.contract.contract_schema import (
    SCHEMA_LIST_CAPS,
    contract_parameters,
    submit_contract_tool,
)
from pytest_diageval.core.contract.contracts import ExecutorContract
from pytest_diageval.core.evidence.recorder import ToolInvocationRecorder
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.evidence.tool_arguments import (
    constrained_tool_definitions,
    services_named_in,
)
from pytest_diageval.core.evidence.tools import Toolbox
from pytest_diageval.core.evidence.world import default_world
from pytest_diageval.core.judge.gatekeeper import Gatekeeper
from support.contracts import contract

SESSION = "s"
LOCATION_RULES = {"evidence.invocation_ref", "evidence.tool_mismatch", "evidence.raw_path"}


@pytest.fixture(scope="module")
def session() -> tuple[Store, list[Any]]:
    store = Store()
    store.create_session(SESSION, "q", "2026-07-08T11:17:00+08:00")
    recorder = ToolInvocationRecorder(store, Toolbox(default_world()), SESSION)
    recorder.call("query_metrics", {"service": "order-service"}, round=1)  # 1: one alert
    recorder.call("query_logs", {"service": "order-service", "keywords": ["内存"]}, round=1)
    recorder.call("query_logs", {"service": "inventory-service", "keywords": ["HikariCP"]}, round=1)
    recorder.call("lookup_knowledge", {"query": "HighMemoryUsage"}, round=1)  # 4: runbook
    recorder.call("lookup_knowledge", {"query": "HighMemoryUsage"}, round=1)  # 5: deduped
    return store, store.list_invocations(SESSION)


def with_binding(tool: str, invocation: int, path: str) -> dict[str, Any]:
    binding = {
        "tool_name": tool,
        "source_invocation_id": invocation,
        "raw_path": path,
        "evidence_excerpt": "x",
    }
    claim = {
        "claim_id": "claim-1",
        "claim_type": "observation",
        "claim_text": "t",
        "support_level": "direct",
        "evidence_bindings": [binding],
    }
    return contract([claim], user_facing_answer="a")


def schema_allows(schema: dict[str, Any], instance: dict[str, Any]) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


def gatekeeper_locates(store: Store, instance: dict[str, Any]) -> bool:
    result = Gatekeeper(store).check(ExecutorContract.model_validate(instance), SESSION)
    return not {row.rule for row in result.checked_bindings if row.rule} & LOCATION_RULES


def test_the_schema_allows_exactly_the_locations_the_gatekeeper_passes(session: Any) -> None:
    store, invocations = session
    schema = contract_parameters(invocations)
    paths = ["$.alerts[0]", "$.alerts[1]", "$.alerts", "$.logs[0]", "$.logs[4]", "$.logs"]
    paths += ["$.evidence_blocks[0]", "$.evidence_blocks"]
    tools = ["query_metrics", "query_logs", "lookup_knowledge"]
    allowed = []
    for tool, invocation, path in itertools.product(tools, range(0, 7), paths):
        instance = with_binding(tool, invocation, path)
        verdict = schema_allows(schema, instance)
        assert verdict == gatekeeper_locates(store, instance), (tool, invocation, path)
        if verdict:
            allowed.append((tool, invocation, path))
    # The honest locations are all reachable: the alert, the memory logs, the no-hit, the runbook.
    assert ("query_metrics", 1, "$.alerts[0]") in allowed
    assert ("query_logs", 2, "$.logs[4]") in allowed
    assert ("query_logs", 3, "$.logs") in allowed
    assert ("lookup_knowledge", 4, "$.evidence_blocks[0]") in allowed
    # Mixed across invocations, invented, or the empty result of a search that found something.
    assert ("query_logs", 1, "$.logs[4]") not in allowed
    assert ("query_metrics", 2, "$.alerts[0]") not in allowed
    assert ("query_logs", 2, "$.logs") not in allowed
    assert not [entry for entry in allowed if entry[1] in (0, 5, 6)]  # none, deduped, none


def test_every_schema_valid_contract_parses_and_the_shape_follows_the_contract_model() -> None:
    schema = contract_parameters([])
    assert schema["required"] == list(ExecutorContract.model_fields)[: len(schema["required"])]
    assert set(schema["required"]) == {
        name for name, field in ExecutorContract.model_fields.items() if field.is_required()
    }
    empty = contract([], user_facing_answer="未检索到证据。")
    assert schema_allows(schema, empty)
    ExecutorContract.model_validate(empty)
    assert not schema_allows(schema, with_binding("query_logs", 1, "$.logs"))  # nothing yet
    too_many = contract([with_binding("q", 1, "$")["claims"][0]] * 4, user_facing_answer="a")
    assert SCHEMA_LIST_CAPS["claims"] == 3
    assert not schema_allows(schema, too_many)


def test_the_submit_tool_is_a_function_named_as_the_prompt_says(session: Any) -> None:
    _, invocations = session
    tool = submit_contract_tool(invocations)
    assert tool["function"]["name"] == "submit_evidence_contract"
    binding = tool["function"]["parameters"]["properties"]["claims"]["items"]["properties"][
        "evidence_bindings"
    ]
    ids = [alt["properties"]["source_invocation_id"]["const"] for alt in binding["items"]["anyOf"]]
    assert ids == [1, 2, 3, 4]  # invocation 5 was deduped: nothing new to cite


def test_tool_schemas_require_a_service_of_the_world_or_of_the_question() -> None:
    query = "只确认 shipping-service 和 order-service 的日志里是否有 HikariCP 记录"
    assert services_named_in(query) == ["shipping-service", "order-service"]
    definitions = {
        d["function"]["name"]: d["function"]["parameters"]
        for d in constrained_tool_definitions(default_world(), query)
    }
    logs = definitions["query_logs"]
    assert logs["required"] == ["service"]
    assert logs["properties"]["service"]["enum"] == [
        "inventory-service",
        "order-service",
        "payment-service",
        "user-service",
        "shipping-service",
    ]
    assert (logs["properties"]["limit"]["minimum"], logs["properties"]["limit"]["maximum"]) == (
        1,
        200,
    )
    metrics = definitions["query_metrics"]
    assert metrics["required"] == ["service"]
    assert "HighMemoryUsage" in metrics["properties"]["alert_name"]["enum"]
    assert definitions["lookup_knowledge"]["required"] == ["query"]  # untouched: no service
