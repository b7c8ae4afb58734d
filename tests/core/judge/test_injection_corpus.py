"""The labelled injection corpus (tests/data/injection_corpus/) is what its README says: sizes,
ids, groups, and encoded items that really decode to their instruction; and the detector meets
issue 26's goal on it (the per-group numbers are benchmarks/bench_injection.py's)."""

from __future__ import annotations

import base64
import binascii
import json
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_diageval.core.judge.instruction_like import instruction_signals

CORPUS = Path(__file__).resolve().parents[2] / "data" / "injection_corpus"
INJECTION_GROUPS = {
    "standard", "polite_request", "zh_synonyms", "markdown", "json_key", "verdict_is",
    "spaced_letters", "homoglyph", "role_tokens", "encoded", "split_rows", "zero_width",
    "fullwidth", "multilingual_other", "public_collection", "any_addressee", "displaced_verdict",
    "split_fields",
}  # fmt: skip
BENIGN_GROUPS = {
    "app_log", "alert_description", "runbook", "ci_batch", "risk_engine", "http_error",
    "hard_negative", "chat_template_like",
}  # fmt: skip


def _load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (CORPUS / name).read_text("utf-8").splitlines()]


INJECTIONS = _load("injections.jsonl")
BENIGN = _load("benign.jsonl")


@pytest.mark.parametrize(
    ("items", "prefix", "groups", "minimum"),
    [(INJECTIONS, "inj", INJECTION_GROUPS, 150), (BENIGN, "ben", BENIGN_GROUPS, 300)],
    ids=["injections", "benign"],
)
def test_a_corpus_file_has_sequential_ids_known_groups_and_its_size(
    items: list[dict[str, Any]], prefix: str, groups: set[str], minimum: int
) -> None:
    assert len(items) >= minimum
    assert [item["id"] for item in items] == [f"{prefix}-{n:03d}" for n in range(1, len(items) + 1)]
    assert set(Counter(item["group"] for item in items)) == groups
    assert {item["lang"] for item in items} <= {"zh", "en", "mixed"}
    assert all(item["text"].strip() for item in items)


def test_no_text_is_in_the_corpus_twice() -> None:
    texts = [item["text"] for item in INJECTIONS + BENIGN]
    assert len(set(texts)) == len(texts)


@pytest.mark.parametrize(
    "item", [i for i in INJECTIONS if i["group"] == "encoded"], ids=lambda item: item["id"]
)
def test_an_encoded_injection_decodes_to_its_instruction(item: dict[str, Any]) -> None:
    encoded = item["encoded"]
    assert encoded in item["text"]
    assert len(encoded) >= 16
    decode = {
        "base64": lambda s: base64.b64decode(s, validate=True),
        "hex": binascii.unhexlify,
        "url": lambda s: urllib.parse.unquote(s).encode(),
    }[item["encoding"]]
    assert decode(encoded).decode("utf-8") == item["decoded"]


def _flagged(text: str) -> bool:
    """As the gatekeeper reads an item: whole, or a row with the rows beside it."""
    rows = [row for row in text.splitlines() if row.strip()]
    return bool(instruction_signals(text)) or any(
        instruction_signals(
            row,
            before=rows[i - 1] if i else None,
            after=rows[i + 1] if i + 1 < len(rows) else None,
        )
        for i, row in enumerate(rows)
    )


def test_the_detector_meets_issue_26s_goal_on_the_corpus() -> None:
    """Recall >= 0.95 on injections and false alarms <= 1 % on benign lines (issue 26); the
    misses and false alarms are named so that a regression says which phrasing it lost."""
    misses = [item["id"] for item in INJECTIONS if not _flagged(item["text"])]
    alarms = [item["id"] for item in BENIGN if _flagged(item["text"])]
    assert len(misses) <= 0.05 * len(INJECTIONS), misses
    assert len(alarms) <= 0.01 * len(BENIGN), alarms
