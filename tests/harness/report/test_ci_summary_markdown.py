"""The Markdown of the CI summary (``harness/report/ci_summary.py``) where real runs rarely go:
text with backticks, an allowed-verdict list as a table row, more failing scenarios than are
listed."""

from __future__ import annotations

from collections import Counter

from pytest_diageval.harness.report.ci_summary import (
    MAX_LISTED,
    FailingScenario,
    RunTotals,
    summary_markdown,
)


def test_a_headline_with_backticks_stays_one_code_span() -> None:
    headlines = ["forbidden_keywords: `已确认` found", "required_keywords: missing `PASS`"]
    failing = [FailingScenario("s", "scenarios/s.yaml", headlines)]

    markdown = summary_markdown(RunTotals(1, Counter(failed=2)), failing, None)

    # CommonMark: a longer fence than any backtick run inside; a space where text meets it.
    assert "- `s` (`scenarios/s.yaml`): ``forbidden_keywords: `已确认` found``" in markdown
    assert "  - `` required_keywords: missing `PASS` ``" in markdown
    assert "Verdict confusion: no verdict item ran." in markdown


def test_an_allowed_verdict_list_keeps_its_bar_inside_the_cell() -> None:
    counts = Counter({("LOW_CONFID|REJECT", "REJECT"): 2})
    confusion = (["LOW_CONFID|REJECT"], ["PASS", "LOW_CONFID", "REJECT"], counts)

    markdown = summary_markdown(RunTotals(2, Counter(passed=2)), [], confusion)

    assert markdown.splitlines()[0] == "## diageval: ✅ 2 scenarios passing"
    assert "| LOW_CONFID\\|REJECT | 0 | 0 | 2 |" in markdown.splitlines()


def test_failing_scenarios_past_the_limit_are_counted_not_listed() -> None:
    failing = [
        FailingScenario(f"s{n:03d}", f"scenarios/s{n:03d}.yaml", ["verdict: expected PASS"])
        for n in range(MAX_LISTED + 3)
    ]

    lines = summary_markdown(RunTotals(len(failing)), failing, None).splitlines()

    listed = [line for line in lines if line.startswith("- `s")]
    assert len(listed) == MAX_LISTED
    assert listed[-1].startswith(f"- `s{MAX_LISTED - 1:03d}`")
    assert "- … and 3 more failing scenarios (see the terminal)" in lines
    assert lines[0] == f"## diageval: ❌ {MAX_LISTED + 3} of {MAX_LISTED + 3} scenarios failing"
