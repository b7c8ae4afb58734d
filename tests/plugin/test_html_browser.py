"""The ``--diageval-html`` page in a real browser: headless Chromium, offline, from disk.

Driven by Playwright for Python with Debian's ``chromium`` package as the executable
(``executable_path``; ``playwright install`` is never run, nothing is downloaded). Playwright
rather than Selenium because its Python API reports console messages, page errors and every
request as events (so "no console error" and "nothing fetched" are plain lists), waits for
elements itself, and needs no driver binary matched to the browser's version; CI installs only
``apt-get install chromium``. The flags keep Chromium from reaching the network on its own
(updates, sync, first-run pages) so the only request is the report file itself.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

CHROMIUM = shutil.which("chromium")
if CHROMIUM is None:
    pytest.skip("no chromium installed (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

if TYPE_CHECKING:
    from conftest import ScenarioDir

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture
def report_file(pytester: pytest.Pytester, scenarios: ScenarioDir) -> Path:
    """The page of three scenarios after a change that moved one verdict (LOW_CONFID → PASS)."""
    scenarios.write_trio()
    pytester.runpytest("--diageval-report", "old.json").assert_outcomes(passed=13, failed=2)
    scenarios.write("scenarios/low.yaml", scenarios.low_confidence_now_supported())
    pytester.runpytest("--diageval-html", "new.html", "--diageval-baseline", "old.json")
    return pytester.path / "new.html"


class Browser:
    """One page of headless Chromium that remembers console errors and every request."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("request", lambda request: self.requests.append(request.url))

    def visible_rows(self) -> list[str]:
        rows = self.page.locator("#scenario-table tbody tr.scenario-row:visible td.scenario-id a")
        return [str(text) for text in rows.all_inner_texts()]


@pytest.fixture
def browser() -> Iterator[Browser]:
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            yield Browser(chromium.new_page(viewport={"width": 1400, "height": 900}))
        finally:
            chromium.close()


def test_the_report_works_offline_in_chromium(
    report_file: Path, browser: Browser, tmp_path: Path
) -> None:
    page = browser.page
    page.goto(report_file.as_uri())
    all_rows = ["forged-citation", "high-memory-positive", "memory-low-confidence"]
    assert browser.visible_rows() == all_rows
    assert page.inner_text("#shown-count") == "3 of 3 scenarios shown"

    # Filters change the visible rows (and hide the other scenarios' sections).
    page.select_option("#filter-verdict", "PASS")
    assert browser.visible_rows() == ["high-memory-positive", "memory-low-confidence"]
    assert page.is_hidden("#scenario-forged-citation")
    page.select_option("#filter-verdict", "")
    page.select_option("#filter-tag", "forgery")
    assert browser.visible_rows() == ["forged-citation"]
    page.select_option("#filter-tag", "")
    page.select_option("#filter-failure", "failing")
    assert browser.visible_rows() == ["forged-citation", "memory-low-confidence"]
    page.select_option("#filter-failure", "")
    page.fill("#filter-text", "伪造")
    assert browser.visible_rows() == ["forged-citation"]
    page.fill("#filter-text", "")

    # The baseline marks the moved verdict, and its filter keeps only that scenario.
    page.check("#filter-changed")
    assert browser.visible_rows() == ["memory-low-confidence"]
    changed = page.locator("tr.scenario-row:visible td.changed").all_inner_texts()
    assert changed == ["PASS\nwas LOW_CONFID", "1.0\nwas 0.6"]
    page.uncheck("#filter-changed")
    assert page.inner_text("#shown-count") == "3 of 3 scenarios shown"

    # Sorting by score puts the REJECT (0.0) first.
    page.click("#scenario-table th:has-text('score')")
    assert browser.visible_rows()[0] == "forged-citation"

    # Clicking a claim reveals the evidence it cites, highlighted.
    section = page.locator("#scenario-high-memory-positive")
    cited_log = section.locator("li.evidence-item", has_text="$.logs[4]")
    assert cited_log.is_hidden()  # inside a closed tool call
    section.locator(".claim", has_text="claim-1").first.click()
    assert cited_log.is_visible()
    assert "focus" in str(cited_log.get_attribute("class")).split()
    assert "内存使用率过高: 91.0%" in cited_log.inner_text()
    focused = section.locator("li.evidence-item.focus").all_inner_texts()
    assert [text.split()[0] for text in focused] == ["$.alerts[0]", "$.logs[4]"]

    screenshot = tmp_path / "report.png"
    page.screenshot(path=str(screenshot))
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert browser.errors == []
    assert browser.requests == [report_file.as_uri()]


