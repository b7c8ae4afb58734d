"""Evidence lines for failure reports: tables and excerpts a reviewer can read at a glance.

Helper of :mod:`pytest_diageval.harness.checks.evaluators`. Column widths count East Asian
wide characters as two cells, so tables that mix Chinese and ASCII still line up in a terminal.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from pytest_diageval.agents.results import ChatResult, RoundResult, ToolCallSummary
from pytest_diageval.core.contract.contracts import Claim, GatekeeperResult, ToolInvocation
from pytest_diageval.core.contract.scope_contract import OUT_OF_SCOPE_CALL, ScopeContract
from pytest_diageval.core.evidence.store import stable_json

__all__ = [
    "around",
    "claims_table",
    "decision_lines",
    "gatekeeper_lines",
    "invocation_table",
    "route_lines",
    "route_text",
    "row_values",
    "scope_line",
    "set_aside_lines",
    "shorten",
    "streamed_table",
    "table",
    "tool_call_lines",
    "width",
]

ELLIPSIS = "…"


# --------------------------------------------------------------------------- text


def _one_line(value: str) -> str:
    return " ".join(value.split())


def shorten(value: str, limit: int) -> str:
    """One line, at most ``limit`` characters (an ellipsis marks a cut)."""
    flat = _one_line(value)
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)] + ELLIPSIS


def around(value: str, start: int, end: int, radius: int = 20) -> str:
    """``value[start:end]`` in ``«»`` with up to ``radius`` characters of context each side."""
    before = value[max(start - radius, 0) : start]
    after = value[end : end + radius]
    head = ELLIPSIS if start > radius else ""
    tail = ELLIPSIS if end + radius < len(value) else ""
    return _one_line(f"{head}{before}«{value[start:end]}»{after}{tail}")


def width(value: str) -> int:
    """Terminal cells: wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in value)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as aligned, indented lines under a header line (the last column is not padded)."""
    return list(streamed_table(headers, lambda: iter(rows)))


def streamed_table(
    headers: Sequence[str], make_rows: Callable[[], Iterable[Sequence[str]]]
) -> Iterator[str]:
    """:func:`table`, one line at a time: ``make_rows`` is called twice (widths, then lines), so
    a table of thousands of rows never holds its cells or its lines all at once."""
    widths = [width(header) for header in headers]
    for row in make_rows():
        widths = [max(known, width(cell)) for known, cell in zip(widths, row, strict=True)]

    def render(cells: Sequence[str]) -> str:
        padded = [cell + " " * (widths[i] - width(cell)) for i, cell in enumerate(cells[:-1])]
        return "  " + " | ".join([*padded, cells[-1]]).rstrip()

    yield render(headers)
    for row in make_rows():
        yield render(row)


# --------------------------------------------------------------------------- pipeline


def route_lines(result: ChatResult) -> list[str]:
    composer = None if result.composer_output is None else result.composer_output.model_dump()
    lines = []
    for r in result.rounds:
        final = composer if r is result.rounds[-1] else None  # only the last round composes
        route = route_text(r.route.action, r.route.reason, final)
        lines.append(
            f"round {r.round}: {r.decision.derived_verdict} {r.decision.derived_score} -> {route}"
        )
    return lines


def route_text(action: str, reason: str, composer: Mapping[str, Any] | None) -> str:
    """A round's route, its rule and, for the final round (``composer``: the composer's record
    as a dict), what was really published: the executor's answer verbatim, an answer composed
    from the verified claims, or a template, and the claims it shows."""
    if not composer:
        return f"{action} ({reason})"
    return f"{action} ({reason}; {published_text(composer)})"


def published_text(composer: Mapping[str, Any]) -> str:
    """What the final answer is, from the composer's record (``claims_shown`` when recorded,
    else the claims it used): the used claims' cited evidence rendered by code, or a
    template around it (an audit from before issue 36 may say the executor's answer was
    published verbatim)."""
    shown = composer.get("claims_shown")
    claims = list(composer.get("claims_used") or []) if shown is None else list(shown)
    named = ", ".join(str(claim) for claim in claims)
    source, route = composer.get("source"), composer.get("route")
    withheld = int(composer.get("withheld") or 0)
    held = f"; {withheld} cited item{'s' if withheld != 1 else ''} withheld" if withheld else ""
    if source == "verbatim":
        backed = f"its statements are backed by {named}" if claims else "framing only"
        return f"the executor's user-facing answer, verbatim: {backed}"
    if source == "composed":
        not_published = "the executor's user-facing answer was not published"
        if not claims:
            return f"no verified evidence to show: {not_published}{held}"
        return f"the evidence cited by {named}, rendered by code: {not_published}{held}"
    shows = f"showing the evidence cited by {named}" if claims else "showing no claim"
    return f"the {route} template, {shows}{held}"


def decision_lines(last: RoundResult) -> list[str]:
    """Derived and model verdicts, overrides, the facts table and the gatekeeper summary."""
    decision = last.decision
    model = (
        f"{decision.model_verdict} {decision.model_score}"
        if decision.model_verdict is not None
        else f"none (verifier failure: {shorten(last.verifier_failure or 'no output', 120)})"
    )
    lines = [f"derived: {decision.derived_verdict} {decision.derived_score} | model: {model}"]
    lines += [
        f"override {o.rule}: {o.from_value} -> {o.to_value} ({_one_line(o.reason)})"
        for o in decision.overrides
    ]
    lines += set_aside_lines(last)
    rows = [
        [
            shorten(fact.fact, 48),
            "yes" if fact.is_critical else "no",
            fact.verification,
            ", ".join(f"{ref.trace_ref}{ref.source_invocation_ids}" for ref in fact.evidence_refs)
            or "-",
        ]
        for fact in decision.facts
    ]
    if rows:
        lines += ["facts checked:", *table(["fact", "critical", "verification", "refs"], rows)]
    else:
        lines.append("facts checked: none")
    rules = ", ".join(last.gatekeeper.failed_rules) or "none"
    lines.append(f"gatekeeper: severity {last.gatekeeper.severity}; failed rules: {rules}")
    return lines


def scope_line(scope: ScopeContract | None) -> str:
    """The question's scope in one line (an empty list: the question named none)."""
    if scope is None:
        return "scope: (not recorded)"

    def listed(values: Sequence[str]) -> str:
        return ", ".join(values) or "any"

    narrow = f"narrow ({', '.join(scope.narrow_markers)})" if scope.narrow else "not narrow"
    services = listed(scope.services) + (" (the alerts' own)" if scope.services_from_alerts else "")
    return (
        f"scope: services {services}; alerts {listed(scope.alerts)};"
        f" topics {listed(scope.topics)}; excluded {', '.join(scope.excluded) or 'none'};"
        f" {narrow}; claim types {listed(scope.claim_types)}"
    )


