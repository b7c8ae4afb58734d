"""Regenerate docs/guide.md's two pictures of the HTML report from the current suite.

    .venv/bin/python docs/html_report_screenshots.py            # writes docs/html-report-*.png
    .venv/bin/python docs/html_report_screenshots.py --keep DIR # and keeps the run in DIR

What it does, as docs/guide.md's "Review a run in the browser" tells it: copy ``scenarios/`` and
``cassettes/`` into a scratch directory, run the suite for a baseline (``--diageval-report
old.json``), make matrix 02's executor misquote the heap usage (``JVM heap usage 1.2GB/4GB``),
run it again with ``--diageval-html new.html --diageval-baseline old.json``, and photograph the
page in headless Chromium (Debian's ``chromium`` driven by Playwright, as in
``tests/plugin/test_html_browser.py``) at 1400 x 900:

* ``docs/html-report-overview.png``: the overview filtered to the tag ``acceptance_matrix``;
* ``docs/html-report-evidence.png``: matrix 02's ``claim-1`` clicked, its cited items lit.

The run's own outcome does not matter (matrix 02 fails on purpose); only the page is used.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

REPOSITORY = Path(__file__).resolve().parents[1]
DOCS = REPOSITORY / "docs"
VIEWPORT = {"width": 1400, "height": 900}
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
POSITIVE = Path("scenarios") / "matrix" / "02-highmemory-positive.yaml"
QUOTED, MISQUOTED = "JVM heap usage 3.8GB/4GB", "JVM heap usage 1.2GB/4GB"


def pytest(root: Path, *options: str) -> None:
    command = [sys.executable, "-m", "pytest", "scenarios", "-q", "-p", "no:cacheprovider"]
    subprocess.run([*command, *options], cwd=root, check=False, stdout=subprocess.DEVNULL)


def build_report(root: Path) -> Path:
    """The guide's review run in ``root``; the path of its page."""
    for folder in ("scenarios", "cassettes"):  # the live scenarios replay ../../cassettes/
        shutil.copytree(REPOSITORY / folder, root / folder)
    pytest(root, "--diageval-report", "old.json")
    positive = root / POSITIVE
    text = positive.read_text("utf-8")
    if text.count(f'evidence_excerpt: "{QUOTED}"') != 1:
        raise SystemExit(f"{POSITIVE} no longer quotes {QUOTED!r} once: update this script")
    positive.write_text(text.replace(QUOTED, MISQUOTED), "utf-8")
    pytest(root, "--diageval-html", "new.html", "--diageval-baseline", "old.json")
    return root / "new.html"


def photograph(page_file: Path, docs: Path) -> None:
    chromium_path = shutil.which("chromium")
    if chromium_path is None:
        raise SystemExit("no chromium: apt-get install chromium fonts-wqy-microhei")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_FLAGS)
        try:
            page = chromium.new_page(viewport=VIEWPORT)
            page.goto(page_file.as_uri())
            page.select_option("#filter-tag", "acceptance_matrix")
            page.screenshot(path=str(docs / "html-report-overview.png"))
            section = page.locator("#scenario-matrix-highmemory-positive")
            section.locator(".claim", has_text="claim-1").first.click()
            cited = section.locator("li.evidence-item.focus").last
            cited.evaluate("item => item.scrollIntoView({block: 'start'})")
            page.evaluate("window.scrollBy(0, -260)")  # the item, then the claim below it
            page.screenshot(path=str(docs / "html-report-evidence.png"))
        finally:
            chromium.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", type=Path, help="run in this (new) directory and keep it")
    arguments = parser.parse_args()
    if arguments.keep is not None:
        arguments.keep.mkdir(parents=True)
        photograph(build_report(arguments.keep), DOCS)
        return
    with tempfile.TemporaryDirectory(prefix="diageval-screenshots-") as scratch:
        photograph(build_report(Path(scratch)), DOCS)


if __name__ == "__main__":
    main()
