"""docs/reliability.md says how many cases and classes the malformed-input corpus holds: the
numbers are the corpus's own."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from plugin.test_malformed_corpus import CASES

RELIABILITY = Path(__file__).resolve().parents[1] / "docs" / "reliability.md"


def test_the_reliability_page_counts_the_corpus_as_it_is() -> None:
    text = " ".join(RELIABILITY.read_text("utf-8").split())
    found = re.search(r"holds (\d+) cases in (\d+) classes \(([^)]*)\)", text)
    assert found is not None
    kinds = Counter(case.kind for case in CASES)
    by_class = ", ".join(f"{kind} {n}" for kind, n in kinds.most_common())
    assert found.groups() == (str(len(CASES)), str(len(kinds)), by_class)
