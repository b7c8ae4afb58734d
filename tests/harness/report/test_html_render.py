"""The HTML page rendered from real report data: self-contained, one row and one section per
scenario, every claim linked to the evidence items it cites (and back), the gatekeeper row of
each binding, labels, overrides, failed expectations, the composer and the baseline marks."""

from __future__ import annotations

import copy
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from pytest_diageval.core.judge import verdict
from pytest_diageval.harness.report.baseline import compare_reports
from pytest_diageval.harness.report.html import render_html, write_html
from support.html_page import Element, parse_html
from support.reports import SHIPPED, report_of
from support.scenario_runs import MATRIX_DIR, load_raw, script_entries, write_scenario

POSITIVE = MATRIX_DIR / "02-highmemory-positive.yaml"
GATEKEEPER_REJECT = MATRIX_DIR / "06-gatekeeper-reject.yaml"
LOW_CONFID = SHIPPED / "verifier" / "low-confid-partial-evidence.yaml"
REJECT_ID = "matrix-gatekeeper-reject"
HIDES_RAW = SHIPPED / "verifier" / "reject-hides-raw-answer.yaml"
HIDES_RAW_ID = "verifier-reject-hides-raw-answer"


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
    assert [row.cells()[1] for row in rows] == ids
    for entry, row in zip(report["scenarios"], rows, strict=True):
        summary, checks = entry["summary"], entry["checks"]
        total = checks["passed"] + checks["failed"]
        assert row.cells()[4:11] == [
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
    # claim-1: claim-2 (HikariCP under "只确认 … HighMemoryUsage") is set aside, never judged
    (label_list,) = _claim(section, "claim-1").find_all("ul", "labels")
    labels = [li.text() for li in label_list.find_all("li")]

    assert labels[0] == "verifier label: direct_evidence (critical) 告警片段直接支持。"
    ceiling = "ceiling from its bindings (code): no_evidence claim.entity_not_cited"
    assert labels[1].startswith(ceiling)
    (final,) = [f for f in decision["facts"] if f["claim_id"] == "claim-1"]
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
        f"status {composer_output['status']} · source template · route degraded"
        " claims in the answer: none (the published answer shows no claim)"
    )
    dropped = [row.cells() for row in composer.find_all("tr")[1:]]
    assert dropped == [[d["claim_id"], d["reason"]] for d in composer_output["claims_dropped"]]
    assert [d[0] for d in dropped] == ["claim-1"]  # claim-2 is set aside (scope), not dropped


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

    rows = {r.cells()[1]: r for r in page.by_id("scenario-table").find_all("tr", "scenario-row")}
    changed = rows[f"{REJECT_ID} changed"]
    assert changed.attrs["data-changed"] == "1"
    assert changed.cells()[5:7] == ["REJECT was PASS", "0.0 was 1.0"]
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
    assert rows[0].cells()[9] == "1800+95 was 1500+95"
    assert rows[0].attrs["data-changed"] == "1"
    assert rows[1].cells()[9] == "—"


def test_a_loop_stopped_by_a_repeated_refused_call_says_so_in_its_round() -> None:
    cutoff = SHIPPED / "evidence" / "evidence-repeated-argument-error-cutoff.yaml"
    page = parse_html(render_html(report_of([cutoff]), None))
    text = _section(page, "evidence-repeated-argument-error-cutoff").text()
    assert text.count("stopped: a refused call repeated verbatim") == 1  # round 1; 2 submitted


# --------------------------------------------------------------------------- issue 28


def _expecting(path: Path, verdict: Any, tmp_path: Path) -> Path:
    data = load_raw(path)
    data["expect"]["verdict"] = verdict
    tmp_path.mkdir(exist_ok=True)
    return write_scenario(data, tmp_path / path.name)


def _matrix_cells(page: Element) -> dict[tuple[str, str], Element]:
    matrix = page.by_id("confusion-matrix")
    header, *rows = matrix.find_all("tr")
    actual = header.cells()[1:]
    return {
        (row.find_all("th")[0].text(), a): cell
        for row in rows
        for a, cell in zip(actual, row.find_all("td"), strict=True)
    }


