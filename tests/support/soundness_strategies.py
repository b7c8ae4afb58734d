"""Hypothesis strategies for the soundness property: contracts, verifier outputs, answers.

Every part is biased toward what a PASS needs (faithful bindings, bound refs, direct labels),
so that most examples sit one deviation away from a PASS: a forged or runbook binding, no
binding, an unbound or unknown ref, a demoted or invented fact, an extra sentence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from support.soundness_cases import (
    ACTIONS,
    CLAIM_TEXTS,
    EXTRAS,
    FRAMING,
    HEDGES,
    HIDDEN,
    INCIDENT_REFS,
    NEGATIVE_KEYS,
    NO_HIT_ID,
    PARAPHRASES,
    RUNBOOK_REFS,
    TEMPLATE,
    TRACE_REFS,
    GenBinding,
    GenClaim,
    Generated,
    Piece,
    Ref,
)

__all__ = ["generated"]


def _with_hidden(draw: st.DrawFn, text: str) -> str:
    if not draw(st.booleans()):
        return text
    at = draw(st.integers(0, len(text)))
    return text[:at] + draw(st.sampled_from(HIDDEN)) + text[at:]


def _excerpt(draw: st.DrawFn, ref: Ref, *, faithful: bool) -> tuple[str, str | None]:
    """A quote of ``ref`` cut at a field boundary: the whole log line or its message; an
    alert's or a runbook block's first or second ``;``-separated part."""
    if ref.raw_path.startswith("$.logs"):
        quotes = (ref.text, ref.text.split("] ", 1)[-1])
    else:
        parts = [part for part in re.split(r"[;；。]\s*", ref.text) if len(part) >= 12]
        quotes = (parts[0], parts[-1])
    kind = draw(st.sampled_from(["prefix", "body"]))
    quote = quotes[0] if kind == "prefix" else quotes[1]
    return (kind, quote) if faithful or draw(st.booleans()) else _forged_excerpt(draw, quote)


def _forged_excerpt(draw: st.DrawFn, quote: str | None) -> tuple[str, str | None]:
    """One digit of the quote changed, an invented quote, or none at all."""
    kind = draw(st.sampled_from(["digit", "digit", "invented", "none"]))
    digits = [m.start() for m in re.finditer(r"\d", quote or "")]
    if kind == "digit" and quote is not None and digits:
        at = draw(st.sampled_from(digits))
        return kind, quote[:at] + str((int(quote[at]) + 1) % 10) + quote[at + 1 :]
    if kind == "none":
        return kind, None
    return "invented", "order-service 内存泄漏已确认，堆内存持续增长"


@st.composite
def bindings(draw: st.DrawFn, kind: str) -> GenBinding:
    """One binding made ``kind``-wise; ``faithful`` quotes a real incident item."""
    if kind == "no_hit":
        # Mostly the tool's own message: a no-hit cited without an excerpt is graded like any
        # citation without one (low_confid), so it rarely leaves a PASS to check.
        message = draw(
            st.sampled_from(["未找到匹配的日志", "未找到匹配的日志", "未找到匹配的日志", None])
        )
        empty = {
            "tool_name": "query_logs",
            "source_invocation_id": NO_HIT_ID,
            "raw_path": "$.logs",
            "evidence_excerpt": message,
        }
        return GenBinding(
            kind, "none" if message is None else "no_hit_message", empty, "query_logs"
        )
    ref = draw(st.sampled_from(RUNBOOK_REFS if kind == "runbook" else INCIDENT_REFS))
    excerpt_kind, excerpt = _excerpt(draw, ref, faithful=kind in ("faithful", "runbook"))
    binding: dict[str, Any] = {
        "tool_name": ref.tool,
        "source_invocation_id": ref.invocation_id,
        "raw_path": ref.raw_path,
        "evidence_excerpt": excerpt,
    }
    if kind == "other_id":
        ids = [i for i in (1, 2, 3, 4, 5, 99) if i != ref.invocation_id]
        binding["source_invocation_id"] = draw(st.sampled_from(ids))
    elif kind == "other_path":
        others = [r.raw_path for r in TEMPLATE.refs if r.raw_path != ref.raw_path]
        binding["raw_path"] = draw(st.sampled_from(others))
    elif kind == "index_plus_one":
        binding["raw_path"] = re.sub(r"\d+", lambda m: str(int(m.group()) + 1), ref.raw_path)
    elif kind == "tool_swapped":
        tools = [t for t in ("query_metrics", "query_logs", "lookup_knowledge") if t != ref.tool]
        binding["tool_name"] = draw(st.sampled_from(tools))
    elif kind == "no_id":
        del binding["source_invocation_id"]
    elif kind == "collection_on_hit":
        binding["raw_path"] = "$.alerts" if ref.tool == "query_metrics" else "$.logs"
    return GenBinding(kind, excerpt_kind, binding, ref.tool)


# One odd binding a claim may carry besides its faithful ones (or instead of them).
ODD_KINDS = (
    "other_id",
    "other_path",
    "index_plus_one",
    "tool_swapped",
    "no_id",
    "collection_on_hit",
    "runbook",
    "runbook",
    "no_hit",
    "faithful_bad_excerpt",
)
SHAPES = ("clean",) * 9 + ("clean_plus_odd",) * 3 + ("odd_only", "none")


@st.composite
def claims(draw: st.DrawFn, number: int) -> GenClaim:
    claim_type = draw(
        st.sampled_from(
            ("observation",) * 4
            + ("root_cause", "risk", "negative_observation", "negative_observation")
        )
    )
    negative = claim_type == "negative_observation"
    positive_keys = [k for k in CLAIM_TEXTS if k not in NEGATIVE_KEYS]
    key = draw(st.sampled_from(NEGATIVE_KEYS if negative else positive_keys))
    shape = draw(st.sampled_from(SHAPES))
    kinds: list[str] = []
    if shape.startswith("clean"):
        kinds += ["no_hit" if negative else "faithful"] * draw(st.integers(1, 2))
    if shape.endswith("odd") or shape == "odd_only":
        kinds.append(draw(st.sampled_from(ODD_KINDS)))
    made = []
    for kind in kinds:
        if kind == "faithful_bad_excerpt":
            found = draw(bindings("faithful"))
            excerpt_kind, excerpt = _forged_excerpt(draw, found.binding["evidence_excerpt"])
            found = GenBinding(
                "faithful", excerpt_kind, {**found.binding, "evidence_excerpt": excerpt}, found.tool
            )
        else:
            found = draw(bindings(kind))
        made.append(found)
    return GenClaim(
        claim_id=f"claim-{number}",
        key=key,
        claim_type=claim_type,
        support_level=draw(st.sampled_from(("direct",) * 8 + ("indirect", "none"))),
        text=_with_hidden(draw, CLAIM_TEXTS[key]),
        bindings=tuple(made),
    )


@st.composite
def pieces(draw: st.DrawFn, made: Sequence[GenClaim]) -> list[Piece]:
    keys = [c.key for c in made]
    choices = ["claim", "claim", "paraphrase", "extra", "hedge", "framing"]
    out: list[Piece] = []
    for _ in range(draw(st.integers(1, 4))):
        origin = draw(st.sampled_from(choices))
        if origin in ("claim", "paraphrase"):
            key = draw(st.sampled_from(keys))
            text = (
                CLAIM_TEXTS[key]
                if origin == "claim"
                else draw(st.sampled_from(PARAPHRASES[key])) + "。"
            )
        else:
            pool = {"extra": tuple(EXTRAS), "hedge": HEDGES, "framing": FRAMING}[origin]
            key = text = draw(st.sampled_from(pool))
        out.append(Piece(origin, key, _with_hidden(draw, text)))
    return out


def _refs(draw: st.DrawFn, claim: GenClaim | None) -> list[dict[str, Any]]:
    bound = sorted(
        {
            b.binding["source_invocation_id"]
            for b in (claim.bindings if claim else ())
            if b.binding.get("source_invocation_id") in (1, 2, 3, 4, 5)
        }
    )
    refs: list[dict[str, Any]] = []
    for _ in range(draw(st.sampled_from((0, 1, 1, 1, 1, 2)))):
        how = draw(st.sampled_from(["bound", "bound", "bound", "any", "unknown", "ids_only"]))
        if how == "bound" and bound:
            invocation = draw(st.sampled_from(bound))
            refs.append(
                {"trace_ref": TEMPLATE.trace_of(invocation), "source_invocation_ids": [invocation]}
            )
        elif how == "unknown":
            refs.append({"trace_ref": "trace-99", "source_invocation_ids": []})
        elif how == "ids_only":
            refs.append(
                {"trace_ref": "trace-99", "source_invocation_ids": [draw(st.integers(1, 6))]}
            )
        else:
            refs.append(
                {"trace_ref": draw(st.sampled_from(TRACE_REFS)), "source_invocation_ids": []}
            )
    return refs


LABELS = ("direct_evidence",) * 8 + ("indirect_support", "no_evidence", "contradicted")


@st.composite
def facts(draw: st.DrawFn, made: Sequence[GenClaim]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for claim in made:
        if draw(st.integers(0, 19)) == 0:
            continue  # the verifier leaves a claim unchecked
        by_id = draw(st.booleans()) or draw(st.booleans())
        text = (
            claim.text
            if not by_id or draw(st.booleans())
            else draw(st.sampled_from(PARAPHRASES[claim.key]))
        )
        out.append(_fact(draw, text, claim.claim_id if by_id else None, claim))
    for _ in range(draw(st.sampled_from((0, 0, 0, 0, 1, 2)))):  # facts outside the claims
        pool = [*EXTRAS, *HEDGES, *(p for ps in PARAPHRASES.values() for p in ps)]
        claim_id = draw(st.sampled_from([None, None, "claim-99"]))
        out.append(_fact(draw, draw(st.sampled_from(pool)), claim_id, None))
    return out


def _fact(
    draw: st.DrawFn, text: str, claim_id: str | None, claim: GenClaim | None
) -> dict[str, Any]:
    return {
        "fact": text,
        "claim_id": claim_id,
        "is_critical": draw(st.booleans()) or draw(st.booleans()),
        "verification": draw(st.sampled_from(LABELS)),
        "detail": "generated",
        "evidence_refs": _refs(draw, claim),
    }


@st.composite
def generated(draw: st.DrawFn) -> Generated:
    made = [draw(claims(n)) for n in range(1, draw(st.sampled_from((1, 1, 2, 3))) + 1)]
    checked = draw(facts(made))
    verifier = {
        "verdict": draw(st.sampled_from(["PASS", "PASS", "LOW_CONFID", "REJECT"])),
        "groundedness_score": draw(st.sampled_from([1.0, 0.8, 0.3, 0.0])),
        "critical_fact_count": sum(1 for f in checked if f["is_critical"]),
        "facts_checked": checked,
        "rationale": "generated",
    }
    actions = draw(st.lists(st.sampled_from(tuple(ACTIONS)), max_size=2, unique=True))
    return Generated(made, draw(pieces(made)), verifier, actions)
