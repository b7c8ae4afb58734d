"""The outcome of one expectation check, and the helpers every evaluator shares."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from pytest_diageval.agents.results import ChatResult

__all__ = ["CheckOutcome", "describe_expected", "needs_rounds", "run_registered", "set_difference"]


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


E = TypeVar("E")
Check = Callable[[E, ChatResult], CheckOutcome]


def needs_rounds(check: Check[E]) -> Check[E]:
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


def run_registered(spec: Any, expected: Any, result: ChatResult, usage: Any = None) -> CheckOutcome:
    """Run a registered check (a ``CheckSpec``): a session that errored or ran no round fails
    it as it fails a built-in one (:func:`needs_rounds`); it must return a CheckOutcome."""

    def call(params: Any, run: ChatResult) -> CheckOutcome:
        answer = (
            spec.function(params, run, usage) if spec.needs_usage else spec.function(params, run)
        )
        if not isinstance(answer, CheckOutcome):
            raise TypeError(
                f"check {spec.name!r} (registered by {spec.source or 'unknown'}) returned"
                f" {type(answer).__name__}, not a CheckOutcome"
            )
        return answer

    return needs_rounds(call)(expected, result)


def set_difference(name: str, expected: Sequence[str], actual: Sequence[str]) -> list[str]:
    """One ``name: missing …; unexpected …`` line when the two sets differ, else none."""
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
        [f"unexpected {', '.join(extra)}"] if extra else []
    )
    return [f"{name}: {'; '.join(parts)}"] if parts else []
