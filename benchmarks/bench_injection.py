"""Measure the detector of evidence that gives orders on the labelled corpus.

Reads ``tests/data/injection_corpus/injections.jsonl`` and ``benign.jsonl`` (their README says
where each group came from), runs :func:`instruction_signals` over every text and prints, per
group, how many injections it caught (recall) and how many benign lines it flagged (false
alarms), then every miss and every false alarm with its id, and the detector's throughput.
Issue 26's goal: recall >= 0.95 on injections with false alarms <= 1 % on benign lines.

Run from the repository root: ``python benchmarks/bench_injection.py [--list]``; ``--list``
prints every miss and false alarm in full. Exit status 0 whatever the numbers: the figures
are the result.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pytest_diageval.core.judge.instruction_like import instruction_signals

__all__ = ["SETS", "load", "main", "measure"]

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "injection_corpus"


def load(name: str) -> list[dict[str, Any]]:
    lines = (CORPUS / name).read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def flagged(text: str) -> bool:
    """The detector's verdict on one text, as the gatekeeper reads it: the whole text (one
    item), or any of its rows read with the rows beside it (a ``split_rows`` text is two
    log rows of one search, separated by a newline)."""
    rows = [row for row in text.splitlines() if row.strip()]
    return bool(instruction_signals(text)) or any(
        instruction_signals(
            row,
            before=rows[index - 1] if index else None,
            after=rows[index + 1] if index + 1 < len(rows) else None,
        )
        for index, row in enumerate(rows)
    )


def measure(items: list[dict[str, Any]]) -> tuple[Counter[str], Counter[str], list[dict[str, Any]]]:
    """Per group: items and flagged items; and the items flagged."""
    total: Counter[str] = Counter()
    hits: Counter[str] = Counter()
    caught = []
    for item in items:
        total[item["group"]] += 1
        if flagged(item["text"]):
            hits[item["group"]] += 1
            caught.append(item)
    return total, hits, caught


def _table(title: str, total: Counter[str], hits: Counter[str], rate: str) -> None:
    print(f"{title:24} | items | {rate:>7} | share")
    for group in sorted(total):
        share = hits[group] / total[group]
        print(f"{group:24} | {total[group]:5} | {hits[group]:7} | {share:.3f}")
    all_items, all_hits = sum(total.values()), sum(hits.values())
    print(f"{'all':24} | {all_items:5} | {all_hits:7} | {all_hits / all_items:.3f}\n")


SETS = (
    ("corpus", "injections.jsonl", "benign.jsonl"),
    ("held-out 1", "heldout_injections.jsonl", "heldout_benign.jsonl"),
    ("held-out 2", "heldout2_injections.jsonl", "heldout2_benign.jsonl"),
    ("held-out 3", "heldout3_injections.jsonl", "heldout3_benign.jsonl"),
    ("held-out 4", "heldout4_injections.jsonl", "heldout4_benign.jsonl"),
    ("held-out 5", "heldout5_injections.jsonl", "heldout5_benign.jsonl"),
)
"""The labelled corpus the goal is set on, then the three sets written later by writers who had
not seen the detector (the corpus README says which was used to tune, and when)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--list", action="store_true", help="print every miss and false alarm")
    parser.add_argument("--summary", action="store_true", help="only one line per set")
    args = parser.parse_args(argv)
    for name, injection_file, benign_file in SETS:
        if (CORPUS / injection_file).exists():
            _report(name, load(injection_file), load(benign_file), args)
    return 0


def _report(
    name: str, injections: list[dict[str, Any]], benign: list[dict[str, Any]], args: Any
) -> None:
    started = time.perf_counter()
    total, hits, caught = measure(injections)
    benign_total, alarms, false_alarms = measure(benign)
    seconds = time.perf_counter() - started
    recall, alarm_rate = len(caught) / len(injections), len(false_alarms) / len(benign)
    print(
        f"== {name}: recall {len(caught)}/{len(injections)} = {recall:.3f},"
        f" false alarms {len(false_alarms)}/{len(benign)} = {alarm_rate:.3f}"
    )
    if args.summary:
        return
    _table("injection group", total, hits, "caught")
    _table("benign group", benign_total, alarms, "flagged")
    caught_ids = {item["id"] for item in caught}
    misses = [item for item in injections if item["id"] not in caught_ids]
    for label, items in (("missed", misses), ("false alarm", false_alarms)):
        print(f"{label}: {len(items)}")
        for item in items if args.list else items[:10]:
            print(f"  {item['id']} [{item['group']}] {item['text'][:100]!r}")
    texts = len(injections) + len(benign)
    print(f"\n{texts} texts in {seconds * 1000:.0f} ms ({texts / seconds:,.0f} texts/s)\n")


if __name__ == "__main__":
    sys.exit(main())
