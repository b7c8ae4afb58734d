"""A check and what it reads and returns: :class:`Check`, :class:`CheckContext`,
:class:`CheckOutcome`; and the helpers every evaluator shares."""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from pytest_diageval.agents.grader import GraderRun
from pytest_diageval.agents.results import ChatResult
from pytest_diageval.agents.usage import TokenUsage

__all__ = [
    "Check",
    "CheckContext",
    "CheckOutcome",
    "CheckRaised",
    "describe_expected",
    "needs_rounds",
    "run_registered",
    "set_difference",
]


@dataclass(frozen=True)
class CheckOutcome:
    """The result of one check: ``details`` are short lines of evidence for a reviewer."""

    passed: bool
    expected: str
    actual: str
    details: list[str] = field(default_factory=list)
    got: str = ""
    """A shorter ``actual`` for the one-line summary (default: ``actual``)."""
    reason: str = ""
    """Why, in a few words, for the one-line summary (``gatekeeper reject: …``)."""

    def report(self) -> str:
        """Expected, actual and the evidence, as a few plain lines for a failure report."""
        lines = [f"expected: {self.expected}", f"actual:   {self.actual}"]
        return "\n".join([*lines, *self.details])

    def headline(self, key: str) -> str:
        """``verdict: expected PASS, got REJECT (gatekeeper reject: evidence.raw_path)``."""
        text = f"{key}: expected {self.expected}, got {self.got or self.actual}"
        return " ".join(f"{text} ({self.reason})".split() if self.reason else text.split())


def describe_expected(value: Any) -> str:
    """An expectation in one line: ``min=0.0, max=0.49``, ``[query_logs]``, ``LOW_CONFID``."""
    if isinstance(value, BaseModel):
        given = [name for name in type(value).model_fields if name in value.model_fields_set]
        return ", ".join(f"{name}={describe_expected(getattr(value, name))}" for name in given)
    if isinstance(value, list):
        inner = "; ".join if value and isinstance(value[0], BaseModel) else ", ".join
        return f"[{inner(describe_expected(item) for item in value)}]"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


P_co = TypeVar("P_co", covariant=True)
P_contra = TypeVar("P_contra", contravariant=True)


@dataclass(frozen=True, slots=True)
class CheckContext(Generic[P_co]):
    """Everything a check may read about one run of one scenario, as pydantic_evals hands an
    ``EvaluatorContext`` to ``evaluate(ctx)``. Its attributes are fixed and typed: reading
    one it does not have is an ``AttributeError`` (and a mypy error), never a silent default."""

    key: str
    """The ``expect`` key being checked (the check's registered name)."""
    params: P_co
    """The key's value in the scenario, validated against the check's parameters."""
    result: ChatResult
    """The session's result: its rounds, verdict, score, final answer and tool calls."""
    usage: TokenUsage
    """The run's tokens per stage (``usage.total.total_tokens``); empty (``usage.stages ==
    {}``) when no model answer reported any."""
    grade: GraderRun | None
    """The grader's answer when the scenario sets ``rubric`` (the grader is asked only then,
    after the pipeline); otherwise ``None``."""

    if not TYPE_CHECKING:  # mypy keeps refusing unknown attributes; the error names the known

        def __getattr__(self, name: str) -> Any:
            known = ", ".join(f.name for f in fields(self))
            hint = (
                f"; the run's result is ctx.result (ctx.result.{name})"
                if name in ChatResult.model_fields or hasattr(ChatResult, name)
                else ""
            )
            raise AttributeError(
                f"CheckContext has no attribute {name!r} (it has {known}){hint}", name=name
            )


class Check(Protocol[P_contra]):
    """A check: ``fn(params, ctx) -> CheckOutcome``, registered under an ``expect`` key."""

    def __call__(self, params: P_contra, ctx: CheckContext[P_contra], /) -> CheckOutcome: ...


E = TypeVar("E")
ResultCheck = Callable[[E, ChatResult], CheckOutcome]
"""A built-in evaluator's own form: the expected value and the result (no usage, no grade)."""


def needs_rounds(check: ResultCheck[E]) -> ResultCheck[E]:
    """A session that errored or ran no round fails the check, whatever it expects."""

    @functools.wraps(check)
    def guarded(expected: E, result: ChatResult) -> CheckOutcome:
        if result.status == "error":
            return CheckOutcome(
                False,
                describe_expected(expected),
                f"session error: {result.error or 'no message'}",
                [f"rounds completed before the error: {len(result.rounds)}"],
            )
        if not result.rounds:
            return CheckOutcome(False, describe_expected(expected), "the session ran no round")
        return check(expected, result)

    return guarded


class CheckRaised(Exception):
    """A registered check raised instead of returning a :class:`CheckOutcome`: its item fails
    with the error and the check's own frames, not the harness's."""

    def __init__(self, message: str, frames: str) -> None:
        super().__init__(message)
        self.frames = frames


def run_registered(spec: Any, ctx: CheckContext[Any]) -> CheckOutcome:
    """Run a registered check (a ``CheckSpec``) as ``spec.function(params, ctx)``: a session
    that errored or ran no round fails it as it fails a built-in one (:func:`needs_rounds`);
    it must return a CheckOutcome."""

    def call(params: Any, run: ChatResult) -> CheckOutcome:
        try:
            answer = spec.function(params, ctx)
        except Exception as error:
            own = traceback.extract_tb(error.__traceback__)[1:]  # from the check's frame on
            raise CheckRaised(
                f"check {spec.name!r} (registered by {spec.source or 'unknown'}) raised"
                f" {type(error).__name__}: {error}",
                "".join([*traceback.format_list(own), *traceback.format_exception_only(error)]),
            ) from None
        if not isinstance(answer, CheckOutcome):
            raise TypeError(
                f"check {spec.name!r} (registered by {spec.source or 'unknown'}) returned"
                f" {type(answer).__name__}, not a CheckOutcome"
            )
        return answer

    return needs_rounds(call)(ctx.params, ctx.result)


def set_difference(name: str, expected: Sequence[str], actual: Sequence[str]) -> list[str]:
    """One ``name: missing …; unexpected …`` line when the two sets differ, else none."""
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
        [f"unexpected {', '.join(extra)}"] if extra else []
    )
    return [f"{name}: {'; '.join(parts)}"] if parts else []