def test_an_actual_verdict_an_expectation_allows_is_a_match_in_the_confusion_matrix(
    tmp_path: Path,
) -> None:
    allowed = _expecting(LOW_CONFID, ["LOW_CONFID", "REJECT"], tmp_path / "a")
    disallowed = _expecting(POSITIVE, ["LOW_CONFID", "REJECT"], tmp_path / "b")  # PASS

    cells = _matrix_cells(parse_html(render_html(report_of([allowed, disallowed]), None)))

    hit = cells[("LOW_CONFID|REJECT", "LOW_CONFID")]
    assert (hit.text(), hit.classes) == ("1", {"hit"})
    miss = cells[("LOW_CONFID|REJECT", "PASS")]
    assert (miss.text(), miss.classes) == ("1", {"miss"})
    assert cells[("LOW_CONFID|REJECT", "REJECT")].text() == "0"


def test_a_failing_row_says_so_in_a_status_cell_and_its_section_heading(tmp_path: Path) -> None:
    failing = _expecting(POSITIVE, "REJECT", tmp_path)

    page = parse_html(render_html(report_of([failing, LOW_CONFID]), None))

    header = page.by_id("scenario-table").find_all("th")[0]
    assert header.text() == "status"
    bad, good = page.by_id("scenario-table").find_all("tr", "scenario-row")
    assert "failing" in bad.classes
    assert bad.cells()[0] == "✗ FAIL"
    assert bad.find_all("td")[0].classes == {"status-cell", "fail"}
    assert good.cells()[0] == "✓ pass"
    assert good.find_all("td")[0].classes == {"status-cell", "pass"}
    (mark,) = _section(page, "matrix-highmemory-positive").find_all("span", "status-mark")
    assert mark.text() == "✗ FAIL"
    assert _section(page, LOW_CONFID_ID).find_all("span", "status-mark") == []


def _forged(tmp_path: Path) -> Path:
    data = load_raw(POSITIVE)
    contract = script_entries(data, "executor")[1]["content"]
    contract["claims"][0]["evidence_bindings"][1]["evidence_excerpt"] = "JVM heap usage 1.2GB/4GB"
    return write_scenario(data, tmp_path / POSITIVE.name)


def test_a_changed_final_answer_is_shown_as_a_diff_and_each_change_links_its_section(
    report: dict[str, Any], tmp_path: Path
) -> None:
    now = report_of([_forged(tmp_path), GATEKEEPER_REJECT, LOW_CONFID])
    baseline = copy.deepcopy(report)
    baseline["scenarios"] = [e for e in baseline["scenarios"] if e["id"] != LOW_CONFID_ID]
    baseline["scenarios"].append({**baseline["scenarios"][0], "id": "gone-since"})

    page = parse_html(render_html(now, compare_reports(now, baseline, "old.json")))

    section = _section(page, "matrix-highmemory-positive")
    (diff,) = section.find_all("details", "answer-diff")
    lines = [span.text() for span in diff.find_all("span")]
    assert lines[:2] == ["--- baseline", "+++ this run"]
    removed = [span.text() for span in diff.find_all("span", "diff-del")]
    assert (
        "-- 告警 HighMemoryUsage：触发中，级别 critical，当前 91%，阈值 85%，持续 15m，"
        "采样 86.2, 87.4, 88.6, 89.8, 91.0（来源：query_metrics #1 $.alerts[0]）"
    ) in removed
    assert any(s.text().startswith("+【无法可靠回答】") for s in diff.find_all("span", "diff-add"))
    assert _section(page, REJECT_ID).find_all("details", "answer-diff") == []
    # The change list: each scenario that ran links its section; one not run now cannot.
    items = page.by_id("baseline-changes").find_all("li")
    links = {li.text().split(":")[0]: [a.attrs["href"] for a in li.find_all("a")] for li in items}
    assert links == {
        "matrix-highmemory-positive": ["#scenario-matrix-highmemory-positive"],
        LOW_CONFID_ID: [f"#scenario-{LOW_CONFID_ID}"],
        "gone-since": [],
    }
    for targets in links.values():
        for target in targets:
            assert page.by_id(target[1:]).tag == "section"


