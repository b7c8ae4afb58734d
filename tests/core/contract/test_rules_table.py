"""The rules table is what the code reads: grades, names in scenarios, and docs/rules.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_diageval.core.contract import rules
from pytest_diageval.core.contract.contracts import Claim, EvidenceBinding, GatekeeperResult
from pytest_diageval.core.contract.rules import RULES, Rule, rule, rules_markdown, severity
from pytest_diageval.core.judge.citation import Cited
from pytest_diageval.core.judge.claim_support import claim_ceilings
from pytest_diageval.core.judge.gatekeeper import parse_failure_result
from pytest_diageval.core.judge.verdict import fallback_decision
from pytest_diageval.harness.format.rule_names import gatekeeper_rule_names
from support.source_scan import string_constants

ROOT = Path(__file__).resolve().parents[3]
SRC = ROOT / "src" / "pytest_diageval"
_RULE_NAME = re.compile(
    r"(evidence|executor|claim|point|fact|verdict|verifier|gatekeeper|scope|trace)\.[a-z_]+"
)


def test_docs_rules_md_is_what_the_table_gives() -> None:
    written = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    regenerate = "python -m pytest_diageval.core.contract.rules > docs/rules.md"
    assert written == rules_markdown(), f"docs/rules.md is stale: run `{regenerate}`"


def test_every_rule_name_the_code_writes_is_a_row_and_every_row_is_written() -> None:
    written: set[str] = set()
    for path in SRC.rglob("*.py"):
        if path.name == "rules.py" and path.parent.name == "contract":
            continue
        written |= {s for _, s in string_constants(path) if _RULE_NAME.fullmatch(s)}
    table = {row.name for row in RULES}
    assert written - table == set(), "rule names reported by the code but not in the table"
    assert table - written == set(), "rows of the table no code reports"


def test_names_are_unique_and_grades_fit_their_family() -> None:
    names = [row.name for row in RULES]
    assert len(names) == len(set(names))
    allowed = {
        "gatekeeper": {"reject", "low_confid"},
        "claim": {"no_evidence", "indirect_support", None},
        "fact": {"no_evidence", "indirect_support", None},
        "verdict": {"REJECT", "LOW_CONFID", None},
        "scope": {None, "LOW_CONFID"},
        "executor": {None},
        "trace": {None},
    }
    for row in RULES:
        assert row.grade in allowed[row.family], row


def test_seed_quotes_are_lines_of_the_seeds() -> None:
    seeds = ROOT.parent / "shared" / "seeds"
    if not seeds.is_dir():
        pytest.skip("the design seeds are not next to this checkout")
    text = {p.name[:3]: p.read_text(encoding="utf-8") for p in seeds.glob("*.txt")}
    for row in RULES:
        if row.seed is not None:
            number, quote = row.seed.split(": ", 1)
            for part in quote.split("。"):
                assert part.strip() in text[number], (row.name, part)


def test_scenario_files_may_name_exactly_the_gatekeeper_rows() -> None:
    assert gatekeeper_rule_names() == {r.name for r in RULES if r.family == "gatekeeper"}
    assert "evidence.excerpt_missing" in gatekeeper_rule_names()


def test_an_unknown_rule_or_a_grade_of_another_family_is_refused() -> None:
    with pytest.raises(KeyError, match=r"'evidence\.nope' is not a rule"):
        rule("evidence.nope")
    with pytest.raises(ValueError, match="has no gatekeeper grade"):
        severity("claim.no_bindings")


# ------------------------------------------------------------------ the code reads the grades


def _regraded(monkeypatch: pytest.MonkeyPatch, name: str, grade: str) -> None:
    table = tuple(
        Rule(r.name, r.family, grade, r.stops, r.seed) if r.name == name else r for r in RULES
    )
    monkeypatch.setattr(rules, "RULES", table)


def test_a_gatekeeper_row_takes_its_severity_from_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    binding = EvidenceBinding(tool_name="query_logs", source_invocation_id=1, raw_path="$.logs[0]")
    cited = Cited("claim c1, binding 1", "c1", None, binding)
    assert cited.row(invocation_id=1, rule="evidence.excerpt_missing").grade == "low_confid"
    assert parse_failure_result("bad json").severity == "low_confid"

    _regraded(monkeypatch, "evidence.excerpt_missing", "reject")
    _regraded_parse = tuple(
        Rule(r.name, r.family, "reject", r.stops, r.seed)
        if r.name == "executor.parse_failed"
        else r
        for r in rules.RULES
    )
    monkeypatch.setattr(rules, "RULES", _regraded_parse)

    row = cited.row(invocation_id=1, rule="evidence.excerpt_missing")
    assert (row.status, row.grade) == ("fail", "reject")
    assert parse_failure_result("bad json").severity == "reject"
    assert cited.row(invocation_id=1).grade == "none"


def test_a_claim_ceiling_comes_from_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    claim = Claim(
        claim_id="c1",
        claim_type="observation",
        claim_text="order-service 有告警",
        support_level="direct",
        evidence_bindings=[],
    )
    empty = GatekeeperResult(status="pass", severity="none")
    before = claim_ceilings([claim], empty, [])["c1"]
    assert (before.rule, before.ceiling) == ("claim.no_bindings", "no_evidence")

    _regraded(monkeypatch, "claim.no_bindings", "indirect_support")

    after = claim_ceilings([claim], empty, [])["c1"]
    assert (after.rule, after.ceiling) == ("claim.no_bindings", "indirect_support")


def test_a_verdict_override_sets_the_verdict_of_its_row(monkeypatch: pytest.MonkeyPatch) -> None:
    before = fallback_decision("the verifier returned nothing", None)
    assert (before.derived_verdict, before.overrides[0].to_value) == ("LOW_CONFID", "LOW_CONFID")

    _regraded(monkeypatch, "verifier.fallback", "REJECT")

    after = fallback_decision("the verifier returned nothing", None)
    assert (after.derived_verdict, after.overrides[0].to_value) == ("REJECT", "REJECT")