# --------------------------------------------------------------------------- layout at 1400 px


def copy_suite(root: Path) -> None:
    """The shipped scenarios (and the cassettes the live ones replay) into ``root``."""
    repository = Path(__file__).resolve().parents[2]
    for folder in ("scenarios", "cassettes"):  # the live scenarios replay ../../cassettes/
        shutil.copytree(repository / folder, root / folder)


def edit_as_in_the_readme(root: Path) -> None:
    """docs/guide.md's review example on a copy of the suite: matrix 02's executor misquotes the
    heap usage; besides, one scenario allows two verdicts (``[LOW_CONFID, REJECT]``).

    ``docs/html_report_screenshots.py`` makes the same edits for the guide's pictures."""
    positive = root / "scenarios" / "matrix" / "02-highmemory-positive.yaml"
    text = positive.read_text("utf-8")
    assert text.count('evidence_excerpt: "JVM heap usage 3.8GB/4GB"') == 1
    positive.write_text(text.replace("JVM heap usage 3.8GB/4GB", "JVM heap usage 1.2GB/4GB"))
    partial = root / "scenarios" / "verifier" / "low-confid-partial-evidence.yaml"
    text = partial.read_text("utf-8")
    assert text.count("\n  verdict: LOW_CONFID\n") == 1
    partial.write_text(
        text.replace("\n  verdict: LOW_CONFID\n", "\n  verdict: [LOW_CONFID, REJECT]\n")
    )


@pytest.fixture(scope="module")
def shipped_demo_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page of the shipped suite after the guide's edit, against a baseline of the
    unedited suite: a failing row, a changed row with its "was" marks, the longest ids."""
    root = tmp_path_factory.mktemp("demo")
    copy_suite(root)

    def run(*options: str) -> None:
        command = [sys.executable, "-m", "pytest", "scenarios", "-q", "-p", "no:cacheprovider"]
        subprocess.run([*command, *options], cwd=root, check=False, capture_output=True)

    run("--diageval-report", "old.json")
    edit_as_in_the_readme(root)
    run("--diageval-html", "new.html", "--diageval-baseline", "old.json")
    return root / "new.html"


@pytest.fixture
def browser_with_scrollbars() -> Iterator[Browser]:
    """Chromium at 1400 px with real (space-taking) scrollbars, as a desktop shows them:
    Playwright hides them by default, which would hide 15 px of overflow."""
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_FLAGS, ignore_default_args=["--hide-scrollbars"]
        )
        try:
            yield Browser(chromium.new_page(viewport={"width": 1400, "height": 900}))
        finally:
            chromium.close()


def test_the_shipped_suite_reads_at_1400_px_without_scrolling_sideways_and_marks_a_failing_row(
    shipped_demo_report: Path, browser_with_scrollbars: Browser
) -> None:
    page = browser_with_scrollbars.page
    page.goto(shipped_demo_report.as_uri())

    visible = page.evaluate("document.documentElement.clientWidth")
    assert visible <= 1400
    assert page.evaluate("document.documentElement.scrollWidth") <= visible
    checks = page.locator("#scenario-table thead th", has_text="checks").bounding_box()
    assert checks is not None
    assert checks["x"] >= 0
    assert checks["x"] + checks["width"] <= visible
    # Still so with every row and section shown, the changed row's marks included.
    page.check("#filter-changed")
    assert "matrix-highmemory-positive" in browser_with_scrollbars.visible_rows()
    assert page.evaluate("document.documentElement.scrollWidth") <= visible
    assert browser_with_scrollbars.errors == []
    # The same page, loaded again (built once: running the suite twice is most of the time).
    page.goto(shipped_demo_report.as_uri())
    _a_failing_row_is_marked_in_words_and_colour(page)


def _a_failing_row_is_marked_in_words_and_colour(page: Any) -> None:
    failing = page.locator("tr.scenario-row.failing", has_text="matrix-highmemory-positive")
    status = failing.locator("td.status-cell")
    assert status.inner_text() == "✗ FAIL"
    passing = page.locator("tr.scenario-row:not(.failing) td.status-cell")
    assert set(passing.all_inner_texts()) == {"✓ pass"}
    # Colour too, not only the words: the whole failing row is tinted, its status cell filled.
    background = "getComputedStyle(el).backgroundColor"
    row_colour = failing.locator("td").nth(2).evaluate(f"el => {background}")
    plain_colour = (
        page.locator("tr.scenario-row:not(.failing) td").nth(2).evaluate(f"el => {background}")
    )
    assert row_colour != plain_colour
    assert status.evaluate(f"el => {background}") not in (plain_colour, row_colour)
