"""Writes labelled_claims_b.jsonl from the hand-written rows of _rows_b1.py and _rows_b2.py.

The rows are literal (no templating, no random choice); this script only numbers them
(tb-001 ...) and lays each out as one JSON line: id, lang, claim, claim_type, items, optional
question, label, fault (null when faithful) and note.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _rows_b1 import ROWS as ROWS_1  # noqa: E402
from _rows_b2 import ROWS as ROWS_2  # noqa: E402


def main() -> None:
    """Number the rows and write the JSON Lines file beside this script."""
    out = []
    for n, (lang, claim_type, claim, items, fault, question, note) in enumerate(ROWS_1 + ROWS_2, 1):
        row: dict[str, object] = {
            "id": f"tb-{n:03d}",
            "lang": lang,
            "claim": claim,
            "claim_type": claim_type,
            "items": items,
        }
        if question:
            row["question"] = question
        row["label"] = "unfaithful" if fault else "faithful"
        row["fault"] = fault
        if note:
            row["note"] = note
        out.append(json.dumps(row, ensure_ascii=False))
    (HERE / "labelled_claims_b.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
