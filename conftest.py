"""This project's own ``expect`` keys (README, "Checks of your own").

``max_answer_chars: N`` holds when the final answer a user reads has at most N characters: an
on-call engineer reads it on a phone, and a template or a composer change that doubles it
should fail a scenario, not pass unseen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_diageval import CheckRegistry


def pytest_diageval_register_checks(registry: CheckRegistry) -> None:
    # Imported here, not above: a run that collects no scenario never loads them.
    from typing import Annotated

    from pydantic import Field

    from pytest_diageval import CheckContext, CheckOutcome

    @registry.check(
        "max_answer_chars",
        Annotated[int, Field(gt=0)],
        description="The final answer has at most this many characters.",
    )
    def max_answer_chars(limit: int, ctx: CheckContext[int]) -> CheckOutcome:
        answer = ctx.result.final_answer
        return CheckOutcome(
            passed=len(answer) <= limit,
            expected=f"at most {limit} characters",
            actual=f"{len(answer)} characters",
            details=[f"final answer: {answer[:300]}"],
        )
