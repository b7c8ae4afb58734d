"""Checks the hand-written training set A of issue 37 (labelled_claims_a.jsonl) for shape.

It is a format check, not a reading of the claims: every line parses, ids are unique and
start with ``ta-``, each pair has the required fields and legal values, each item has the
fields of its kind, each fault class has at least 10 pairs, the faithful share is 45-55 %,
and every negative observation cites a no-hit. It prints the counts the README reports.
Run from the repository root: ``python benchmarks/claim_corpus/check_set_a.py``.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

FILE = Path(__file__).with_name("labelled_claims_a.jsonl")
CLAIM_TYPES = {"fact", "observation", "negative_observation", "root_cause", "hypothesis"}
FAULTS = {
    "label_swap",
    "clause_polarity",
    "modality",
    "causal_link_across_items",
    "subject",
    "time",
    "unit",
    "entity_not_in_item",
    "unsupported_negative_observation",
    "excluded_topic",
}
REQUIRED = ("id", "lang", "claim", "claim_type", "items", "label", "fault")
ITEM_FIELDS = {
    "alert": {
        "service",
        "alert_name",
        "state",
        "severity",
        "current",
        "threshold",
        "duration",
        "description",
    },
    "log": {"timestamp", "level", "service", "message"},
    "runbook": {"title", "source", "content"},
    "no_hit": {"tool", "service", "keywords", "level", "window", "message"},
}


def _label_problems(pid: str, p: dict[str, object]) -> list[str]:
    """Problems of one pair's fields and label."""
    found = [f"{pid}: missing {f}" for f in REQUIRED if f not in p]
    if not pid.startswith("ta-"):
        found.append(f"{pid}: id without the ta- prefix")
    if p.get("lang") not in {"zh", "en", "mixed"}:
        found.append(f"{pid}: lang {p.get('lang')!r}")
    if p.get("claim_type") not in CLAIM_TYPES:
        found.append(f"{pid}: claim_type {p.get('claim_type')!r}")
    label, fault = p.get("label"), p.get("fault")
    if (label, fault is None) != ("faithful", True) and not (
        label == "unfaithful" and fault in FAULTS
    ):
        found.append(f"{pid}: label {label!r} with fault {fault!r}")
    if fault == "excluded_topic" and not p.get("question"):
        found.append(f"{pid}: excluded_topic without a question")
    return found


def _item_problems(pid: str, p: dict[str, object]) -> list[str]:
    """Problems of one pair's cited items, and of a no-hit's claim type."""
    items = p.get("items")
    if not isinstance(items, list) or not items:
        return [f"{pid}: no items"]
    found = []
    for item in items:
        need = ITEM_FIELDS.get(item.get("kind"))
        if need is None:
            found.append(f"{pid}: item kind {item.get('kind')!r}")
        elif not need <= item.keys():
            found.append(f"{pid}: {item['kind']} item lacks {sorted(need - item.keys())}")
    negative = p.get("claim_type") == "negative_observation"
    if negative != any(item.get("kind") == "no_hit" for item in items):
        found.append(f"{pid}: a negative observation must cite a no_hit, and only it may")
    return found


def problems(pairs: list[dict[str, object]]) -> list[str]:
    """Every shape problem of the set, as one line each (empty when the set is sound)."""
    ids = Counter(str(p.get("id")) for p in pairs)
    found = [f"duplicate id {i}" for i, n in ids.items() if n > 1]
    for p in pairs:
        pid = str(p.get("id"))
        found += _label_problems(pid, p) + _item_problems(pid, p)
    faults = Counter(str(p.get("fault")) for p in pairs if p.get("label") == "unfaithful")
    found += [f"only {faults[f]} pairs of {f}" for f in sorted(FAULTS) if faults[f] < 10]
    share = sum(p.get("label") == "faithful" for p in pairs) / max(len(pairs), 1)
    if not 0.45 <= share <= 0.55:
        found.append(f"faithful share {share:.3f} outside 0.45-0.55")
    return found


def main() -> int:
    """Loads the set (a line that does not parse stops it), prints counts and problems."""
    lines = FILE.read_text(encoding="utf-8").splitlines()
    pairs = [json.loads(line) for line in lines if line.strip()]
    faithful = sum(p["label"] == "faithful" for p in pairs)
    print(f"pairs {len(pairs)}: faithful {faithful} ({faithful / len(pairs):.1%})")
    for fault, n in sorted(Counter(p["fault"] for p in pairs if p["fault"]).items()):
        print(f"  {fault:34} {n}")
    for ctype in sorted(CLAIM_TYPES):
        f = sum(p["claim_type"] == ctype and p["label"] == "faithful" for p in pairs)
        u = sum(p["claim_type"] == ctype and p["label"] == "unfaithful" for p in pairs)
        print(f"  {ctype:34} {f} / {u}")
    print("  lang", dict(Counter(p["lang"] for p in pairs)))
    asked = [p for p in pairs if p.get("question")]
    in_scope = sum(p["label"] == "faithful" for p in asked)
    print(f"  questions {len(asked)} ({in_scope} faithful in scope)")
    found = problems(pairs)
    print("\n".join(found) or "no problems")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
