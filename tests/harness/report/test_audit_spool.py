"""The audit spool and the streamed JSON report: what is written equals the report that
``json.dumps`` of the whole would give, without holding it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_diageval.harness.report.audit_spool import AuditSpool, write_report

ENTRIES: list[dict[str, Any]] = [
    {"id": "b", "summary": {"verdict": "PASS", "score": 1.0}, "tags": ["内存", "x\ny"]},
    {"id": "a", "result": {"rounds": [{"round": 1, "facts": []}], "empty": {}}, "n": None},
    {"id": "c", "checks": {"passed": 3, "failed": 0}, "text": '引用 "quoted" \\ back'},
]


def _whole(entries: list[dict[str, Any]]) -> str:
    report = {"version": 1, "scenarios": entries}
    return json.dumps(report, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


@pytest.mark.parametrize("count", [0, 1, 3])
def test_streamed_report_equals_the_whole_report_dumped_at_once(tmp_path: Path, count: int) -> None:
    path = tmp_path / "deep" / "report.json"

    write_report(path, iter(ENTRIES[:count]))

    assert path.read_text("utf-8") == _whole(ENTRIES[:count])


def test_spool_gives_back_each_record_and_the_latest_of_an_id() -> None:
    spool = AuditSpool()
    for entry in ENTRIES:
        spool.add(entry["id"], entry)
    spool.add("a", {"id": "a", "replaced": True})

    assert len(spool) == 3
    assert spool.get("b") == ENTRIES[0]
    assert spool.get("c") == ENTRIES[2]
    assert spool.get("a") == {"id": "a", "replaced": True}
    assert spool.get("missing") is None
    assert "c" in spool
    spool.close()
    assert spool.get("b") is None
    assert len(spool) == 0
