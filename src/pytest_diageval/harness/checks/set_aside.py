"""The ``set_aside`` expectation: which claims the question's scope set aside, and by which rules.

``set_aside: {claims: [claim-2], rules: [scope.out_of_scope]}``. Both lists are exact
sets over the final round (``claims: []`` says nothing was set aside); rules are the three
public names of :mod:`pytest_diageval.core.scope.claims`. ``calls`` are the final round's
evidence calls the scope refused (``query_logs service=payment-service``) and ``plan_steps``
the plan steps withheld from its executor, also exact sets.
"""

from __future__ import annotations

from pytest_diageval.agents.results import ChatResult
from pytest_diageval.harness.checks import evidence_lines as ev
from pytest_diageval.harness.checks.outcome import (
    CheckOutcome,
    describe_expected,
    needs_rounds,
    set_difference,
)
from pytest_diageval.harness.format.scenario import SetAsideExpectation

__all__ = ["check_set_aside"]


@needs_rounds
def check_set_aside(expected: SetAsideExpectation, result: ChatResult) -> CheckOutcome:
    """The final round's set-aside claims and their rules, as exact sets."""
    last = result.rounds[-1]
    ids = [claim.claim_id for claim in last.set_aside]
    rules = list(dict.fromkeys(rule for claim in last.set_aside for rule in claim.rules))
    problems: list[str] = []
    if expected.claims is not None:
        problems += set_difference("claims", expected.claims, ids)
    if expected.rules is not None:
        problems += set_difference("rules", list(expected.rules), rules)
    calls = ev.refused_calls(last)
    if expected.calls is not None:
        problems += set_difference("calls", expected.calls, calls)
    steps = [item.step for item in last.plan_set_aside]
    if expected.plan_steps is not None:
        problems += set_difference("plan_steps", expected.plan_steps, steps)
    actual = (
        f"round {last.round} set aside {ids or 'nothing'}"
        + (f" (rules: {', '.join(rules)})" if rules else "")
        + (f"; refused calls: {', '.join(calls)}" if calls else "")
        + (f"; withheld plan steps: {len(steps)}" if steps else "")
    )
    details = [*problems, ev.scope_line(result.scope), *ev.set_aside_lines(last)]
    return CheckOutcome(not problems, describe_expected(expected), actual, details)
