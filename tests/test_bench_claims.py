"""benchmarks/bench_claims.py reads a pair as the pipeline would hold it after a clean
gatekeeper pass: a faithful quote is let through, a claim naming what its item never shows is
flagged, and a scope problem of the pair's question is flagged too."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_claims

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
