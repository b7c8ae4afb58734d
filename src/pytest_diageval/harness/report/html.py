"""``--diageval-html``: one self-contained HTML page for a reviewer.

The page is rendered from :meth:`ScenarioSummaries.report_data`, the very dict the
``--diageval-report`` JSON holds, so the two reports cannot disagree; under pytest-xdist the
controller holds that data for every worker's scenarios. The template, its CSS and its small
script are package files inlined into the page: no external URL, no server, it opens from disk
and from a CI artifact. Jinja2 escapes every value (a scenario's text is data, never markup).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2

from pytest_diageval.core.judge.verdict import score_rule
from pytest_diageval.harness.checks.evidence_lines import published_text
from pytest_diageval.harness.outputs import write_atomically
from pytest_diageval.harness.report.baseline import COMPARED_FIELDS, Comparison, answer_diff
from pytest_diageval.harness.report.columns import (
    BUILTIN_NAMES,
    ReportColumn,
    cell_text,
    columns_of,
)
from pytest_diageval.harness.report.html_view import pretty_json, round_view
from pytest_diageval.harness.report.reporter import VERDICTS, ScenarioSummaries

__all__ = ["render_html", "scenario_view", "write_html"]

Data = Mapping[str, Any]
Confusion = tuple[list[str], list[str], Counter[tuple[str, str]]]
TEMPLATE = "report.html.j2"


def write_html(
    path: Path,
    report: Data,
    comparison: Comparison | None,
    confusion: Confusion | None = None,
    added: Sequence[ReportColumn] = (),
) -> None:
    """Render and write atomically: a reader never opens half a page."""
    write_atomically(path, render_html(report, comparison, confusion, added))


def render_html(
    report: Data,
    comparison: Comparison | None,
    confusion: Confusion | None = None,
    added: Sequence[ReportColumn] = (),
) -> str:
    """The page of a report dict; ``confusion`` is the terminal's confusion matrix (the
    run's :meth:`ScenarioSummaries.confusion_counts`), else counted from the report's rows;
    the overview has a column per :func:`~.columns.columns_of` the report (with ``added``)."""
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("pytest_diageval.harness.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters["json"] = pretty_json
    entries = list(report.get("scenarios") or [])
    columns = [column for column in columns_of(entries, added) if column.in_tables]
    scenarios = [
        scenario_view(index, entry, comparison, columns) for index, entry in enumerate(entries)
    ]
    expected_labels, actual_labels, counts = confusion or _confusion_of(report)
    return environment.get_template(TEMPLATE).render(
        scenarios=scenarios,
        columns=[_column_view(column, entries) for column in columns],
        anchors={view["id"]: view["anchor"] for view in scenarios},
        tags=sorted({tag for view in scenarios for tag in view["tags"]}),
        verdicts=_verdict_options(scenarios),
        confusion={
            "expected": expected_labels,
            "actual": actual_labels,
            "counts": {f"{e}|{a}": n for (e, a), n in counts.items()},
            # An expectation may allow several verdicts ("LOW_CONFID|REJECT"): any is a match.
            "hits": {f"{e}|{a}" for e in expected_labels for a in actual_labels if _allows(e, a)},
        },
        totals=_totals(scenarios),
        comparison=comparison,
        compared_fields=COMPARED_FIELDS,
        score_rule=score_rule(),
    )


def _allows(expected: str, actual: str) -> bool:
    """Whether an expected label (``PASS``, or allowed verdicts joined by ``|``) allows the
    actual verdict."""
    return actual in expected.split("|")


def _confusion_of(report: Data) -> Confusion:
    summaries = ScenarioSummaries()
    for entry in report.get("scenarios") or []:
        summaries.rows[entry["id"]] = entry["summary"]
        if any(c.get("name") == "verdict" for c in entry.get("check_results") or []):
            summaries.verdict_checked.add(entry["id"])
    return summaries.confusion_counts()


def _verdict_options(scenarios: Sequence[Data]) -> list[str]:
    seen = {view["summary"]["verdict"] for view in scenarios}
    return [*[v for v in VERDICTS if v in seen], *sorted(seen - set(VERDICTS))]


def _totals(scenarios: Sequence[Data]) -> dict[str, int]:
    return {
        "scenarios": len(scenarios),
        "failing": sum(1 for view in scenarios if view["failing"]),
        "checks_passed": sum(view["checks"]["passed"] for view in scenarios),
        "checks": sum(view["checks"]["total"] for view in scenarios),
    }


def _column_view(column: ReportColumn, entries: Sequence[Data]) -> dict[str, Any]:
    """A column's heading: its text, how it sorts, its width's class in ``report.css`` (a
    built-in column's own, ``c-added`` for every other)."""
    return {
        "name": column.name,
        "header": column.header,
        "sort": "number" if column.numeric(entries) else "text",
        "css": f"c-{column.name}" if column.name in BUILTIN_NAMES else "c-added",
    }


def _cells(
    entry: Data, columns: Sequence[ReportColumn], changes: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """A scenario's cells of the overview, each with its baseline value when it changed."""
    cells = []
    for column in columns:
        change = changes.get(column.name)
        look = getattr(column, "look", "")
        # The verdict's badge is sample 1's; the page notes every sample's beside it.
        shown = cell_text(column.read(entry)) if look == "verdict" else column.cell(entry)
        was = None
        if change is not None:
            shown = change.after_text if change.after_text is not None else shown
            was = change.before_text
            was = column.change_text(change.before) if was is None else was
        cells.append(
            {
                "text": shown,
                "sort": column.sort_value(entry),
                "change": change,
                "was": was,
                "look": look,
            }
        )
    return cells


def scenario_view(
    index: int,
    entry: Data,
    comparison: Comparison | None,
    columns: Sequence[ReportColumn] = (),
) -> dict[str, Any]:
    """One row of the overview (a cell per column) and one section of the page."""
    summary = entry.get("summary") or {}
    result = entry.get("result") or {}
    checks = entry.get("checks") or {}
    passed, failed = int(checks.get("passed", 0)), int(checks.get("failed", 0))
    scenario_id = str(entry.get("id"))
    anchor = _anchor(index, scenario_id)
    invocations = result.get("invocations") or []
    checks_run = entry.get("check_results") or []
    view: dict[str, Any] = {
        "anchor": anchor,
        "id": scenario_id,
        "title": entry.get("title", ""),
        "file": entry.get("file", ""),
        "tags": list(entry.get("tags") or []),
        "summary": summary,
        "checks": {"passed": passed, "failed": failed, "total": passed + failed},
        "failing": failed > 0 or bool(summary.get("error")),
        "error": summary.get("error"),
        "result": result,
        "rounds": _rounds(anchor, result, invocations),
        "composer": result.get("composer_output"),
        "failed_expectations": [c for c in checks_run if c.get("outcome") == "failed"],
        # The grader's score and reasons, passed or failed (a check: the verdict is the code's).
        "rubric": [c for c in checks_run if c.get("name") == "rubric"],
        "changes": {},
        "is_new": False,
        "answer_diff": [],
        **_samples_view(summary, checks_run),
    }
    if comparison is not None:
        view["changes"] = {c.field: c for c in comparison.changes.get(scenario_id, [])}
        view["is_new"] = scenario_id in comparison.added
        answer = view["changes"].get("final_answer")
        if answer is not None:
            view["answer_diff"] = answer_diff(answer.before, answer.after)
    view["cells"] = _cells(entry, columns, view["changes"])
    view["changed"] = bool(view["changes"]) or view["is_new"]
    view["search_text"] = _search_text(view)
    return view


def _samples_view(summary: Data, checks_run: Sequence[Data]) -> dict[str, Any]:
    """A repeated scenario's samples: each one's verdict, the agreement, and per expectation
    how many samples held it, pass@k and pass^k; the flaky expectations among them."""
    samples = list(summary.get("samples") or [])
    sampled = [check for check in checks_run if check.get("samples")]
    verdicts = "/".join(str(sample.get("verdict")) for sample in samples)
    rates: dict[str, Any] = {"columns": [], "rows": []}
    if sampled:
        rates["columns"] = [key for key in sampled[0]["samples"] if key != "flaky"]
        rates["rows"] = [
            {
                "name": check.get("name"),
                "flaky": check["samples"].get("flaky"),
                "cells": [_rate(check["samples"].get(key)) for key in rates["columns"]],
            }
            for check in sampled
        ]
    return {
        "samples": samples,
        "samples_text": f"{verdicts} · agree {summary.get('agreement')}" if samples else None,
        "flaky": [check for check in sampled if check["samples"].get("flaky")],
        "sample_rates": rates,
    }


def _rate(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _rounds(anchor: str, result: Data, invocations: Sequence[Data]) -> list[dict[str, Any]]:
    """Each round's view; the last one also says what was really published (the composer's
    record), beside its route's rule."""
    rounds = [round_view(anchor, data, invocations) for data in result.get("rounds") or []]
    composer = result.get("composer_output")
    for view in rounds:
        view["published"] = None
    if rounds and isinstance(composer, Mapping):
        rounds[-1]["published"] = published_text(composer)
    return rounds


def _anchor(index: int, scenario_id: str) -> str:
    # Readable fragments (report.html#scenario-matrix-gatekeeper-reject) that stay unique.
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", scenario_id).strip("-")
    return f"scenario-{index}-{slug}" if slug != scenario_id or not slug else f"scenario-{slug}"


def _search_text(view: Data) -> str:
    result = view["result"]
    parts = [view["id"], view["title"], view["file"], *view["tags"]]
    parts += [result.get("query", ""), result.get("final_answer", "")]
    return " ".join(str(part) for part in parts).lower()
