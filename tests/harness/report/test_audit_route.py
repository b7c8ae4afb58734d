"""The audit trail's route line says what was really published (issue 28): since issue 36 a
PASS shows the evidence its verified claims cite, rendered by code, never "the executor's
user-facing answer"."""

from __future__ import annotations

import pytest

from pytest_diageval.harness.checks.evidence_lines import published_text, route_lines
from pytest_diageval.harness.report.reporter import audit_trail
from support.reports import SHIPPED
from support.scenario_runs import MATRIX_DIR, run_file

RULE = "PASS publishes the evidence the verified claims cite"


def _route(path_name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[str]]:
    result = run_file(SHIPPED / path_name, monkeypatch).result
    (line,) = [line for line in audit_trail(result).splitlines() if "route:" in line]
    return line.strip(), route_lines(result)


def test_a_composed_pass_says_it_was_composed_from_the_verified_claims(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    line, rounds = _route(
        str(MATRIX_DIR.relative_to(SHIPPED) / "02-highmemory-positive.yaml"), monkeypatch
    )

    assert line == (
        f"route: direct ({RULE}; the evidence cited by claim-1, rendered by code: the executor's"
        " user-facing answer was not published)"
    )
    assert "outputs the executor's user-facing answer" not in line
    assert rounds == [f"round 1: PASS 1.0 -> {line.removeprefix('route: ')}"]


def test_an_audit_from_before_issue_36_still_says_the_executor_answer_was_published() -> None:
    old = {"source": "verbatim", "route": "direct", "claims_used": ["claim-1"]}
    assert published_text(old) == (
        "the executor's user-facing answer, verbatim: its statements are backed by claim-1"
    )


def test_a_template_says_which_claims_it_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    shown, _ = _route("verifier/reject-hides-raw-answer.yaml", monkeypatch)
    none, _ = _route("matrix/06-gatekeeper-reject.yaml", monkeypatch)

    assert shown.endswith("; the degraded template, showing the evidence cited by claim-1)")
    assert none.endswith("; the degraded template, showing no claim)")


def test_a_retried_round_keeps_its_own_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_file(SHIPPED / "routing" / "low-confid-retry-then-disclaimer.yaml", monkeypatch)
    first, last = route_lines(result.result)

    assert first.endswith("-> retry (" + result.result.rounds[0].route.reason + ")")
    assert last.endswith("; the disclaimer template, showing the evidence cited by claim-1)")
