"""The baseline comparison (``--diageval-baseline``): reading a previous report, and what counts
as a change, on the report data of real scenario runs (a shipped scenario and the same
scenario with one forged quote, the way a prompt change turns a PASS into a REJECT)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_diageval.harness.report.baseline import (
    BaselineError,
    FieldChange,
    answer_diff,
    comparable_values,
    compare_reports,
    load_baseline,
    scenario_tokens,
    token_total,
    tokens_text,
)
from support.reports import SHIPPED, report_of
from support.scenario_runs import MATRIX_DIR, load_raw, script_entries, write_scenario

POSITIVE = MATRIX_DIR / "02-highmemory-positive.yaml"
LOW_CONFID = SHIPPED / "verifier" / "low-confid-partial-evidence.yaml"
FORGED_HEAP = "JVM heap usage 1.2GB/4GB"


@pytest.fixture(scope="module")
def before() -> dict[str, Any]:
    return report_of([POSITIVE, LOW_CONFID])


@pytest.fixture(scope="module")
def after(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The same two scenarios; the positive one's executor now misquotes the heap usage."""
    data = load_raw(POSITIVE)
    contract = script_entries(data, "executor")[1]["content"]
    contract["claims"][0]["evidence_bindings"][1]["evidence_excerpt"] = FORGED_HEAP
    forged = write_scenario(data, tmp_path_factory.mktemp("forged") / POSITIVE.name)
    return report_of([forged, LOW_CONFID])


def test_a_forged_quote_changes_verdict_score_severity_rules_and_the_answer(
    before: dict[str, Any], after: dict[str, Any]
) -> None:
    comparison = compare_reports(after, before, "old.json")

    # The scripted model estimates tokens deterministically; the REJECT round sent others.
    tokens = [scenario_tokens(report["scenarios"][0]["summary"]) for report in (before, after)]
    answers = [report["scenarios"][0]["result"]["final_answer"] for report in (before, after)]
    assert comparison.compared == 2
    assert comparison.added == comparison.missing == []
    assert list(comparison.changes) == ["matrix-highmemory-positive"]
    assert comparison.changes["matrix-highmemory-positive"] == [
        FieldChange("verdict", "PASS", "REJECT"),
        FieldChange("score", 1.0, 0.0),
        FieldChange("severity", "none", "reject"),
        FieldChange("failed_rules", [], ["evidence.excerpt_mismatch"]),
        FieldChange("answer_kind", "direct", "degraded"),
        FieldChange("final_answer", *answers),
        FieldChange("tokens", *tokens),
    ]
    assert comparison.terminal_lines() == [
        "changes since baseline old.json: 1 of 2 compared scenarios changed",
        "  matrix-highmemory-positive: verdict PASS → REJECT; score 1.0 → 0.0; severity none"
        " → reject; failed rules [] → [evidence.excerpt_mismatch]; answer kind direct → degraded"
        f"; final answer changed; tokens {tokens[0]} → {tokens[1]}",
    ]
    assert comparison.is_changed("matrix-highmemory-positive")
    assert not comparison.is_changed("verifier-low-confid-partial-evidence")


def test_a_changed_final_answer_is_a_change_with_its_diff(
    before: dict[str, Any], after: dict[str, Any]
) -> None:
    change = compare_reports(after, before, "old.json").field_change(
        "matrix-highmemory-positive", "final_answer"
    )

    assert change is not None
    diff = answer_diff(change.before, change.after)
    assert diff[:2] == ["--- baseline", "+++ this run"]
    assert (
        "-- 告警 HighMemoryUsage：触发中，级别 critical，当前 91%，阈值 85%，持续 15m，"
        "采样 86.2, 87.4, 88.6, 89.8, 91.0（来源：query_metrics #1 $.alerts[0]）"
    ) in diff
    assert any(line.startswith("+【无法可靠回答】") for line in diff)
    assert answer_diff("同一句。", "同一句。") == []


def test_tokens_are_shown_like_with_like(before: dict[str, Any]) -> None:
    """Both sides ``prompt+completion`` when both runs split them, else both totals: never a
    split against a bare total."""
    split = copy.deepcopy(before)
    usage = split["scenarios"][0]["summary"]["usage"]["total"]
    was = f"{usage['prompt_tokens']}+{usage['completion_tokens']}"
    usage["prompt_tokens"] += 600
    bare = copy.deepcopy(before)  # a report that gave one number per scenario
    for entry in bare["scenarios"]:
        entry["summary"]["tokens"] = scenario_tokens(entry["summary"])
        del entry["summary"]["usage"]
    total = scenario_tokens(before["scenarios"][0]["summary"])
    assert total is not None

    (both_split,) = compare_reports(split, before, "old.json").changes["matrix-highmemory-positive"]
    now = f"{usage['prompt_tokens']}+{usage['completion_tokens']}"
    assert (both_split.before_text, both_split.after_text) == (was, now)
    (one_bare,) = compare_reports(split, bare, "old.json").changes["matrix-highmemory-positive"]
    assert (one_bare.before_text, one_bare.after_text) == (str(total), str(total + 600))
    assert one_bare.text() == f"tokens {total} → {total + 600}"


def test_the_same_run_compares_unchanged(before: dict[str, Any]) -> None:
    comparison = compare_reports(before, copy.deepcopy(before), "same.json")

    assert comparison.changes == {}
    assert comparison.terminal_lines() == [
        "changes since baseline same.json: 0 of 2 compared scenarios changed"
    ]


