"""Expectation checks: one small evaluator per ``expect`` key, each judging a :class:`ChatResult`.

Every evaluator returns a :class:`CheckOutcome`: pass or fail, expected against actual, and the
compact evidence a reviewer needs to judge the failure (tables, not JSON walls). Shared rules:

* a session with ``status: error`` fails every check with the error message;
* no check passes vacuously: one that finds nothing to look at fails and says so;
* keywords match case-insensitively.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from pytest_diageval.agents.grader import GraderRun
from pytest_diageval.agents.results import ChatResult, RoundResult
from pytest_diageval.agents.usage import TokenUsage
from pytest_diageval.core.contract.contracts import Verdict
from pytest_diageval.harness.checks import evidence_lines as ev
from pytest_diageval.harness.checks.outcome import (
    Check,
    CheckContext,
    CheckOutcome,
    ResultCheck,
    describe_expected,
    needs_rounds,
    run_registered,
    set_difference,
)
from pytest_diageval.harness.checks.published_answer import check_composer
from pytest_diageval.harness.checks.rubric import check_rubric
from pytest_diageval.harness.checks.set_aside import check_set_aside
from pytest_diageval.harness.checks.tokens import check_tokens
from pytest_diageval.harness.checks.tool_rows import check_no_evidence, check_tool_calls
from pytest_diageval.harness.format.registry import CheckRegistry, builtin_params
from pytest_diageval.harness.format.scenario import (
    EXPECT_KEYS,
    ClaimsExpectation,
    Expect,
    GatekeeperExpectation,
    ScoreRange,
    VerdictExpectation,
)

__all__ = [
    "BUILTIN_CHECKS",
    "CHECKS",
    "CheckOutcome",
    "check_answer",
    "check_answer_forbidden_keywords",
    "check_claims",
    "check_composer",
    "check_forbidden_keywords",
    "check_gatekeeper",
    "check_groundedness",
    "check_no_evidence",
    "check_parse_status",
    "check_required_keywords",
    "check_rounds",
    "check_rubric",
    "check_tokens",
    "check_tool_calls",
    "check_verdict",
    "describe_expected",
    "register_builtin_checks",
    "run_check",
    "run_checks",
]


def _last(result: ChatResult) -> RoundResult:
    return result.rounds[-1]


# --------------------------------------------------------------------------- verdict, score


def _decision_details(result: ChatResult) -> list[str]:
    """Every round's route, then the last round's decision, facts and gatekeeper."""
    return [*ev.route_lines(result), *ev.decision_lines(_last(result))]


@needs_rounds
def check_verdict(expected: VerdictExpectation, result: ChatResult) -> CheckOutcome:
    """The final derived verdict is the expected one (or one of the expected list)."""
    allowed: list[Verdict] = expected if isinstance(expected, list) else [expected]
    want = allowed[0] if len(allowed) == 1 else f"one of {', '.join(allowed)}"
    return CheckOutcome(
        result.final_verdict in allowed,
        want,
        f"{result.final_verdict} (score {result.final_score})",
        _decision_details(result),
        got=str(result.final_verdict),
        reason=_verdict_reason(result),
    )


def _verdict_reason(result: ChatResult) -> str:
    """What decided the verdict: the gatekeeper's rules, else the code's overrides, else the
    score the verifier's facts gave."""
    last = _last(result)
    gate = last.gatekeeper
    if gate.severity != "none":
        return f"gatekeeper {gate.severity}: {', '.join(gate.failed_rules) or 'no rule named'}"
    overrides = [o.rule for o in last.decision.overrides]
    score = f"score {result.final_score}"
    return f"{score}; overrides: {', '.join(overrides)}" if overrides else score


@needs_rounds
def check_groundedness(expected: ScoreRange, result: ChatResult) -> CheckOutcome:
    """The final derived score lies in the inclusive range."""
    score = result.final_score
    low_ok = expected.min is None or (score is not None and score >= expected.min)
    high_ok = expected.max is None or (score is not None and score <= expected.max)
    bounds = [f"{expected.min} <=" if expected.min is not None else "", "score"]
    bounds.append(f"<= {expected.max}" if expected.max is not None else "")
    passed = score is not None and low_ok and high_ok
    return CheckOutcome(
        passed, " ".join(b for b in bounds if b), f"score {score}", _decision_details(result)
    )


@needs_rounds
def check_rounds(expected: int, result: ChatResult) -> CheckOutcome:
    """The number of verifier rounds run."""
    actual = len(result.rounds)
    return CheckOutcome(actual == expected, str(expected), str(actual), ev.route_lines(result))


@needs_rounds
def check_answer(expected: str, result: ChatResult) -> CheckOutcome:
    """The kind of final answer: direct, disclaimer or degraded."""
    details = [*ev.route_lines(result), f"final answer: {ev.shorten(result.final_answer, 200)}"]
    actual = str(result.answer_kind)
    return CheckOutcome(actual == expected, expected, actual, details)


