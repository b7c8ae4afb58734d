"""The mutation summary (harness/mutation/mutation_summary.py): counts, tables and JSON."""

from __future__ import annotations

from typing import Any

from pytest_diageval.harness.mutation.mutation_summary import MutationSummary


def payload(
    scenario: str, name: str, kind: str, outcome: str, verdict: str | None
) -> dict[str, Any]:
    return {
        "scenario": scenario,
        "nodeid": f"s/{scenario}.yaml::{scenario}::mutant[{name}]",
        "name": name,
        "kind": kind,
        "outcome": outcome,
        "verdict": verdict,
        "change": f"change of {name}",
    }


def summary() -> MutationSummary:
    found = MutationSummary()
    for item in (
        payload("b", "unbound-claim-1-all", "unbound", "survived", "PASS"),
        payload("a", "digit-first-claim-1-0", "digit-first", "killed", "REJECT"),
        payload("a", "digit-last-claim-1-0", "digit-last", "equivalent", None),
        payload("a", "unbound-claim-1-all", "unbound", "killed", "LOW_CONFID"),
        payload("a", "digit-first-claim-2-0", "digit-first", "error", None),
    ):
        found.add(item)
    return found


def test_rows_per_scenario_and_kind_in_kind_order() -> None:
    assert summary().table_lines() == [
        "  scenario | kind        | tried | killed | survived | equivalent | error",
        "  a        | digit-first | 2     | 1      | 0        | 0          | 1",
        "  a        | digit-last  | 0     | 0      | 0        | 1          | 0",
        "  a        | unbound     | 1     | 1      | 0        | 0          | 0",
        "  b        | unbound     | 1     | 0      | 1        | 0          | 0",
    ]


def test_totals_per_kind_and_survivors() -> None:
    found = summary()
    assert found.kind_lines()[-1] == "  total       | 4     | 2      | 1        | 1          | 1"
    assert found.survivor_lines() == [
        "  s/b.yaml::b::mutant[unbound-claim-1-all]: PASS — change of unbound-claim-1-all"
    ]


def test_json_holds_totals_by_kind_by_scenario_and_every_mutant() -> None:
    report = summary().as_json()
    assert report["totals"] == {"tried": 4, "killed": 2, "survived": 1, "equivalent": 1, "error": 1}
    assert report["by_scenario"]["b"] == {
        "unbound": {"tried": 1, "killed": 0, "survived": 1, "equivalent": 0, "error": 0}
    }
    assert list(report["by_kind"]) == ["digit-first", "digit-last", "unbound"]
    assert [m["name"] for m in report["mutants"]] == [
        "digit-first-claim-1-0",
        "digit-first-claim-2-0",
        "digit-last-claim-1-0",
        "unbound-claim-1-all",
        "unbound-claim-1-all",
    ]


def test_a_rerun_item_replaces_its_earlier_outcome() -> None:
    found = summary()
    found.add(payload("b", "unbound-claim-1-all", "unbound", "killed", "LOW_CONFID"))
    assert found.as_json()["totals"]["survived"] == 0
    assert found.survivor_lines() == []