def set_aside_lines(round_result: RoundResult) -> list[str]:
    """One line per claim the scope set aside (its id, its rules and why), per plan step
    withheld from the executor and per evidence call refused."""
    lines = [
        f"set aside {claim.claim_id} ({', '.join(claim.rules)}): {_one_line(claim.reason)}"
        for claim in round_result.set_aside
    ]
    lines += [
        f"withheld plan step ({item.rule}): {_one_line(item.step)}: {_one_line(item.reason)}"
        for item in round_result.plan_set_aside
    ]
    lines += [
        f"refused call {call.name}: {_one_line(call.error or '')}"
        for call in round_result.tool_calls
        if (call.error or "").startswith(OUT_OF_SCOPE_CALL)
    ]
    return lines


_REFUSED = re.compile(re.escape(OUT_OF_SCOPE_CALL) + r": (\w+)=(.+?) is outside")


def refused_calls(round_result: RoundResult) -> list[str]:
    """The round's calls the scope refused, as ``tool argument=value``."""
    found = []
    for call in round_result.tool_calls:
        match = _REFUSED.match(call.error or "")
        if match is not None:
            found.append(f"{call.name} {match[1]}={match[2]}")
    return list(dict.fromkeys(found))


def gatekeeper_lines(gate: GatekeeperResult) -> list[str]:
    """Failed binding rows (claim, path, rule, message), else the errors; then warnings.

    Reasons are printed whole (on one line): they are what a reviewer judges the run by.
    """
    failed = [b for b in gate.checked_bindings if b.status == "fail"]
    lines: list[str] = []
    if failed:
        rows = [
            [
                b.claim_id or b.action_id or "-",
                b.raw_path or "-",
                b.rule or "-",
                _one_line(b.message or ""),  # a reason cut short cannot be judged
            ]
            for b in failed
        ]
        lines += ["failed bindings:", *table(["claim", "raw_path", "rule", "message"], rows)]
    else:
        lines += [f"error {e.rule}: {_one_line(e.message)}" for e in gate.errors]
    lines += [f"warning {w.rule}: {_one_line(w.message)}" for w in gate.warnings]
    lines.append(f"checked bindings: {len(gate.checked_bindings)} ({len(failed)} failed)")
    return lines


def claims_table(claims: Sequence[Claim]) -> list[str]:
    rows = [
        [
            c.claim_id,
            c.claim_type,
            c.support_level,
            str(len(c.evidence_bindings)),
            shorten(c.claim_text, 60),
        ]
        for c in claims
    ]
    return table(["claim", "type", "support", "bindings", "text"], rows)


def row_values(row: ToolInvocation) -> dict[str, Any]:
    """The values a ``no_evidence`` expectation compares, from one invocation row."""
    details = row.retrieval_details
    return {
        "evidence_status": None if details is None else details.evidence_status,
        "success": row.success,
        "total": None if details is None else details.total,
    }


def _cell(value: Any) -> str:
    return "-" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def invocation_table(rows: Sequence[ToolInvocation]) -> list[str]:
    cells = [
        [
            f"#{row.id}",
            str(row.round),
            *(_cell(value) for value in row_values(row).values()),
            shorten(stable_json(row.input_params), 60),
        ]
        for row in rows
    ]
    return table(["row", "round", "evidence_status", "success", "total", "input"], cells)


def tool_call_lines(calls: Sequence[tuple[int, ToolCallSummary]]) -> list[str]:
    lines = []
    for round_number, call in calls:
        arguments = (
            call.arguments if isinstance(call.arguments, str) else stable_json(call.arguments)
        )
        target = f"invocation #{call.invocation_id}" if call.invocation_id else "no row"
        error = f" (error: {shorten(call.error, 80)})" if call.error else ""
        lines.append(
            f"round {round_number}: {call.name} {shorten(arguments, 80)} -> {target}{error}"
        )
    return lines
