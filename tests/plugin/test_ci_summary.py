"""The Markdown summary of a run (``--diageval-summary`` and ``$GITHUB_STEP_SUMMARY``) in real
pytest runs: totals, the confusion counts, each failing scenario with the headline JUnit shows,
the changes since a baseline and the HTML page; appended to GitHub's job summary (never
overwriting it), written once under ``-n 2``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from xml.etree import ElementTree

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir

LEAN = ("-p", "no:hypothesispytest", "--assert=plain")
BAD_SCENARIO = "title: x\nquery: q\nworld: default\nexpect: {verdict: MAYBE}\n"
FORGED_VERDICT = "verdict: expected PASS, got REJECT (gatekeeper reject: evidence.excerpt_mismatch)"
TRIO_TOTALS = [
    "| scenarios | checks passed | checks failed | checks skipped | invalid scenario files |",
    "|--:|--:|--:|--:|--:|",
]
TRIO_CONFUSION = [
    "Verdict confusion (rows: expected, columns: actual):",
    "",
    "| expected \\ actual | PASS | LOW_CONFID | REJECT |",
    "|---|--:|--:|--:|",
    "| PASS | 1 | 0 | 1 |",
    "| LOW_CONFID | 0 | 1 | 0 |",
    "",
]


def _junit_messages(path: Path) -> dict[str, str]:
    """Each failed test case's JUnit ``message`` by ``classname::name``."""
    messages = {}
    for case in ElementTree.parse(path).iter("testcase"):
        failure = case.find("failure")
        if failure is not None:
            messages[f"{case.attrib['classname']}::{case.attrib['name']}"] = failure.attrib[
                "message"
            ]
    return messages


def _section(markdown: str, heading: str) -> list[str]:
    """The lines of one ``###`` section, without its heading and blank edges."""
    lines = markdown.splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("#")), len(lines))
    return [line for line in lines[start:end] if line]


