"""Complete executor contracts for tests: the seven top-level fields 000 requires.

Tests state the claims (and whatever else they are about); the other required fields get
their empty values, exactly what a model that has nothing to say there must write.
"""

from __future__ import annotations

from typing import Any

from pytest_diageval.core.contract.contracts import ExecutorContract

__all__ = ["contract", "parsed_contract"]


def contract(claims: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """A contract dict with every required field; ``fields`` override the empty defaults."""
    return {
        "answer_version": "2",
        "diagnosis_summary": "",
        "claims": claims,
        "hypotheses": [],
        "recommended_actions": [],
        "missing_info": [],
        "user_facing_answer": "",
        **fields,
    }


def parsed_contract(claims: list[dict[str, Any]], **fields: Any) -> ExecutorContract:
    return ExecutorContract.model_validate(contract(claims, **fields))
