"""The registry of ``expect`` keys without pytest: what it refuses, how a registered check
runs beside the built-in ones, what it adds to the JSON Schema (the built-ins unchanged), the
earlier check forms it still adapts, and the parameter models it makes strict."""

from __future__ import annotations

import json
import pickle
import warnings
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pytest_diageval.agents.grader import GraderRun
from pytest_diageval.agents.results import ChatResult
from pytest_diageval.agents.usage import StageUsage, TokenUsage
from pytest_diageval.harness.checks.evaluators import (
    BUILTIN_CHECKS,
    CHECKS,
    register_builtin_checks,
    run_check,
    run_checks,
)
from pytest_diageval.harness.checks.outcome import CheckContext, CheckOutcome
from pytest_diageval.harness.format.expectations import EXPECT_KEYS, Expect
from pytest_diageval.harness.format.registry import CheckRegistrationError, CheckRegistry
from pytest_diageval.harness.format.schema import render_schema, scenario_json_schema
from support.chat_results import errored, highcpu_pass

COMMITTED = Path(__file__).resolve().parents[3] / "scenarios" / "scenario.schema.json"


def _max_chars(limit: int, ctx: CheckContext[int]) -> CheckOutcome:
    length = len(ctx.result.final_answer)
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
    registry.register("answer_is_short", int, lambda limit, ctx: True)
    with pytest.raises(TypeError, match=r"check 'answer_is_short' .* returned bool, not a Check"):
        run_check("answer_is_short", 3, highcpu_pass(), checks=registry)


def test_a_check_of_a_model_and_the_decorator() -> None:
    from pydantic import BaseModel, ConfigDict

    class Mentions(BaseModel):
        model_config = ConfigDict(extra="forbid")
        service: str

    registry = CheckRegistry()

    @registry.check("answer_mentions", Mentions, description="The answer names the service.")
    def mentions(expected: Mentions, ctx: CheckContext[Mentions]) -> CheckOutcome:
        found = expected.service in ctx.result.final_answer
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


# --------------------------------------------------------------------------- the context


def _seen(registry: CheckRegistry, name: str, **run: Any) -> CheckContext[Any]:
    """The context ``name``'s check was called with (its outcome names nothing else)."""
    seen: list[CheckContext[Any]] = []

    def spy(params: Any, ctx: CheckContext[Any]) -> CheckOutcome:
        seen.append(ctx)
        return CheckOutcome(True, "", "")

    registry.register(name, int, spy)
    run_check(name, 7, highcpu_pass(), checks=registry, **run)
    (ctx,) = seen
    return ctx


def test_a_check_is_called_with_its_parameters_and_the_runs_context() -> None:
    usage = TokenUsage({"planner": StageUsage(10, 5, 1)}, "estimated")
    grade = GraderRun("criteria", None, None, "no grader", [])  # type: ignore[arg-type]
    ctx = _seen(CheckRegistry(), "spied", usage=usage, grade=grade)
    assert (ctx.key, ctx.params, ctx.usage, ctx.grade) == ("spied", 7, usage, grade)
    assert ctx.result.final_answer == highcpu_pass().final_answer
    bare = _seen(CheckRegistry(), "bare")  # no usage counted, no grader asked
    assert (bare.usage, bare.grade) == (TokenUsage(), None)


def test_a_wrong_attribute_of_the_context_is_an_error_that_names_the_right_ones() -> None:
    ctx = _seen(CheckRegistry(), "spied")
    with pytest.raises(AttributeError) as error:
        ctx.claim_count  # type: ignore[attr-defined]  # noqa: B018
    assert str(error.value) == (
        "CheckContext has no attribute 'claim_count' (it has key, params, result, usage, grade)"
    )
    with pytest.raises(AttributeError, match=r"the run's result is ctx.result \(ctx.result.fin"):
        ctx.final_answer  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError):
        ctx.result.claim_count  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError):
        ctx.usage.total_tokens  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError):
        ctx.params = 8  # type: ignore[misc]  # frozen: a check cannot change what others read


# --------------------------------------------------------------------------- earlier forms


def _registered_warns(form: str, *args: Any, **kwargs: Any) -> CheckRegistry:
    registry = CheckRegistry()
    with pytest.warns(DeprecationWarning, match="is deprecated: write fn") as caught:
        registry.register(*args, **kwargs)
    (warning,) = caught
    assert str(warning.message) == (
        f"check {args[0]!r} is written as {form}, which is deprecated: write fn(params, ctx)"
        " and read ctx.result, ctx.usage and ctx.grade (from pytest_diageval import"
        " CheckContext, CheckOutcome; see docs/api.md)"
    )
    assert warning.filename == __file__  # the check's own line, not the registry's
    return registry


