"""The HTML page rendered from real report data: self-contained, one row and one section per
scenario, every claim linked to the evidence items it cites (and back), the gatekeeper row of
each binding, labels, overrides, failed expectations, the composer and the baseline marks."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_diageval.harness.report.baseline import compare_reports
from pytest_diageval.harness.report.html import render_html, write_html
from support.html_page import Element, parse_html
from support.reports import SHIPPED, report_of
from support.scenario_runs import MATRIX_DIR, load_raw, script_entries, write_scenario

POSITIVE = MATRIX_DIR / "02-highmemory-positive.yaml"
GATEKEEPER_REJECT = MATRIX_DIR / "06-gatekeeper-reject.yaml"
LOW_CONFID = SHIPPED / "verifier" / "low-confid-partial-evidence.yaml"
REJECT_ID = "matrix-gatekeeper-reject"


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    return report_of([POSITIVE, GATEKEEPER_REJECT, LOW_CONFID])


@pytest.fixture(scope="module")
def page(report: dict[str, Any]) -> Element:
    return parse_html(render_html(report, None))


def _section(page: Element, scenario_id: str) -> Element:
    return page.by_id(f"scenario-{scenario_id}")


def _claim(section: Element, claim_id: str) -> Element:
    (claim,) = [c for c in section.find_all("div", "claim") if c.text().startswith(claim_id)]
    return claim


def test_the_page_fetches_nothing(report: dict[str, Any]) -> None:
    text = render_html(report, None)
    page = parse_html(text)

    links = [e.attrs["href"] for e in page.iter() if "href" in e.attrs]
    assert links
    assert all(link.startswith("#") for link in links)
    assert [e for e in page.iter() if "src" in e.attrs or e.tag in {"link", "iframe"}] == []
    (script,) = page.find_all("script")
    assert "applyFilters" in script.text()
    assert "http://" not in text
    assert "https://" not in text
    assert page.find_all("meta")[0].attrs == {"charset": "utf-8"}


def test_one_row_and_one_section_per_scenario_with_the_summary_values(
    report: dict[str, Any], page: Element
) -> None:
    rows = page.by_id("scenario-table").find_all("tr", "scenario-row")

    ids = [entry["id"] for entry in report["scenarios"]]
    assert [row.cells()[0] for row in rows] == ids
    for entry, row in zip(report["scenarios"], rows, strict=True):
        summary, checks = entry["summary"], entry["checks"]
        total = checks["passed"] + checks["failed"]
        assert row.cells()[3:10] == [
            summary["expected_verdict"],
            summary["verdict"],
            str(summary["score"]),
            summary["severity"],
            str(summary["rounds"]),
            "{prompt_tokens}+{completion_tokens}".format(**summary["usage"]["total"]),
            f"{checks['passed']}/{total}",
        ]
        assert row.attrs["data-verdict"] == summary["verdict"]
        assert row.attrs["data-tags"] == " ".join(entry["tags"])
        assert _section(page, entry["id"]).find_all("h2")[0].text().startswith(entry["id"])
    assert page.by_id("confusion-matrix").find_all("tr")[1].cells() == ["PASS", "1", "0", "0"]


def test_chinese_text_is_written_as_characters(report: dict[str, Any]) -> None:
    text = render_html(report, None)

    assert "只确认 order-service 是否存在 HighMemoryUsage 告警。" in text
    assert '<html lang="zh-CN">' in text


def test_a_claim_lists_the_evidence_items_it_cites_and_each_item_links_back(page: Element) -> None:
    section = _section(page, REJECT_ID)
    claim = _claim(section, "claim-1")

    (target,) = claim.attrs["data-evidence"].split()
    item = page.by_id(target)
    assert item.tag == "li"
    assert {"evidence-item", "cited"} <= item.classes
    assert item.text().startswith("$.logs[4] [2026-07-08T11:17:00+08:00][WARN][order-service]")
    (back,) = item.find_all("a", "cite-link")
    assert back.attrs["href"] == f"#{claim.attrs['id']}"
    assert back.text() == "← claim-1 binding 2 (pass)"
    # Items nobody cites are listed too, plain.
    uncited = [li for li in section.find_all("li", "evidence-item") if "cited" not in li.classes]
    assert [li.text().split()[0] for li in uncited] == [f"$.logs[{n}]" for n in range(4)]


def test_each_binding_sits_beside_its_gatekeeper_row(page: Element) -> None:
    claim = _claim(_section(page, REJECT_ID), "claim-1")

    header, missing, present = claim.find_all("tr")
    assert header.cells()[3:] == ["gatekeeper", "rule", "matched text / message"]
    assert missing.cells()[1] == "query_metrics #1 $.alerts[99] not in that output"
    assert missing.cells()[3:5] == ["fail (reject)", "evidence.raw_path"]
    assert "is not among the evidence_refs of invocation 1" in missing.cells()[5]
    assert present.cells()[3:5] == ["pass", ""]
    assert present.cells()[5] == "matched: 内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB"
    (link,) = present.find_all("a")
    assert link.attrs["href"] == f"#{claim.attrs['data-evidence']}"


def test_a_failed_citation_marks_the_cited_item(page: Element) -> None:
    section = _section(page, REJECT_ID)
    claim = _claim(section, "claim-2")

    item = page.by_id(claim.attrs["data-evidence"])
    assert "cited-fail" in item.classes
    assert item.text().startswith("$.alerts[0] HighMemoryUsage firing")


def _round(report: dict[str, Any], scenario_id: str) -> dict[str, Any]:
    entry = next(e for e in report["scenarios"] if e["id"] == scenario_id)
    (only,) = entry["result"]["rounds"]
    return dict(only)


def test_labels_ceilings_and_overrides_of_the_code_are_shown(
    report: dict[str, Any], page: Element
) -> None:
    section = _section(page, REJECT_ID)
    decision = _round(report, REJECT_ID)["decision"]
    (label_list,) = _claim(section, "claim-2").find_all("ul", "labels")
    labels = [li.text() for li in label_list.find_all("li")]

    assert labels[0] == "verifier label: direct_evidence (critical) 片段直接支持。"
    ceiling = "ceiling from its bindings (code): no_evidence claim.bindings_failed"
    assert labels[1].startswith(ceiling)
    (final,) = [f for f in decision["facts"] if f["claim_id"] == "claim-2"]
    assert labels[2] == f"final label (code): {final['verification']} (critical)"
    index = decision["facts"].index(final)
    own = [o for o in decision["overrides"] if o.get("fact_index") == index]
    assert own  # the code lowered the verifier's label
    assert labels[3:] == [
        f"override {o['rule']}: {o['from_value']} → {o['to_value']} — {o['reason']}" for o in own
    ]
    (overrides,) = section.find_all("table", "overrides")
    rows = [row.cells() for row in overrides.find_all("tr")[1:]]
    assert [(r[0], r[2], r[3]) for r in rows] == [
        (o["rule"], f"{o['from_value']} → {o['to_value']}", o["reason"])
        for o in decision["overrides"]
    ]
    assert ("gatekeeper.reject", "LOW_CONFID → REJECT") in [(r[0], r[2]) for r in rows]


def test_a_recommended_action_links_its_evidence_too(page: Element) -> None:
    section = _section(page, "matrix-highmemory-positive")

    action = _claim(section, "action-1")
    item = page.by_id(action.attrs["data-evidence"])
    assert "← action-1 binding 1 (pass)" in [a.text() for a in item.find_all("a")]


def test_failed_expectations_show_expected_and_actual(tmp_path: Path) -> None:
    data = load_raw(POSITIVE)
    contract = script_entries(data, "executor")[1]["content"]
    contract["claims"][0]["evidence_bindings"][1]["evidence_excerpt"] = "JVM heap usage 1.2GB/4GB"
    forged = write_scenario(data, tmp_path / POSITIVE.name)

    page = parse_html(render_html(report_of([forged]), None))

    (table,) = page.find_all("div", "failed-expectations")[0].find_all("table")
    failed = {row.cells()[0]: row.cells()[1:3] for row in table.find_all("tr")[1:]}
    assert failed["verdict"] == ["PASS", "REJECT (score 0.0)"]
    assert failed["gatekeeper"][0] == "severity=none, failed_rules=[]"
    assert "groundedness" in failed
    assert page.by_id("scenario-table").find_all("tr", "failing")


def test_a_scenario_title_is_text_never_markup(report: dict[str, Any]) -> None:
    hostile = copy.deepcopy(report)
    hostile["scenarios"][0]["title"] = '<script>alert("x")</script><b>'

    text = render_html(hostile, None)

    assert len(parse_html(text).find_all("script")) == 1
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;b&gt;" in text


def test_the_composer_decision_is_shown(report: dict[str, Any], page: Element) -> None:
    """What the composer published and which claims it dropped, and why."""
    composer_output = next(e for e in report["scenarios"] if e["id"] == REJECT_ID)["result"][
        "composer_output"
    ]

    (composer,) = _section(page, REJECT_ID).find_all("div", "composer")

    assert composer.text().startswith(
        f"status {composer_output['status']} · source template · route degraded claims used: none"
    )
    dropped = [row.cells() for row in composer.find_all("tr")[1:]]
    assert dropped == [[d["claim_id"], d["reason"]] for d in composer_output["claims_dropped"]]
    assert [d[0] for d in dropped] == ["claim-1", "claim-2"]


def test_a_report_from_before_the_composer_still_renders(report: dict[str, Any]) -> None:
    older = copy.deepcopy(report)
    for entry in older["scenarios"]:
        del entry["result"]["composer_output"]
        for round_data in entry["result"]["rounds"]:
            del round_data["decision"]["claim_ceilings"]

    page = parse_html(render_html(older, None))

    assert page.find_all("div", "composer") == []
    assert len(page.find_all("section", "scenario")) == len(older["scenarios"])


def test_the_baseline_marks_what_changed(report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    old = next(entry for entry in baseline["scenarios"] if entry["id"] == REJECT_ID)
    old["summary"].update(verdict="PASS", score=1.0)
    baseline["scenarios"] = [e for e in baseline["scenarios"] if e["id"] != LOW_CONFID_ID]

    page = parse_html(render_html(report, compare_reports(report, baseline, "old.json")))

    rows = {r.cells()[0]: r for r in page.by_id("scenario-table").find_all("tr", "scenario-row")}
    changed = rows[f"{REJECT_ID} changed"]
    assert changed.attrs["data-changed"] == "1"
    assert changed.cells()[4:6] == ["REJECT was PASS", "0.0 was 1.0"]
    assert rows[f"{LOW_CONFID_ID} new"].attrs["data-changed"] == "1"
    assert rows["matrix-highmemory-positive"].attrs["data-changed"] == "0"
    assert page.by_id("baseline-changes").find_all("li")[0].text() == (
        f"{REJECT_ID}: verdict PASS → REJECT; score 1.0 → 0.0"
    )
    assert page.by_id("filter-changed").attrs["type"] == "checkbox"


LOW_CONFID_ID = "verifier-low-confid-partial-evidence"


def test_the_page_is_written_whole_and_readable(report: dict[str, Any], tmp_path: Path) -> None:
    target = tmp_path / "out" / "report.html"

    write_html(target, report, None)

    assert [p.name for p in target.parent.iterdir()] == ["report.html"]  # no temporary left
    assert target.read_text("utf-8") == render_html(report, None)
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


def test_tokens_are_shown_as_the_terminal_shows_them_and_compared(
    report: dict[str, Any],
) -> None:
    """A run with recorded usage (cassettes): ``prompt+completion``, the total compared."""
    with_usage = copy.deepcopy(report)
    usage = {"total": {"requests": 4, "prompt_tokens": 1800, "completion_tokens": 95}}
    with_usage["scenarios"][0]["summary"]["usage"] = usage
    baseline = copy.deepcopy(with_usage)
    baseline["scenarios"][0]["summary"]["usage"]["total"]["prompt_tokens"] = 1500
    for run in (with_usage, baseline):  # as a report from before token usage was reported
        del run["scenarios"][1]["summary"]["usage"]

    page = parse_html(render_html(with_usage, compare_reports(with_usage, baseline, "old.json")))

    rows = page.by_id("scenario-table").find_all("tr", "scenario-row")
    assert rows[0].cells()[8] == "1800+95 was 1595"
    assert rows[0].attrs["data-changed"] == "1"
    assert rows[1].cells()[8] == "—"


def test_a_loop_stopped_by_a_repeated_refused_call_says_so_in_its_round() -> None:
    cutoff = SHIPPED / "evidence" / "evidence-repeated-argument-error-cutoff.yaml"
    page = parse_html(render_html(report_of([cutoff]), None))
    text = _section(page, "evidence-repeated-argument-error-cutoff").text()
    assert text.count("stopped: a refused call repeated verbatim") == 1  # round 1; 2 submitted
