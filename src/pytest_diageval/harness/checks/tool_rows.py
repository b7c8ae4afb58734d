"""The tool-row expectations: ``no_evidence`` (the no-evidence semantics of some call of a
tool) and ``tool_calls`` (which tools the executor called, and how often)."""

from __future__ import annotations

from pytest_diageval.agents.results import ChatResult
from pytest_diageval.core.contract.contracts import ToolInvocation
from pytest_diageval.harness.checks import evidence_lines as ev
from pytest_diageval.harness.checks.outcome import CheckOutcome, describe_expected, needs_rounds
from pytest_diageval.harness.format.scenario import NoEvidenceRow, ToolCallsExpectation

__all__ = ["check_no_evidence", "check_tool_calls"]


def _row_matches(expected: NoEvidenceRow, row: ToolInvocation) -> bool:
    values = ev.row_values(row)
    wanted = {name: getattr(expected, name) for name in ("evidence_status", "success", "total")}
    return all(value is None or values[name] == value for name, value in wanted.items())


@needs_rounds
def check_no_evidence(expected: list[NoEvidenceRow], result: ChatResult) -> CheckOutcome:
    """For each expected row, some invocation of that tool has all the given values."""
    details: list[str] = []
    unmatched: list[str] = []
    for wanted in expected:
        rows = [row for row in result.invocations if row.tool_name == wanted.tool]
        matched = [row.id for row in rows if _row_matches(wanted, row)]
        label = describe_expected(wanted)
        if matched:
            details.append(f"{label}: matched by invocation {', '.join(f'#{i}' for i in matched)}")
            continue
        unmatched.append(label)
        if not rows:
            called = sorted({row.tool_name for row in result.invocations}) or ["none"]
            details.append(
                f"{label}: no {wanted.tool} invocation (tools called: {', '.join(called)})"
            )
            continue
        details.append(f"{label}: no matching row among:")
        details += ev.invocation_table(rows)
    actual = f"no matching row for {'; '.join(unmatched)}" if unmatched else "every row matched"
    return CheckOutcome(not unmatched, describe_expected(expected), actual, details)


@needs_rounds
def check_tool_calls(expected: ToolCallsExpectation, result: ChatResult) -> CheckOutcome:
    """The executor's tool calls over all rounds, by name: included, excluded, how many."""
    calls = [(r.round, call) for r in result.rounds for call in r.tool_calls]
    names = [call.name for _, call in calls]
    problems = [f"never called: {name}" for name in expected.include if name not in names]
    problems += [f"called but excluded: {name}" for name in expected.exclude if name in names]
    if expected.max is not None and len(calls) > expected.max:
        problems.append(f"{len(calls)} calls > max {expected.max}")
    if expected.min is not None and len(calls) < expected.min:
        problems.append(f"{len(calls)} calls < min {expected.min}")
    listing = ev.tool_call_lines(calls)
    actual = f"{len(calls)} call(s): {', '.join(names) or 'none'}"
    return CheckOutcome(not problems, describe_expected(expected), actual, [*problems, *listing])
