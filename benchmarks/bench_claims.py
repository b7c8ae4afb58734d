"""Read the claim check on labelled (claim, cited items) pairs: how often is it right?

Reads the training sets of ``benchmarks/claim_corpus/`` and the held-out sets of
``tests/data/claim_corpus/`` (each README says who wrote them and how: writers who never read
the checker). Each pair is one claim, its type and the items it cites, labelled faithful or
unfaithful with the class of fault. For each pair this script builds what the pipeline would
hold after a clean gatekeeper pass (one recorded invocation per cited item, made by the
recorder's own ref and item extraction; a no-hit item is a completed search with its own
arguments and nothing found; every binding passed, its excerpt the item's whole ref text; the
shipped default world's aliases), then asks the code the verdict relies on:

* ``claim_ceilings`` (``core/judge/claim_support.py``): a ceiling below what the bindings'
  kinds allow (direct, or indirect when a runbook is cited) flags the pair;
* the question's scope (``core/scope``), when the pair has a question, read from the claim and
  its cited items' fields: a scope problem (``scope.excluded_topic`` …) flags the pair.

The point sets (``--sets points``) carry ``points`` on each claim (``docs/points.md``): binding
N is the pair's N-th item, and the code decides the points instead of reading the text.

The script prints, per set and per fault class, the recall on unfaithful pairs and the false
rejects on faithful ones, then every miss and false reject with ``--list``. The corpus's claim
types ``fact`` and ``hypothesis`` are read as ``observation`` and ``risk``.

Run from the repository root: ``python benchmarks/bench_claims.py
[--sets training|held-out|points|all] [--list]``. Exit status 0 whatever the numbers: the
figures are the result.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from pytest_diageval.core.contract.contracts import (
    CheckedBinding,
    Claim,
    GatekeeperResult,
    RetrievalDetails,
    ToolInvocation,
)
from pytest_diageval.core.contract.gatekeeper_rules import NO_HIT_RAW_PATHS
from pytest_diageval.core.evidence.recorder import (
    EVIDENCE_LIST_KEYS,
    extract_evidence_items,
    extract_evidence_refs,
)
from pytest_diageval.core.evidence.world import load_world
from pytest_diageval.core.judge.claim_support import claim_ceilings, label_rank
from pytest_diageval.core.scope.claims import scope_problems
from pytest_diageval.core.scope.floor import scope_floor
from pytest_diageval.core.scope.session import cited_item_texts

__all__ = ["SETS", "flagged", "main"]

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "claim_corpus"
TRAINING = ROOT / "benchmarks" / "claim_corpus"
SETS = (
    ("held-out A", "heldout_claims_a.jsonl"),
    ("held-out B", "heldout_claims_b.jsonl"),
    ("held-out C", "heldout_claims_c.jsonl"),
    ("held-out D", "heldout_claims_d.jsonl"),
    ("held-out E", "heldout_claims_e.jsonl"),
    ("held-out F", "heldout_claims_f.jsonl"),
    ("held-out G", "heldout_claims_g.jsonl"),
    ("held-out H", "heldout_claims_h.jsonl"),
)
POINT_SETS = (
    ("points I", "heldout_points_i.jsonl"),
    ("points J", "heldout_points_j.jsonl"),
    ("points K", "heldout_points_k.jsonl"),
    ("points L", "heldout_points_l.jsonl"),
    ("points M", "heldout_points_m.jsonl"),
    ("points N", "heldout_points_n.jsonl"),
)
"""Held-out pairs whose claims carry points (``docs/points.md``): the code reads the points,
not the text; written against that page by helpers who never read the checker."""
TRAINING_SETS = (
    ("training A", "labelled_claims_a.jsonl"),
    ("training B", "labelled_claims_b.jsonl"),
)
_TOOL = {"alert": "query_metrics", "log": "query_logs", "runbook": "lookup_knowledge"}
_TYPE = {"fact": "observation", "hypothesis": "risk"}


def load(name: str) -> list[dict[str, Any]]:
    """The pairs of one set (held-out or training), no-hit items in one shape."""
    folder = TRAINING if (TRAINING / name).exists() else CORPUS
    lines = (folder / name).read_text("utf-8").splitlines()
    pairs = [json.loads(line) for line in lines if line.strip()]
    for pair in pairs:
        pair["items"] = [_no_hit_shape(item) for item in pair["items"]]
    return pairs


def _no_hit_shape(item: dict[str, Any]) -> dict[str, Any]:
    """A no-hit as the held-out sets write it: ``arguments`` with service, keywords, level,
    start and end (the training sets put some of these beside ``arguments``)."""
    if item["kind"] != "no_hit":
        return item
    arguments = dict(item.get("arguments") or {})
    for key in ("service", "keywords", "level", "alert_name"):
        if item.get(key) is not None:
            arguments.setdefault(key, item[key])
    window = item.get("window") or {}
    for key in ("start", "end"):
        if window.get(key):
            arguments.setdefault(key, window[key])
    return {**item, "arguments": arguments}


def _invocation(number: int, item: dict[str, Any]) -> tuple[ToolInvocation, str, str]:
    """The recorded call that returned ``item``, the raw path citing it and its ref text."""
    if item["kind"] == "no_hit":
        tool = item["tool"]
        output: dict[str, Any] = {EVIDENCE_LIST_KEYS[tool]: [], "total": 0}
        params = {k: v for k, v in item.get("arguments", {}).items() if v is not None}
        status = "no_evidence"
    else:
        tool = _TOOL[item["kind"]]
        fields = {k: v for k, v in item.items() if k != "kind"}
        output = {EVIDENCE_LIST_KEYS[tool]: [fields], "total": 1}
        params = {"service": fields["service"]} if "service" in fields else {}
        status = "supported"
    refs = extract_evidence_refs(tool, output)
    details = RetrievalDetails(
        evidence_status=status,  # type: ignore[arg-type]
        evidence_refs=refs,
        evidence_items=extract_evidence_items(tool, output),
        total=output["total"],
    )
    row = ToolInvocation(
        id=number,
        session_id="corpus",
        round=1,
        tool_name=tool,
        input_params=params,
        duration_ms=0,
        success=True,
        retrieval_details=details,
    )
    if not refs:
        return row, NO_HIT_RAW_PATHS[tool], "[]"
    return row, refs[0].raw_path, refs[0].text


def flagged(pair: dict[str, Any]) -> list[str]:
    """Why the code rejects the pair's claim ([] when it lets it through)."""
    rows, bindings, checked = [], [], []
    for number, item in enumerate(pair["items"], start=1):
        row, path, text = _invocation(number, item)
        rows.append(row)
        binding = {
            "tool_name": row.tool_name,
            "source_invocation_id": number,
            "raw_path": path,
            "evidence_excerpt": text,
        }
        bindings.append(binding)
        checked.append(
            CheckedBinding(claim_id="c", status="pass", matched_text=text, **binding)  # type: ignore[arg-type]
        )
    claim_type = _TYPE.get(pair["claim_type"], pair["claim_type"])
    claim = Claim.model_validate(
        {"claim_id": "c", "claim_type": claim_type, "claim_text": pair["claim"],
         "evidence_bindings": bindings, "points": pair.get("points", [])}
    )  # fmt: skip
    gate = GatekeeperResult(status="pass", severity="none", checked_bindings=checked)
    ceiling = claim_ceilings([claim], gate, rows, _aliases())["c"]
    # What the bindings' kinds alone allow: direct, or indirect when a runbook is cited. A
    # pair is flagged when the claim is held below that (a rule read what it says).
    most = "indirect_support" if any(i["kind"] == "runbook" for i in pair["items"]) else None
    held = label_rank(ceiling.ceiling) < label_rank(most or "direct_evidence")
    reasons = [ceiling.rule or ceiling.ceiling] if held else []
    question = pair.get("question")
    if question:
        services = sorted({i["service"] for i in pair["items"] if i.get("service")})
        alerts = sorted({i["alert_name"] for i in pair["items"] if i.get("alert_name")})
        scope = scope_floor(question, services, alerts)
        texts = cited_item_texts(claim, rows, gate)
        reasons += [
            p.rule
            for p in scope_problems(
                claim_type, pair["claim"], scope, services, alerts, item_texts=texts
            )
        ]
    return reasons


