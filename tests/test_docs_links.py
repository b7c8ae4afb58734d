"""The README is short and leads everywhere: at most about 300 lines, a table of contents of its
own sections, every section of the longer pages linked; and every relative link of the README
and of ``docs/*.md`` reaches a file and, with ``#anchor``, a heading of it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
PENDING: frozenset[str] = frozenset()
"""Pages other work adds (the rule table, a case in five lines): linked before they exist."""
MOVED = {
    "docs/design.md": ["Layout"],
    "docs/pipeline.md": [
        "How a verdict is reached",
        "Scope: the question decides what may be claimed",
        "Evidence that gives orders",
        "Test your guards",
    ],
    "docs/guide.md": [
        "Run the suite",
        "What is collected",
        "Review a run in the browser",
        "A summary for CI",
        "Write a scenario",
        "Add a scenario to the shipped suite",
        "Checks of your own",
        "A graded rubric",
        "Run a scenario from a Python test",
        "Record a cassette",
        "Request options per stage",
        "Repeated samples: pass@k and pass^k",
        "Beside the tools you may know",
    ],
    "docs/reference.md": [
        "Script entries, stage by stage",
        "The world a scenario runs on",
        "What the tools return",
        "Command line",
    ],
    "docs/large-suites.md": ["Large suites, `-n` and other machines"],
}
"""The sections the README held before it was cut to its first steps, and where each lives."""


def headings(text: str) -> list[str]:
    """The Markdown headings of a page, outside fenced code."""
    found, fenced = [], False
    for line in text.splitlines():
        fenced ^= line.startswith("```")
        if not fenced and (match := re.match(r"^#{1,6} (.*)$", line)):
            found.append(match.group(1).strip())
    return found


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(page.read_text("utf-8")):
        if re.match(r"^[a-z]+:", target):
            continue  # a URL
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        pending = file.is_relative_to(ROOT) and file.relative_to(ROOT).as_posix() in PENDING
        if pending and not file.exists():
            continue
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif fragment and fragment not in {anchor(h) for h in headings(file.read_text("utf-8"))}:
            broken.append(f"{target}: no such heading")
    return broken


def test_the_readme_is_short_with_a_table_of_contents() -> None:
    text = README.read_text("utf-8")
    assert len(text.splitlines()) <= 300
    contents = text.split("## Contents", 1)[1].split("\n## ", 1)[0]
    for section in re.findall(r"^## (.*)$", text, re.MULTILINE):
        if section != "Contents":
            assert f"(#{anchor(section)})" in contents, section


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_reaches_its_file_and_heading(page: Path) -> None:
    assert broken_links(page) == []


@pytest.mark.parametrize("page", sorted(MOVED))
def test_every_moved_section_keeps_its_heading_and_its_page_is_linked(page: str) -> None:
    assert f"]({page}" in README.read_text("utf-8")
    kept = headings((ROOT / page).read_text("utf-8"))
    assert [h for h in MOVED[page] if h not in kept] == []


def test_a_link_to_a_missing_heading_or_file_is_named(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Top\n\n[ok](#top) [gone](#nowhere) [file](missing.md)\n", "utf-8")
    assert broken_links(page) == ["#nowhere: no such heading", "missing.md: no such file"]
