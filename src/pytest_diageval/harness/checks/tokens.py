"""The ``tokens`` expectation: a scenario's token budget, judged on the run's usage."""

from __future__ import annotations

from pytest_diageval.agents.results import ChatResult
from pytest_diageval.agents.usage import TokenUsage
from pytest_diageval.harness.checks.outcome import CheckOutcome
from pytest_diageval.harness.format.scenario import TokensExpectation

__all__ = ["check_tokens", "usage_lines"]


def check_tokens(
    expected: TokensExpectation, result: ChatResult, usage: TokenUsage | None = None
) -> CheckOutcome:
    """Prompt plus completion tokens over every request stay within ``max``."""
    want = f"at most {expected.max} tokens"
    if result.status == "error":
        return CheckOutcome(
            False,
            want,
            f"session error: {result.error or 'no message'}",
            [f"rounds completed before the error: {len(result.rounds)}"],
        )
    if usage is None or not usage.stages:
        return CheckOutcome(False, want, "no token usage was reported by any model answer")
    total = usage.total
    per_stage = ", ".join(f"{stage} {u.total_tokens}" for stage, u in usage.ordered().items())
    counted = f" {usage.source}" if usage.source else ""
    return CheckOutcome(
        total.total_tokens <= expected.max,
        want,
        f"{total.total_tokens} tokens{counted}",
        usage_lines(usage),
        reason=per_stage,
    )


def usage_lines(usage: TokenUsage) -> list[str]:
    """One line per stage and the total: requests, prompt and completion tokens."""
    rows = [*usage.ordered().items(), ("total", usage.total)]
    lines = [
        f"{stage}: {u.prompt_tokens} prompt + {u.completion_tokens} completion"
        f" = {u.total_tokens} tokens in {u.requests} request(s)"
        for stage, u in rows
    ]
    return [*lines, f"tokens {usage.source}"] if usage.source else lines
