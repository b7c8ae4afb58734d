"""benchmarks/bench_claims.py reads a pair as the pipeline would hold it after a clean
gatekeeper pass: a faithful quote is let through, a claim naming what its item never shows is
flagged, and a scope problem of the pair's question is flagged too."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_claims
import pytest

ALERT = {
    "kind": "alert",
    "service": "order-service",
    "alert_name": "HighMemoryUsage",
    "state": "firing",
    "severity": "critical",
    "current": "91%",
    "threshold": "85%",
    "duration": "15m",
    "description": "JVM heap usage 3.8GB/4GB",
}


def _pair(claim: str, **extra: object) -> dict[str, object]:
    return {"claim": claim, "claim_type": "fact", "items": [ALERT], **extra}


def test_a_faithful_restatement_passes_and_an_invented_entity_is_flagged() -> None:
    assert bench_claims.flagged(_pair("order-service HighMemoryUsage 告警，当前 91%")) == []
    assert bench_claims.flagged(_pair("order-service 出现 OutOfMemoryError，当前 91%")) == [
        "claim.entity_not_cited"
    ]


def test_an_excluded_topic_of_the_question_is_flagged() -> None:
    pair = _pair(
        "order-service 内存告警 HighMemoryUsage，当前 91%", question="只看 CPU，不要看内存"
    )
    assert bench_claims.flagged(pair) != []


def test_both_held_out_sets_load_and_meet_the_issues_minimums() -> None:
    for _, file in bench_claims.SETS:
        pairs = bench_claims.load(file)
        assert len(pairs) >= 100
        assert {p["label"] for p in pairs} == {"faithful", "unfaithful"}


FAULTS = {
    "label_swap", "clause_polarity", "modality", "causal_link_across_items", "subject", "time",
    "unit", "entity_not_in_item", "unsupported_negative_observation", "excluded_topic",
}  # fmt: skip
ITEM_FIELDS = {
    "alert": {"service", "alert_name", "state", "current", "threshold"},
    "log": {"timestamp", "level", "service", "message"},
    "runbook": {"title", "content"},
    "no_hit": {"tool", "arguments"},
}


def shape_problems(pairs: list[dict[str, object]]) -> list[str]:
    """What makes a labelled set unfit to measure with: a repeated id, an unknown fault, an
    item without its fields, a negative observation without a no-hit, a thin class."""
    found: list[str] = []
    ids = [str(p["id"]) for p in pairs]
    found += [f"{i}: repeated id" for i in sorted({i for i in ids if ids.count(i) > 1})]
    for pair in pairs:
        items = pair["items"]
        assert isinstance(items, list)
        if (pair["label"] == "faithful") != (pair["fault"] is None) or (
            pair["fault"] is not None and pair["fault"] not in FAULTS
        ):
            found.append(f"{pair['id']}: label {pair['label']!r} with fault {pair['fault']!r}")
        for item in items:
            missing = ITEM_FIELDS[item["kind"]] - set(item)
            if missing:
                found.append(f"{pair['id']}: {item['kind']} item without {sorted(missing)}")
        if pair["claim_type"] == "negative_observation" and not any(
            i["kind"] == "no_hit" for i in items
        ):
            found.append(f"{pair['id']}: a negative observation citing no no-hit")
    counts = {fault: sum(p["fault"] == fault for p in pairs) for fault in FAULTS}
    found += [f"{fault}: {n} pairs (at least 10)" for fault, n in counts.items() if n < 10]
    share = sum(p["label"] == "faithful" for p in pairs) / len(pairs)
    if not 0.45 <= share <= 0.55:
        found.append(f"faithful share {share:.2f} (45-55 %)")
    return sorted(found)


@pytest.mark.parametrize("file", [file for _, file in bench_claims.TRAINING_SETS])
def test_each_training_set_is_fit_to_measure_with(file: str) -> None:
    pairs = bench_claims.load(file)
    assert len(pairs) >= 200
    assert shape_problems(pairs) == []


def test_the_shape_check_names_each_problem() -> None:
    pairs = bench_claims.load(bench_claims.TRAINING_SETS[0][1])
    broken = [dict(p) for p in pairs[:30]]
    broken[1]["id"] = broken[0]["id"]
    broken[2] = {**broken[2], "label": "faithful", "fault": "unit"}
    broken[3] = {**broken[3], "items": [{"kind": "log", "message": "x"}]}
    broken[4] = {**broken[4], "claim_type": "negative_observation", "items": []}
    problems = shape_problems(broken)
    assert f"{broken[0]['id']}: repeated id" in problems
    assert f"{broken[2]['id']}: label 'faithful' with fault 'unit'" in problems
    assert any(p.startswith(f"{broken[3]['id']}: log item without") for p in problems)
    assert f"{broken[4]['id']}: a negative observation citing no no-hit" in problems
    assert any(p.endswith("pairs (at least 10)") for p in problems)


POINT_FAULTS = {
    "false_value", "wrong_field", "comparison_direction", "unit", "time", "subject",
    "missing_field", "not_comparable", "causal_across_items", "unsupported_negative_observation",
    "binding_missing",
}  # fmt: skip


def test_the_point_sets_load_with_their_points_and_meet_the_minimums() -> None:
    """Each point set: at least 100 pairs, about half faithful, at least 8 pairs per fault
    class, every pair with points (the code reads those, not the text)."""
    for _, file in bench_claims.POINT_SETS:
        pairs = bench_claims.load(file)
        assert len(pairs) >= 100, file
        faithful = sum(p["label"] == "faithful" for p in pairs)
        assert 0.45 <= faithful / len(pairs) <= 0.55, file
        faults = [p["fault"] for p in pairs if p["label"] == "unfaithful"]
        assert set(faults) == POINT_FAULTS, file
        assert min(faults.count(f) for f in POINT_FAULTS) >= 8, file
        assert all(p["points"] for p in pairs), file


def test_a_pair_with_points_is_judged_by_them_not_its_text() -> None:
    wrong_text = _pair("order-service 出现 OutOfMemoryError，当前 10%")
    true_point = {"binding": 1, "field": "current", "relation": "above", "other_field": "threshold"}
    assert bench_claims.flagged({**wrong_text, "points": [true_point]}) == []
    false_point = {**true_point, "relation": "below"}
    assert bench_claims.flagged({**wrong_text, "points": [false_point]}) == ["point.false"]