@needs_rounds
def check_parse_status(expected: str, result: ChatResult) -> CheckOutcome:
    """The last round's executor output parse status."""
    details = [
        f"round {r.round}: {r.parse_status.status} ({ev.shorten(r.parse_status.detail, 120)})"
        for r in result.rounds
    ]
    details.append(f"executor output: {ev.shorten(_last(result).executor_final_answer, 200)}")
    actual = _last(result).parse_status.status
    return CheckOutcome(actual == expected, expected, actual, details)


# --------------------------------------------------------------------------- gatekeeper


@needs_rounds
def check_gatekeeper(expected: GatekeeperExpectation, result: ChatResult) -> CheckOutcome:
    """The last round's gatekeeper: exact severity and rules, or rules that must be among them."""
    gate = _last(result).gatekeeper
    warnings = [w.rule for w in gate.warnings]
    mismatches: list[str] = []
    if expected.severity is not None and gate.severity != expected.severity:
        mismatches.append(f"severity: expected {expected.severity}, got {gate.severity}")
    if expected.failed_rules is not None:
        mismatches += set_difference("failed_rules", expected.failed_rules, gate.failed_rules)
    for name, wanted, present in (
        ("failed_rules_include", expected.failed_rules_include, gate.failed_rules),
        ("warnings_include", expected.warnings_include, warnings),
    ):
        absent = [rule for rule in wanted if rule not in present]
        if absent:
            mismatches.append(f"{name}: not present: {', '.join(absent)}")
    details = [*mismatches, *ev.gatekeeper_lines(gate)]
    actual = (
        f"severity={gate.severity}, failed_rules=[{', '.join(gate.failed_rules)}],"
        f" warnings=[{', '.join(warnings)}]"
    )
    return CheckOutcome(not mismatches, describe_expected(expected), actual, details)


# --------------------------------------------------------------------------- keywords


def _claim_texts(result: ChatResult) -> list[tuple[str, str]]:
    return [
        (f"claim {claim.claim_id} (round {r.round})", claim.claim_text)
        for r in result.rounds
        if r.executor_contract is not None
        for claim in r.executor_contract.claims
    ]


def _find(keyword: str, haystack: str) -> list[re.Match[str]]:
    return list(re.finditer(re.escape(keyword), haystack, flags=re.IGNORECASE))


def _keyword_hits(expected: list[str], sources: list[tuple[str, str]]) -> tuple[list[str], str]:
    """Each occurrence, with where it is and the text around it; and the keywords found."""
    hits = [
        f"{keyword!r} in {where}: {ev.around(haystack, match.start(), match.end())}"
        for keyword in expected
        for where, haystack in sources
        for match in _find(keyword, haystack)
    ]
    found = sorted({keyword for keyword in expected for _, h in sources if _find(keyword, h)})
    return hits, ", ".join(found)


@needs_rounds
def check_forbidden_keywords(expected: list[str], result: ChatResult) -> CheckOutcome:
    """No keyword occurs in any claim_text of any round, nor in the final answer."""
    claims = _claim_texts(result)
    sources = [*claims, ("final answer", result.final_answer)] if result.final_answer else claims
    wanted = f"none of {describe_expected(expected)}"
    if not sources:
        nothing = "nothing to scan: no claim in any round and an empty final answer"
        return CheckOutcome(False, wanted, nothing)
    hits, found = _keyword_hits(expected, sources)
    scanned = (
        f"scanned {len(claims)} claim(s) over {len(result.rounds)} round(s)"
        f" and the final answer ({len(result.final_answer)} chars)"
    )
    return CheckOutcome(
        not hits, wanted, f"found {found}" if found else "none found", [*hits, scanned]
    )


@needs_rounds
def check_answer_forbidden_keywords(expected: list[str], result: ChatResult) -> CheckOutcome:
    """No keyword occurs in the final answer (the model's claims may say what they like)."""
    answer = result.final_answer
    hits, found = _keyword_hits(expected, [("final answer", answer)])
    actual = f"found {found}" if found else f"none found in {len(answer)} chars"
    return CheckOutcome(
        bool(answer) and not hits,
        f"none of {describe_expected(expected)} in the final answer",
        actual if answer else "the final answer is empty",
        hits,
    )


@needs_rounds
def check_required_keywords(expected: list[str], result: ChatResult) -> CheckOutcome:
    """Every keyword occurs in the final answer."""
    answer = result.final_answer
    details: list[str] = []
    missing: list[str] = []
    for keyword in expected:
        matches = _find(keyword, answer)
        if matches:
            details.append(
                f"{keyword!r} found: {ev.around(answer, matches[0].start(), matches[0].end())}"
            )
        else:
            missing.append(keyword)
    details.append(f"final answer: {ev.shorten(answer, 300) or '(empty)'}")
    actual = f"missing {', '.join(missing)}" if missing else "all present"
    return CheckOutcome(not missing, f"all of {describe_expected(expected)}", actual, details)


# --------------------------------------------------------------------------- claims


