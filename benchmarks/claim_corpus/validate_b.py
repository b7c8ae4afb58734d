# ruff: noqa: E501  (hand-written rows and messages are kept whole, one per line)
"""Checks labelled_claims_b.jsonl: every line parses, ids unique with prefix tb-, required
fields, at least 10 pairs per fault class, a faithful share of 45-55 %, and a no-hit item cited
by every negative_observation. Prints the counts per class, claim type and language."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

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
TYPES = {"fact", "observation", "negative_observation", "root_cause", "hypothesis"}
ITEM_FIELDS = {
    "alert": {"service", "alert_name", "state", "current", "threshold", "duration", "description"},
    "log": {"timestamp", "level", "service", "message"},
    "runbook": {"title", "source", "content"},
    "no_hit": {"tool", "arguments", "window"},
}


def _row_problems(r: dict[str, Any]) -> list[str]:
    """What is wrong with one row: id, required fields, label and fault, items, no-hit."""
    rid = r.get("id", "?")
    out = [
        f"{rid}: missing {k}"
        for k in ("id", "lang", "claim", "claim_type", "items", "label")
        if not r.get(k)
    ]
    if not str(rid).startswith("tb-"):
        out.append(f"{rid}: id prefix")
    if r.get("lang") not in {"en", "zh", "mixed"} or r.get("claim_type") not in TYPES:
        out.append(f"{rid}: lang or claim_type")
    fault = r.get("fault")
    if (r.get("label") == "faithful") != (fault is None) or (
        fault is not None and fault not in FAULTS
    ):
        out.append(f"{rid}: label {r.get('label')} with fault {fault}")
    if fault == "excluded_topic" and not r.get("question"):
        out.append(f"{rid}: excluded_topic without a question")
    for item in r.get("items", []):
        missing = ITEM_FIELDS.get(item.get("kind"), {"kind"}) - item.keys()
        if missing:
            out.append(f"{rid}: item missing {sorted(missing)}")
    kinds = {i.get("kind") for i in r.get("items", [])}
    if r.get("claim_type") == "negative_observation" and "no_hit" not in kinds:
        out.append(f"{rid}: negative_observation without a no_hit")
    return out


def _load(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Parse every line; a line that does not parse is a problem."""
    rows, problems = [], []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            problems.append(f"line {n}: {exc}")
    return rows, problems


def _report(rows: list[dict[str, Any]]) -> list[str]:
    """Print the counts per class, claim type and language; return the set-level problems."""
    faults = Counter(r["fault"] for r in rows if r["label"] == "unfaithful")
    faithful = sum(r["label"] == "faithful" for r in rows)
    share = faithful / len(rows)
    print(
        f"pairs {len(rows)}, faithful {faithful} ({share:.1%}), unfaithful {len(rows) - faithful}"
    )
    for fault in sorted(FAULTS):
        print(f"  {fault:34s} {faults[fault]}")
    types = Counter((r["claim_type"], r["label"]) for r in rows)
    for t in sorted(TYPES):
        print(
            f"  {t:22s} faithful {types[(t, 'faithful')]:3d} / unfaithful {types[(t, 'unfaithful')]:3d}"
        )
    print("  lang", dict(Counter(r["lang"] for r in rows)))
    q = [r for r in rows if r.get("question")]
    print(f"  questions {len(q)}, faithful in scope {sum(r['label'] == 'faithful' for r in q)}")
    problems = [f"{f}: only {faults[f]}" for f in sorted(FAULTS) if faults[f] < 10]
    if not 0.45 <= share <= 0.55:
        problems.append(f"faithful share {share:.3f}")
    ids = [r.get("id") for r in rows]
    if len(set(ids)) != len(ids):
        problems.append("duplicate ids")
    return problems


def main() -> int:
    """Validate the file; print counts; exit 1 on any problem."""
    rows, problems = _load(Path(__file__).resolve().parent / "labelled_claims_b.jsonl")
    for r in rows:
        problems += _row_problems(r)
    problems += _report(rows)
    for p in problems:
        print("PROBLEM", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
