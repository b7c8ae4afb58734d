"""This project's own ``expect`` keys (README, "Checks of your own").

``max_answer_chars: N`` holds when the final answer a user reads has at most N characters: an
on-call engineer reads it on a phone, and a template or a composer change that doubles it
should fail a scenario, not pass unseen.
"""

from __future__ import annotations

from typing import Any


def pytest_diageval_register_checks(registry: Any) -> None:
    from typing import Annotated

    from pydantic import Field

    from pytest_diageval.harness.checks.outcome import CheckOutcome

    @registry.check(
        "max_answer_chars",
        Annotated[int, Field(gt=0)],
        description="The final answer has at most this many characters.",
    )
    def max_answer_chars(limit: int, result: Any) -> CheckOutcome:
        length = len(result.final_answer)
        return CheckOutcome(
            passed=length <= limit,
            expected=f"at most {limit} characters",
            actual=f"{length} characters",
            details=[f"final answer: {result.final_answer[:300]}"],
        )