def test_the_score_rule_shown_is_read_from_the_weights(
    report: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    weights = verdict.VERIFICATION_WEIGHTS
    rule = (
        f"score is the mean of critical fact weights (direct {float(weights['direct_evidence'])},"
        f" indirect {float(weights['indirect_support'])},"
        f" no_evidence {float(weights['no_evidence'])}; contradicted → 0.0)"
    )
    page = parse_html(render_html(report, None))
    shown = [p.text() for p in _section(page, LOW_CONFID_ID).find_all("p", "score-rule")]
    assert shown == [rule]
    # The verdict.score override gives the same words (the model's score was another).
    (override,) = [
        o
        for o in _round(report, LOW_CONFID_ID)["decision"]["overrides"]
        if o["rule"] == "verdict.score"
    ]
    assert override["reason"] == rule

    monkeypatch.setitem(weights, "indirect_support", Fraction(1, 2))
    changed = parse_html(render_html(report_of([LOW_CONFID]), None))
    assert "indirect 0.5," in changed.find_all("p", "score-rule")[0].text()
    overrides = changed.find_all("table", "overrides")[0].text()
    assert "(direct 1.0, indirect 0.5, no_evidence 0.0; contradicted → 0.0)" in overrides


def test_the_composer_note_names_only_the_claims_the_answer_shows(tmp_path: Path) -> None:
    """A degraded answer prints directly supported claims only: an indirect one is used by the
    composer, yet the answer shows no claim, and the note says so."""
    data = load_raw(HIDES_RAW)
    facts = script_entries(data, "verifier")[0]["content"]["facts_checked"]
    facts[0]["verification"] = "indirect_support"
    data["id"] = "indirect-only-degraded"
    path = write_scenario(data, tmp_path / HIDES_RAW.name)
    report = report_of([path, HIDES_RAW])
    composers = {e["id"]: e["result"]["composer_output"] for e in report["scenarios"]}

    page = parse_html(render_html(report, None))

    (indirect_entry, direct_entry) = report["scenarios"]  # sorted by id
    assert indirect_entry["result"]["answer_kind"] == "degraded"
    assert composers["indirect-only-degraded"]["claims_used"] == ["claim-1"]  # used, not shown
    assert composers[HIDES_RAW_ID]["claims_used"] == ["claim-1"]
    notes = [
        s.find_all("p", "claims-shown")[0].text() for s in page.find_all("section", "scenario")
    ]
    assert notes == [
        "claims in the answer: none (the published answer shows no claim)",
        "claims in the answer: claim-1",
    ]
    assert "claim-1" not in notes[0]
    assert direct_entry["result"]["final_answer"].count("告警 HighCPUUsage：触发中") == 1


def test_the_decision_says_what_was_published(page: Element) -> None:
    published = {
        scenario_id: [p.text() for p in _section(page, scenario_id).find_all("span", "published")]
        for scenario_id in ("matrix-highmemory-positive", REJECT_ID)
    }
    assert published == {
        "matrix-highmemory-positive": [
            "the evidence cited by claim-1, rendered by code: the executor's user-facing answer"
            " was not published"
        ],
        REJECT_ID: ["the degraded template, showing no claim"],
    }
    decision = _section(page, "matrix-highmemory-positive").find_all("section", "round")[0].text()
    assert "outputs the executor's user-facing answer" not in decision


def test_each_rendering_stands_beside_the_model_wording(page: Element) -> None:
    """Issue 36: the page shows what the answer rendered for each used claim next to the
    executor's own words, which the answer never publishes."""
    (table,) = _section(page, "matrix-highmemory-positive").find_all("table", "renderings")
    (row,) = table.find_all("tr")[1:]
    claim, rendering, wording = (td.text() for td in row.find_all("td"))
    assert claim.strip() == "claim-1"
    assert rendering.startswith("告警 HighMemoryUsage：触发中，级别 critical，当前 91%")
    assert "（来源：query_metrics #1 $.alerts[0]）" in rendering
    assert wording == "order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。"
    (answer,) = _section(page, "matrix-highmemory-positive").find_all("div", "answer")
    assert rendering.split("（来源")[0] in answer.text()
    assert wording not in answer.text()


POINTED = SHIPPED / "soundness" / "points-false-point.yaml"


def test_a_claims_points_are_listed_and_the_ceiling_names_the_false_one() -> None:
    page = parse_html(render_html(report_of([POINTED]), None))
    section = _section(page, "soundness-points-false-point")
    claim = _claim(section, "claim-1")
    (points,) = claim.find_all("table", "points")
    assert [row.cells() for row in points.find_all("tr")[1:]] == [
        ["1", "1", "state", "equals", "firing"],
        ["2", "1", "current", "above", "95%"],
    ]
    assert "did not read its text" in claim.text()
    (labels,) = claim.find_all("ul", "labels")
    ceiling = [li.text() for li in labels.find_all("li")][1]
    assert ceiling.startswith("ceiling from its bindings (code): no_evidence point.false")
    assert "current above '95%' is false: the item's current is '91%'" in ceiling
    (held,) = _claim(section, "claim-2").find_all("table", "points")
    assert [row.cells()[3] for row in held.find_all("tr")[1:]] == ["contains", "at_least"]