@needs_rounds
def check_claims(expected: ClaimsExpectation, result: ChatResult) -> CheckOutcome:
    """The last round's contract: claim count within bounds, every claim of an allowed type."""
    last = _last(result)
    want = describe_expected(expected)
    if last.executor_contract is None:
        status = last.parse_status
        actual = f"no executor contract in round {last.round} (parse status {status.status})"
        return CheckOutcome(
            False, want, actual, [f"parse detail: {ev.shorten(status.detail, 200)}"]
        )
    claims = last.executor_contract.claims
    problems: list[str] = []
    if expected.max is not None and len(claims) > expected.max:
        problems.append(f"{len(claims)} claims > max {expected.max}")
    if expected.min is not None and len(claims) < expected.min:
        problems.append(f"{len(claims)} claims < min {expected.min}")
    if expected.types is not None:
        wrong = [
            f"{c.claim_id} is {c.claim_type}" for c in claims if c.claim_type not in expected.types
        ]
        problems += [f"type not allowed: {', '.join(wrong)}"] if wrong else []
        if not claims and expected.min != 0:
            problems.append("no claim to check the types of (add min: 0 to allow none)")
    details = [*problems, *ev.claims_table(claims)]
    types = ", ".join(sorted({c.claim_type for c in claims})) or "-"
    actual = f"{len(claims)} claim(s) in round {last.round}, types: {types}"
    return CheckOutcome(not problems, want, actual, details)


# --------------------------------------------------------------------------- registry


def _on_result(check: ResultCheck[Any]) -> Check[Any]:
    """An evaluator of the result alone, as a check of the context."""

    def of_context(params: Any, ctx: CheckContext[Any]) -> CheckOutcome:
        return check(params, ctx.result)

    return functools.wraps(check)(of_context)


@functools.wraps(check_tokens)
def _tokens(params: Any, ctx: CheckContext[Any]) -> CheckOutcome:
    return check_tokens(params, ctx.result, ctx.usage)


@functools.wraps(check_rubric)
def _rubric(params: Any, ctx: CheckContext[Any]) -> CheckOutcome:
    return check_rubric(params, ctx.result, ctx.grade)


CHECKS: dict[str, Check[Any]] = {
    "verdict": _on_result(check_verdict),
    "groundedness": _on_result(check_groundedness),
    "rounds": _on_result(check_rounds),
    "answer": _on_result(check_answer),
    "parse_status": _on_result(check_parse_status),
    "gatekeeper": _on_result(check_gatekeeper),
    "forbidden_keywords": _on_result(check_forbidden_keywords),
    "required_keywords": _on_result(check_required_keywords),
    "answer_forbidden_keywords": _on_result(check_answer_forbidden_keywords),
    "claims": _on_result(check_claims),
    "no_evidence": _on_result(check_no_evidence),
    "tool_calls": _on_result(check_tool_calls),
    "composer": _on_result(check_composer),
    "tokens": _tokens,  # the run's tokens, which the result does not hold
    "rubric": _rubric,  # the grader's score, asked after the run
    "set_aside": _on_result(check_set_aside),
}
# Every expect key has exactly one evaluator; this fails at import if the two drift apart.
assert tuple(CHECKS) == EXPECT_KEYS, "CHECKS must list exactly the Expect keys, in order"


def register_builtin_checks(registry: CheckRegistry) -> None:
    """The built-in keys, registered as a project's own (parameters: ``Expect``'s fields)."""
    for name, check in CHECKS.items():
        registry.register(name, builtin_params(name), check)


BUILTIN_CHECKS = CheckRegistry()  # the built-in keys alone: a run without a registry
register_builtin_checks(BUILTIN_CHECKS)


def run_check(
    key: str,
    expected: Any,
    result: ChatResult,
    usage: TokenUsage | None = None,
    checks: CheckRegistry | None = None,
    grade: GraderRun | None = None,
) -> CheckOutcome:
    """Run the check of one ``expect`` key as ``check(expected, ctx)`` (``usage``: the run's
    tokens; ``checks``: the run's registry, default the built-in keys; ``grade``: the
    grader's answer, for a scenario that sets ``rubric``)."""
    registry = checks if checks is not None else BUILTIN_CHECKS
    if key not in registry:
        raise KeyError(f"no check for expect key {key!r}; known: {', '.join(registry.names)}")
    spec = registry[key]
    ctx = CheckContext(key, expected, result, usage if usage is not None else TokenUsage(), grade)
    if not spec.builtin:
        return run_registered(spec, ctx)
    return spec.function(expected, ctx)  # type: ignore[no-any-return]


def run_checks(
    expect: Expect,
    result: ChatResult,
    usage: TokenUsage | None = None,
    checks: CheckRegistry | None = None,
    grade: GraderRun | None = None,
) -> dict[str, CheckOutcome]:
    """Every check the scenario sets, in :data:`EXPECT_KEYS` order, then its registered keys."""
    return {
        key: run_check(key, expect.value_of(key), result, usage, checks, grade)
        for key in expect.present_keys()
    }