def test_new_and_missing_scenarios_are_named(before: dict[str, Any]) -> None:
    only_positive = {**before, "scenarios": before["scenarios"][:1]}

    grown = compare_reports(before, only_positive, "old.json")
    shrunk = compare_reports(only_positive, before, "old.json")

    assert (grown.added, grown.missing) == (["verifier-low-confid-partial-evidence"], [])
    assert grown.is_changed("verifier-low-confid-partial-evidence")
    assert grown.terminal_lines()[1:] == [
        "  verifier-low-confid-partial-evidence: new (not in the baseline)"
    ]
    assert shrunk.terminal_lines()[1:] == [
        "  verifier-low-confid-partial-evidence: in the baseline, not run now"
    ]


def test_many_scenarios_not_run_now_are_counted_not_listed(before: dict[str, Any]) -> None:
    entry = before["scenarios"][0]
    many = {**before, "scenarios": [{**entry, "id": f"s{n}"} for n in range(6)]}

    comparison = compare_reports({"version": 1, "scenarios": []}, many, "old.json")

    assert comparison.terminal_lines() == [
        "changes since baseline old.json: 0 of 0 compared scenarios changed",
        "  6 scenarios of the baseline not run now",
    ]
    assert comparison.missing == [f"s{n}" for n in range(6)]


def test_failed_rules_of_every_round_count(before: dict[str, Any]) -> None:
    """A rule that failed in round 1 and was fixed by the retry is still a difference."""
    entry = copy.deepcopy(before["scenarios"][0])
    first_round = copy.deepcopy(entry["result"]["rounds"][0])
    first_round["gatekeeper"]["failed_rules"] = ["evidence.raw_path"]
    entry["result"]["rounds"].insert(0, first_round)

    assert comparable_values(entry)["failed_rules"] == ["evidence.raw_path"]


def test_tokens_change_only_when_both_runs_recorded_them(before: dict[str, Any]) -> None:
    older = copy.deepcopy(before)  # a report from before token usage was reported
    for entry in older["scenarios"]:
        del entry["summary"]["usage"]
    more_tokens = copy.deepcopy(before)
    usage = more_tokens["scenarios"][0]["summary"]["usage"]["total"]
    was = usage["prompt_tokens"] + usage["completion_tokens"]
    usage["prompt_tokens"] += 600

    assert scenario_tokens(before["scenarios"][0]["summary"]) == was
    assert compare_reports(before, older, "old.json").changes == {}
    assert compare_reports(more_tokens, before, "old.json").changes == {
        "matrix-highmemory-positive": [FieldChange("tokens", was, was + 600)]
    }


@pytest.mark.parametrize(
    ("tokens", "total"),
    [
        (1234, 1234),
        ({"total": 50, "prompt": 1}, 50),
        ({"prompt": 40, "completion": 2}, 42),
        ({"prompt_tokens": 7, "completion_tokens": 3}, 10),
        ({"total": {"requests": 3, "prompt_tokens": 700, "completion_tokens": 30}}, 730),
        ({"total": {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}}, None),
        ({"by_stage": {}}, None),
        (None, None),
        (True, None),
    ],
)
def test_token_total_reads_a_number_or_a_usage_mapping(tokens: Any, total: int | None) -> None:
    assert token_total(tokens) == total


USAGE = {
    "total": {"requests": 4, "prompt_tokens": 1800, "completion_tokens": 95},
    "planner": {"requests": 1, "prompt_tokens": 300, "completion_tokens": 20},
}


@pytest.mark.parametrize(
    ("summary", "count", "text"),
    [
        ({"usage": USAGE}, 1895, "1800+95"),
        ({"usage": {"total": {"requests": 0}}}, None, "—"),
        ({"tokens": 512}, 512, "512"),
        ({}, None, "—"),
    ],
)
def test_a_scenario_row_gives_its_tokens_from_usage_or_tokens(
    summary: dict[str, Any], count: int | None, text: str
) -> None:
    assert scenario_tokens(summary) == count
    assert tokens_text(summary) == text


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "old.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_written_report_loads_back(tmp_path: Path, before: dict[str, Any]) -> None:
    path = _write(tmp_path, json.dumps(before, ensure_ascii=False))

    assert load_baseline(path) == before


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"version": 1,\n "scenarios": [}', ":2:16: not JSON (Expecting value); give a file"),
        ("[1, 2]", ": not a diageval report (expected an object with 'version' and 'scenarios')"),
        ('{"version": 7, "scenarios": []}', ": report version 7 is not supported (allowed: 1)"),
        ('{"version": 1, "scenarios": {}}', ": 'scenarios' must be a list"),
        ('{"version": 1, "scenarios": [{"id": "a"}, {}]}', ": scenarios[1] has no string 'id'"),
    ],
)
def test_a_file_that_is_no_report_is_refused_with_the_reason(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = _write(tmp_path, text)

    with pytest.raises(BaselineError) as raised:
        load_baseline(path)

    assert str(raised.value).startswith(f"--diageval-baseline {path}{problem}")


def test_a_missing_file_is_refused_with_its_path(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match=r"old\.json: cannot read the file"):
        load_baseline(tmp_path / "old.json")
