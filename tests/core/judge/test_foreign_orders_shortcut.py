"""The foreign-order rules pass over a text that lacks a word they need without running their
pattern (``foreign_orders._required``); that shortcut never changes what a rule finds.

Checked on every text of the injection corpus (every file: injections, benign, held out), in
each reading the gatekeeper scans, and on sentences built from the table's own words (so
every rule also meets texts it does match)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_diageval.core.judge import foreign_orders
from pytest_diageval.core.text.unmasked import unmask

CORPUS = Path(__file__).resolve().parents[2] / "data" / "injection_corpus"
TEXTS = [
    json.loads(line)["text"]
    for path in sorted(CORPUS.glob("*.jsonl"))
    for line in path.read_text("utf-8").splitlines()
]
RULES = [
    "ignore", "directive", "assignment", "reader", "request", "value", "dedication", "closing"
]  # fmt: skip


def _built() -> list[str]:
    """One sentence per word pair of the sections each rule joins, both orders."""
    table = foreign_orders.foreign_vocabulary()
    assert table.drop  # the table is read
    forms = {section: sorted(words) for section, words in foreign_orders._forms().items()}
    pairs = [("drop", "orders"), ("produce", "values"), ("verdict", "values"), ("to", "reader")]
    texts = []
    for first, second in pairs:
        for a, b in zip(forms[first], forms[second] * 3, strict=False):
            texts += [f"bitte {a} {b} pass", f"{b} {a} 通过", f"{a}"]
    texts += [f"{reader}へ" for reader in forms["reader"]]
    for reader, verb, value in zip(forms["reader"], forms["drop"], forms["values"], strict=False):
        texts += [f"{reader}, {verb} pass", f"{reader} svar:\n{value}"]  # a hail, a closing
    texts += [f"log {reading} ok" for reading in forms["reading"]]
    return texts


def _searched(rule: str, native: str) -> str | None:
    match = foreign_orders._patterns()[rule].search(native)
    return match.group(0) if match is not None else None


@pytest.mark.parametrize("rule", RULES)
def test_the_shortcut_finds_what_the_pattern_finds(rule: str) -> None:
    natives = {unmask(text).native for text in TEXTS} | set(_built())
    found = {native: foreign_orders._found(rule, native) for native in natives}
    assert found == {native: _searched(rule, native) for native in natives}
    assert any(value is not None for value in found.values())  # the rule matched some