def test_the_earlier_result_form_is_adapted_with_a_deprecation_warning() -> None:
    def old(limit: int, result: ChatResult) -> CheckOutcome:
        length = len(result.final_answer)
        return CheckOutcome(length <= limit, f"at most {limit}", str(length))

    def unannotated(limit, result):  # type: ignore[no-untyped-def]  # the README's old example
        return CheckOutcome(len(result.final_answer) <= limit, "", "")

    for function in (old, unannotated):
        registry = _registered_warns("fn(params, result)", "old_chars", int, function)
        assert run_check("old_chars", 400, highcpu_pass(), checks=registry).passed
        assert not run_check("old_chars", 10, highcpu_pass(), checks=registry).passed


def test_needs_usage_and_needs_grade_are_adapted_and_the_grade_is_passed() -> None:
    usage = TokenUsage({"planner": StageUsage(10, 5, 1)})
    grade = GraderRun("criteria", None, None, "no grader", [])  # type: ignore[arg-type]

    def tokens(limit: int, result: ChatResult, usage: TokenUsage) -> CheckOutcome:
        return CheckOutcome(usage.total.total_tokens <= limit, str(limit), str(usage.total))

    def graded(minimum: int, result: ChatResult, grade: GraderRun | None) -> CheckOutcome:
        return CheckOutcome(grade is not None, str(minimum), grade.criteria if grade else "-")

    form = "fn(params, result, usage) with needs_usage=True"
    registry = _registered_warns(form, "old_tokens", int, tokens, needs_usage=True)
    assert run_check("old_tokens", 15, highcpu_pass(), usage, registry).passed
    assert not run_check("old_tokens", 14, highcpu_pass(), usage, registry).passed
    # needs_grade=True was accepted, then failed when it ran: graded() missing 'grade'.
    form = "fn(params, result, grade) with needs_grade=True"
    registry = _registered_warns(form, "old_graded", int, graded, needs_grade=True)
    outcome = run_check("old_graded", 1, highcpu_pass(), checks=registry, grade=grade)
    assert (outcome.passed, outcome.actual) == (True, "criteria")


def test_the_new_form_registers_without_a_warning() -> None:
    def annotated(limit: int, result: CheckContext[int]) -> CheckOutcome:  # any name
        return CheckOutcome(True, "", "")

    def named(limit, ctx):  # type: ignore[no-untyped-def]
        return CheckOutcome(True, "", "")

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for function in (annotated, named, _max_chars):
            CheckRegistry().register("fresh", int, function)


def test_a_function_that_cannot_be_called_with_params_and_context_is_refused() -> None:
    def three(limit: int, result: ChatResult, usage: TokenUsage) -> CheckOutcome:
        raise AssertionError("never called")

    with pytest.raises(CheckRegistrationError) as error:
        CheckRegistry().register("three", int, three)
    assert str(error.value) == (
        "check 'three': three(limit, result, usage) cannot be called as fn(params, ctx); a check"
        " takes its parameters and a CheckContext (needs_usage / needs_grade: read ctx.usage,"
        " ctx.grade)"
    )


# --------------------------------------------------------------------------- parameter models


class Window(BaseModel):
    """At least ``min`` claims."""

    min: int = 0


class Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")  # the author's choice: unknown keys are dropped
    min: int = 0


def _validate(registry: CheckRegistry, value: Any) -> Any:
    expect = Expect.model_validate({"few_claims": value}, context={"checks": registry})
    return expect.value_of("few_claims")


def test_a_parameter_model_refuses_unknown_keys_unless_it_sets_extra_itself() -> None:
    strict = CheckRegistry()
    strict.register("few_claims", Window, _max_chars)
    with pytest.raises(ValidationError) as error:
        _validate(strict, {"min": 1, "mni": 5})
    (problem,) = error.value.errors()
    assert (problem["loc"], problem["type"]) == (("few_claims", "mni"), "extra_forbidden")
    kept = _validate(strict, {"min": 1})
    assert isinstance(kept, Window)
    assert kept.min == 1
    assert "extra" not in Window.model_config  # the author's class is left as it was
    schema = scenario_json_schema(strict)["$defs"]
    assert schema["Window"]["additionalProperties"] is False
    assert schema["Window"]["description"] == "At least ``min`` claims."

    lenient = CheckRegistry()
    lenient.register("few_claims", Lenient, _max_chars)
    assert lenient["few_claims"].params is Lenient
    assert _validate(lenient, {"min": 1, "mni": 5}) == Lenient(min=1)


def test_a_parameter_model_defined_in_a_function_survives_the_scenarios_pickle() -> None:
    def register(registry: CheckRegistry) -> None:  # a conftest.py's hook defines it inside
        class Local(BaseModel):
            model_config = ConfigDict(extra="ignore")
            min: int = 0

        registry.register("few_claims", Local, _max_chars)

    registry = CheckRegistry()
    register(registry)
    expect = Expect.model_validate({"few_claims": {"min": 2}}, context={"checks": registry})
    again = pickle.loads(pickle.dumps(expect))
    assert again.value_of("few_claims").min == 2