@functools.cache
def _aliases() -> dict[str, str]:
    """The shipped default world's aliases (支付服务 -> payment-service), as a run has them."""
    return load_world("default").entity_aliases()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--list", action="store_true", help="print every miss and false reject")
    parser.add_argument(
        "--sets",
        choices=("training", "held-out", "points", "all"),
        default="all",
        help="which sets to read (tune on training; read held-out once per change)",
    )
    args = parser.parse_args(argv)
    chosen = {
        "training": TRAINING_SETS,
        "held-out": SETS,
        "points": POINT_SETS,
        "all": TRAINING_SETS + SETS + POINT_SETS,
    }
    for name, file in chosen[args.sets]:
        _report(name, load(file), args.list)
    return 0


def _report(name: str, pairs: list[dict[str, Any]], listing: bool) -> None:
    total: Counter[str] = Counter()
    caught: Counter[str] = Counter()
    misses, false_rejects = [], []
    for pair in pairs:
        kind = pair["fault"] or "faithful"
        total[kind] += 1
        reasons = flagged(pair)
        if reasons:
            caught[kind] += 1
        if pair["label"] == "unfaithful" and not reasons:
            misses.append(pair)
        if pair["label"] == "faithful" and reasons:
            false_rejects.append((pair, reasons))
    unfaithful = sum(n for k, n in total.items() if k != "faithful")
    found = sum(n for k, n in caught.items() if k != "faithful")
    print(
        f"== {name}: recall on unfaithful {found}/{unfaithful} = {found / unfaithful:.3f},"
        f" false rejects on faithful {caught['faithful']}/{total['faithful']}"
        f" = {caught['faithful'] / total['faithful']:.3f}"
    )
    print(f"{'class':34} | pairs | flagged | share")
    for kind in sorted(total):
        print(f"{kind:34} | {total[kind]:5} | {caught[kind]:7} | {caught[kind] / total[kind]:.3f}")
    print()
    if listing:
        for pair in misses:
            print(f"  missed {pair['id']} [{pair['fault']}] {pair['claim'][:90]!r}")
        for pair, reasons in false_rejects:
            print(f"  false reject {pair['id']} {reasons} {pair['claim'][:80]!r}")
        print()


if __name__ == "__main__":
    sys.exit(main())
