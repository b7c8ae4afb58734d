"""The registry of ``expect`` keys without pytest: what it refuses, how a registered check
runs beside the built-in ones, and what it adds to the JSON Schema (the built-ins unchanged)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field

from pytest_diageval.agents.results import ChatResult
from pytest_diageval.harness.checks.evaluators import (
    BUILTIN_CHECKS,
    CHECKS,
    register_builtin_checks,
    run_check,
    run_checks,
)
from pytest_diageval.harness.checks.outcome import CheckOutcome
from pytest_diageval.harness.format.expectations import EXPECT_KEYS, Expect
from pytest_diageval.harness.format.registry import CheckRegistrationError, CheckRegistry
from pytest_diageval.harness.format.schema import render_schema, scenario_json_schema
from support.chat_results import errored, highcpu_pass

COMMITTED = Path(__file__).resolve().parents[3] / "scenarios" / "scenario.schema.json"


def _max_chars(limit: int, result: ChatResult) -> CheckOutcome:
    length = len(result.final_answer)
    return CheckOutcome(length <= limit, f"at most {limit} characters", f"{length} characters")


def _registry() -> CheckRegistry:
    registry = CheckRegistry()
    register_builtin_checks(registry)
    registry.register(
        "max_answer_chars", Annotated[int, Field(gt=0)], _max_chars, description="At most N."
    )
    return registry


def test_the_builtin_keys_go_through_the_registry_in_their_order() -> None:
    assert BUILTIN_CHECKS.names == EXPECT_KEYS
    assert [spec.function for spec in BUILTIN_CHECKS] == list(CHECKS.values())
    assert [spec.name for spec in BUILTIN_CHECKS if spec.needs_usage] == ["tokens"]
    assert BUILTIN_CHECKS.registered() == []
    assert BUILTIN_CHECKS.expect_model() is Expect
    assert _registry().names == (*EXPECT_KEYS, "max_answer_chars")


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("verdict", str, "a check named 'verdict' is already registered (by"),
        ("Max-Chars", int, "check name 'Max-Chars' (from"),
        ("model_dump", int, "check name 'model_dump' is reserved"),
        ("present_keys", int, "check name 'present_keys' is reserved"),
        ("max_answer_chars", int, "a check named 'max_answer_chars' is already registered"),
        ("weird", object(), "the parameters of check 'weird' must be a type pydantic can"),
    ],
)
def test_a_check_that_cannot_be_registered_says_why(name: str, params: Any, message: str) -> None:
    registry = _registry()
    with pytest.raises(CheckRegistrationError) as error:
        registry.register(name, params, _max_chars)
    assert str(error.value).startswith(message)


def test_a_builtin_name_with_other_parameters_is_refused_even_on_an_empty_registry() -> None:
    with pytest.raises(CheckRegistrationError, match="'rounds' is a built-in expect key"):
        CheckRegistry().register("rounds", int, _max_chars)


def test_a_registered_key_is_validated_kept_and_run_after_the_builtin_ones() -> None:
    registry = _registry()
    expect = Expect.model_validate(
        {"max_answer_chars": 10, "verdict": "PASS"}, context={"checks": registry}
    )
    assert type(expect) is Expect  # the collected scenario pickles as before
    assert expect.present_keys() == ["verdict", "max_answer_chars"]
    assert expect.value_of("max_answer_chars") == 10
    result = highcpu_pass()
    outcomes = run_checks(expect, result, checks=registry)
    assert list(outcomes) == ["verdict", "max_answer_chars"]
    assert outcomes["verdict"].passed
    chars = outcomes["max_answer_chars"]
    assert (chars.passed, chars.expected) == (False, "at most 10 characters")
    assert chars.actual == f"{len(result.final_answer)} characters"
    assert len(result.final_answer) > 10
    assert run_check("max_answer_chars", 400, result, checks=registry).passed


def test_without_the_registry_a_registered_key_is_unknown() -> None:
    with pytest.raises(KeyError, match="no check for expect key 'max_answer_chars'; known: verd"):
        run_check("max_answer_chars", 10, highcpu_pass())
    with pytest.raises(ValueError, match="max_answer_chars\n  Extra inputs are not permitted"):
        Expect.model_validate({"max_answer_chars": 10})


def test_a_registered_check_fails_on_a_session_error_as_a_builtin_one_does() -> None:
    outcome = run_check("max_answer_chars", 10, errored(), checks=_registry())
    assert not outcome.passed
    assert outcome.actual == "session error: LLM unavailable (planner, round 1): connection refused"


def test_a_check_must_return_a_check_outcome() -> None:
    registry = CheckRegistry()
    registry.register("answer_is_short", int, lambda limit, result: True)
    with pytest.raises(TypeError, match=r"check 'answer_is_short' .* returned bool, not a Check"):
        run_check("answer_is_short", 3, highcpu_pass(), checks=registry)


def test_a_check_of_a_model_and_the_decorator() -> None:
    from pydantic import BaseModel, ConfigDict

    class Mentions(BaseModel):
        model_config = ConfigDict(extra="forbid")
        service: str

    registry = CheckRegistry()

    @registry.check("answer_mentions", Mentions, description="The answer names the service.")
    def mentions(expected: Mentions, result: ChatResult) -> CheckOutcome:
        found = expected.service in result.final_answer
        return CheckOutcome(found, expected.service, "named" if found else "not named")

    assert mentions.__name__ == "mentions"  # the decorator hands the function back
    schema = scenario_json_schema(registry)
    assert schema["$defs"]["Expect"]["properties"]["answer_mentions"] == {
        "$ref": "#/$defs/Mentions",
        "description": "The answer names the service.",
    }
    assert schema["$defs"]["Mentions"]["additionalProperties"] is False
    ok = run_check(
        "answer_mentions", Mentions(service="payment-service"), highcpu_pass(), None, registry
    )
    bad = run_check(
        "answer_mentions", Mentions(service="order-service"), highcpu_pass(), None, registry
    )
    assert (ok.passed, bad.passed, bad.actual) == (True, False, "not named")


def test_the_schema_adds_the_registered_key_and_keeps_the_builtins_identical() -> None:
    builtin = json.loads(render_schema())
    extended = json.loads(render_schema(_registry()))
    added = extended["$defs"]["Expect"]["properties"].pop("max_answer_chars")
    assert added == {"description": "At most N.", "exclusiveMinimum": 0, "type": "integer"}
    assert extended == builtin
    # The committed file is the built-in schema plus this project's own key, nothing else.
    committed = json.loads(COMMITTED.read_text("utf-8"))
    assert committed["$defs"]["Expect"]["properties"].pop("max_answer_chars") == {
        "description": "The final answer has at most this many characters.",
        "exclusiveMinimum": 0,
        "type": "integer",
    }
    assert committed == builtin