def test_a_failing_scenario_is_listed_with_the_headline_junit_shows(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()
    scenarios.write_text("scenarios/bad.yaml", BAD_SCENARIO)

    result = pytester.runpytest("--junitxml", "junit.xml", "--diageval-summary", "out/ci.md")

    result.assert_outcomes(passed=13, failed=3)
    assert "diageval summary written to out/ci.md" in result.outlines
    junit = _junit_messages(pytester.path / "junit.xml")
    assert junit["scenarios.forged.yaml.forged-citation::verdict"] == FORGED_VERDICT
    answer = junit["scenarios.forged.yaml.forged-citation::answer"]
    assert answer == "answer: expected direct, got degraded"
    invalid = junit["scenarios.bad.yaml::invalid-scenario"]
    assert invalid.startswith("scenarios/bad.yaml:4: expect.verdict: 'MAYBE' is not one of")
    markdown = (pytester.path / "out" / "ci.md").read_text("utf-8")
    assert markdown.splitlines() == [
        "## diageval: ❌ 1 of 3 scenarios failing, 1 invalid scenario file",
        "",
        *TRIO_TOTALS,
        "| 3 | 13 | 2 | 0 | 1 |",
        "",
        *TRIO_CONFUSION,
        "### Failing scenarios",
        "",
        f"- `forged-citation` (`scenarios/forged.yaml`): `{FORGED_VERDICT}`",
        f"  - `{answer}`",
        f"- invalid scenario file `scenarios/bad.yaml`: `{invalid}`",
    ]
    assert markdown.endswith("`\n")


def test_a_baseline_and_the_page_are_in_the_summary(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()
    pytester.runpytest("--diageval-report", "old.json").assert_outcomes(passed=13, failed=2)
    scenarios.write("scenarios/low.yaml", scenarios.low_confidence_now_supported())

    result = pytester.runpytest(
        "--diageval-baseline", "old.json", "--diageval-html", "new.html",
        "--diageval-summary", "ci.md",
    )  # fmt: skip

    result.assert_outcomes(passed=11, failed=4)
    markdown = (pytester.path / "ci.md").read_text("utf-8")
    assert markdown.splitlines()[0] == "## diageval: ❌ 2 of 3 scenarios failing"
    # The low-confidence scenario still pins LOW_CONFID: its verdict item fails now.
    assert _section(markdown, "### Failing scenarios") == [
        f"- `forged-citation` (`scenarios/forged.yaml`): `{FORGED_VERDICT}`",
        "  - `answer: expected direct, got degraded`",
        "- `memory-low-confidence` (`scenarios/low.yaml`):"
        " `verdict: expected LOW_CONFID, got PASS (score 1.0; overrides: verdict.matrix,"
        " verdict.score)`",
        "  - `answer: expected disclaimer, got direct`",
    ]
    assert _section(markdown, "### Changes since baseline") == [
        "changes since baseline `old.json`: 1 of 3 compared scenarios changed",
        "- `memory-low-confidence`: `verdict LOW_CONFID → PASS; score 0.6 → 1.0;"
        " answer kind disclaimer → direct; final answer changed`",
        "HTML report: `new.html`",
    ]
    assert (pytester.path / "new.html").is_file()


def test_the_job_summary_is_appended_to_once_per_run_also_under_xdist(
    pytester: pytest.Pytester, scenarios: ScenarioDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenarios.write_trio()
    scenarios.write_text("scenarios/bad.yaml", BAD_SCENARIO)  # fails on a worker
    job_summary = pytester.path / "step-summary.md"
    job_summary.write_text("### An earlier step's summary\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(job_summary))

    single = pytester.runpytest("--diageval-summary", "single.md")
    parallel = pytester.runpytest_subprocess(*LEAN, "-n", "2")

    single.assert_outcomes(passed=13, failed=3)
    parallel.assert_outcomes(passed=13, failed=3)
    assert f"diageval summary appended to $GITHUB_STEP_SUMMARY ({job_summary})" in (
        parallel.outlines
    )
    markdown = (pytester.path / "single.md").read_text("utf-8")
    assert markdown.startswith(
        "## diageval: ❌ 1 of 3 scenarios failing, 1 invalid scenario file\n"
    )
    assert "| 3 | 13 | 2 | 0 | 1 |" in markdown.splitlines()
    # Appended after what was there, one blank line between; the workers wrote nothing.
    assert job_summary.read_text("utf-8") == (
        f"### An earlier step's summary\n\n{markdown}\n{markdown}"
    )


def test_a_run_without_scenarios_leaves_the_job_summary_alone(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    job_summary = pytester.path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(job_summary))

    quiet = pytester.runpytest()
    asked = pytester.runpytest("--diageval-summary", "ci.md")

    quiet.assert_outcomes(passed=1)
    asked.assert_outcomes(passed=1)
    assert not job_summary.exists()
    assert (pytester.path / "ci.md").read_text("utf-8").splitlines()[:5] == [
        "## diageval: no scenario ran",
        "",
        *TRIO_TOTALS,
        "| 0 | 0 | 0 | 0 | 0 |",
    ]


def test_a_summary_path_that_cannot_be_written_stops_the_run_before_it_starts(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    (pytester.path / "taken").write_text("a file, not a folder", encoding="utf-8")

    result = pytester.runpytest("--diageval-summary", "taken/ci.md")
    folder = pytester.runpytest("--diageval-summary", "scenarios")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "argument --diageval-summary: 'taken/ci.md' lies under taken, which is a file, not a"
        " folder" in str(result.stderr)
    )
    assert folder.ret == pytest.ExitCode.USAGE_ERROR
    assert "'scenarios' is a directory; give the Markdown file to write" in str(folder.stderr)


def test_a_mutation_run_refuses_the_summary_option(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())

    result = pytester.runpytest("--diageval-mutate", "--diageval-summary", "ci.md")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--diageval-summary summarises scenario runs" in str(result.stderr)
    assert not (pytester.path / "ci.md").exists()
