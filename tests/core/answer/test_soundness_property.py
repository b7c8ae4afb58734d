"""Property: whatever the executor and the verifier say, a PASS publishes only verified claims.

Issue 10, part 7 ("prove the invariant, not examples"). Every example runs the pure core on
the default world, without any model: real tool calls through ``ToolInvocationRecorder`` and
``Toolbox`` into a fresh ``Store`` (built once: nothing after the calls writes to it), then
the gatekeeper, the trace summary, the verdict, the route and the composer, exactly as
``ChatService`` chains them. What the models would have said is generated: claims whose
bindings are real refs or forgeries of them (another invocation id, another raw path,
index + 1, a changed digit, a swapped tool, a runbook block, a collection path, no binding at
all), verifier facts with any label, criticality and refs, and a ``user_facing_answer``
assembled from sentences whose origin is recorded: a claim's text, a paraphrase of it, a
hedge, framing, or an extra confirmed-sounding sentence that no claim carries.

The cases are built in ``tests/support/soundness_cases.py`` and
``tests/support/soundness_strategies.py``. The property is judged by that recorded
provenance, never by the composer's own matcher:

* on PASS, every statement of the final answer comes from a claim text whose claim is
  *grounded*: each binding is a faithful citation (real id, tool, path and a quoted excerpt)
  and at least one cites incident evidence (a ``query_metrics`` / ``query_logs`` item; for a
  ``negative_observation`` the no-hit search of the subject it names); a claim citing a
  runbook block is guidance and grounds nothing;
* on every route, no extra sentence and no bidi / zero-width character reaches the answer.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from pydantic import ValidationError

from pytest_diageval.core.answer import composer
from pytest_diageval.core.answer.templates import (
    COMPOSED_HEADING,
    INDIRECT_MARK,
    NO_DIRECT_ANSWER,
    left_out_line,
)
from pytest_diageval.core.text.key_facts import contained, extract, normalise, split_sentences
from support.soundness_cases import (
    ACTIONS,
    CLAIM_TEXTS,
    EXTRAS,
    HIDDEN,
    GenBinding,
    GenClaim,
    Generated,
    Outcome,
    Piece,
    clean,
    run_pipeline,
)
from support.soundness_strategies import generated

# --------------------------------------------------------------------------- the judgement


def unsound_pass_statements(case: Generated, outcome: Outcome) -> list[str]:
    """On PASS: the statements of the final answer that no grounded claim carries, by the
    provenance recorded at generation ('' list when the answer is sound)."""
    grounded_keys = {c.key for c in case.claims if c.grounded()}
    output = outcome.composition.output
    answer = outcome.composition.answer
    if output.source == "verbatim":
        assert answer == clean("".join(p.text for p in case.pieces)).strip()
        return [
            f"{p.origin} {p.key!r}"
            for p in case.pieces
            if (p.origin in ("claim", "paraphrase") and p.key not in grounded_keys)
            or p.origin == "extra"
        ]
    if answer == NO_DIRECT_ANSWER:
        return []
    heading, *lines = answer.split("\n")
    assert heading == COMPOSED_HEADING
    dropped = [d.claim_id for d in output.claims_dropped]
    tail = left_out_line(output.statements_dropped, dropped)
    problems: list[str] = []
    for line in lines:
        found = re.fullmatch(r"\d+\. (.*)", line)
        if found is None:
            assert line == "" or line in tail.split("\n"), line
            continue
        text = found.group(1).removeprefix(INDIRECT_MARK)
        keys = {c.key for c in case.claims if " ".join(clean(c.text).split()) == text}
        if not keys & grounded_keys:
            problems.append(f"composed line {text!r} (claims of keys {sorted(keys)})")
    return problems


def leaked_extras(answer: str) -> list[str]:
    """Extra sentences and hidden characters that reached the answer, gap lines included
    (they name claims, never quote them)."""
    markers = [m for found in (*EXTRAS.values(), *ACTIONS.values()) for m in found]
    leaked = [m for m in markers if m in answer]
    return leaked + [repr(ch) for ch in HIDDEN if ch in answer]


def unbacked_facts(case: Generated, outcome: Outcome) -> list[str]:
    """On a verbatim PASS: each published sentence whose key facts (core.text.key_facts) are
    contained in no used claim's facts and that claim's verified evidence, checked apart from
    the composer's own word and subject rules ('' list when every one is)."""
    if outcome.composition.output.source != "verbatim":
        return []
    contract = case.contract()
    used = set(outcome.composition.output.claims_used)
    backings = []
    for claim in contract.claims:
        if claim.claim_id in used:
            rows = outcome.gatekeeper.checked_bindings
            texts = [r.matched_text or "" for r in rows if r.claim_id == claim.claim_id]
            facts = [extract(text) for text in [claim.claim_text, *texts]]
            own = facts[0]
            backings.append(
                (
                    normalise(claim.claim_text).rstrip("。."),
                    dataclasses.replace(
                        own,
                        numbers=own.numbers.union(*(f.numbers for f in facts)),
                        entities=own.entities.union(*(f.entities for f in facts)),
                        timestamps=own.timestamps.union(*(f.timestamps for f in facts)),
                    ),
                )
            )
    problems = []
    for sentence in split_sentences(outcome.composition.answer):
        facts = extract(sentence)
        same = [text for text, _ in backings if normalise(sentence).rstrip("。.") == text]
        if not same and all(contained(facts, backing) is not None for _, backing in backings):
            problems.append(sentence)
    return problems


def check_property(case: Generated) -> Outcome:
    outcome = run_pipeline(case)
    answer = outcome.composition.answer
    leaked = leaked_extras(answer)
    assert leaked == [], answer
    if outcome.decision.derived_verdict == "PASS":
        assert unsound_pass_statements(case, outcome) == [], answer
        assert unbacked_facts(case, outcome) == [], answer
    return outcome


@settings(
    max_examples=200,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(generated())
def test_a_pass_publishes_only_statements_of_grounded_claims(case: Generated) -> None:
    check_property(case)


# --------------------------------------------------------------------------- not vacuous


def _first(condition: Callable[[Generated], bool]) -> Generated:
    """The first generated case meeting ``condition`` (deterministic, no shrinking)."""
    config = settings(
        max_examples=1000,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    return find(generated(), condition, settings=config)


@pytest.mark.parametrize("source", ["verbatim", "composed"])
def test_the_generator_reaches_both_kinds_of_pass(source: str) -> None:
    """The property is not vacuous: generated cases reach PASS, published verbatim, and
    composed from the claims because the executor's answer held an extra sentence."""

    def reaches(case: Generated) -> bool:
        outcome = run_pipeline(case)
        extra = any(p.origin == "extra" for p in case.pieces)
        return (
            outcome.decision.derived_verdict == "PASS"
            and outcome.composition.output.source == source
            and (source == "verbatim" or extra)
        )

    outcome = check_property(_first(reaches))
    assert outcome.composition.output.source == source


def test_the_property_catches_a_composer_that_publishes_every_pass_verbatim(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Made to fail on purpose: with the composer's statement check switched off (every PASS
    answer published as the executor wrote it), some generated PASS publishes an extra
    sentence or a claim nobody grounded, and the judgement says which."""
    monkeypatch.setattr(composer, "_allowed", lambda statement, used: True)

    def fails(case: Generated) -> bool:
        try:
            check_property(case)
        except AssertionError:
            return True
        return False

    case = _first(fails)
    outcome = run_pipeline(case)
    assert outcome.decision.derived_verdict == "PASS"
    assert outcome.composition.output.source == "verbatim"
    answer = outcome.composition.answer
    assert (
        leaked_extras(answer)
        or unsound_pass_statements(case, outcome)
        or unbacked_facts(case, outcome)
    )


# --------------------------------------------------------------------------- known hole


def _extra_sentence_case() -> Generated:
    """The executor's answer is its grounded memory claim plus an extra sentence; the verifier
    leaves the claim unchecked and confirms the extra sentence as a fact of its own, citing
    the memory alert (trace-1)."""
    memory = GenClaim(
        "claim-1",
        "memory",
        "observation",
        "direct",
        CLAIM_TEXTS["memory"],
        (
            GenBinding(
                "faithful",
                "prefix",
                {
                    "tool_name": "query_metrics",
                    "source_invocation_id": 1,
                    "raw_path": "$.alerts[0]",
                    "evidence_excerpt": "HighMemoryUsage firing, service=order-service, current=91%"
                    ", threshold=85%, duration=15m",
                },
                "query_metrics",
            ),
        ),
    )
    extra = "内存泄漏已确认，请立即重启。"
    fact = {
        "fact": extra,
        "claim_id": None,
        "is_critical": True,
        "verification": "direct_evidence",
        "detail": "告警显示内存 91%。",
        "evidence_refs": [{"trace_ref": "trace-1", "source_invocation_ids": [1]}],
    }
    verifier = {
        "verdict": "PASS",
        "groundedness_score": 1.0,
        "critical_fact_count": 1,
        "facts_checked": [fact],
        "rationale": "generated",
    }
    pieces = [Piece("claim", "memory", CLAIM_TEXTS["memory"]), Piece("extra", extra, extra)]
    return Generated([memory], pieces, verifier)


def test_an_extra_sentence_the_verifier_confirms_is_never_listed_as_a_finding() -> None:
    case = _extra_sentence_case()
    outcome = check_property(case)
    assert outcome.decision.derived_verdict == "LOW_CONFID"
    assert "内存泄漏已确认" not in outcome.composition.answer


def _duplicate_id_case() -> Generated:
    """Two claims share the id claim-1: the first is the grounded memory alert, the second an
    unsupported root cause (no bindings, support_level none); the verifier checks claim-1."""
    memory = GenClaim("claim-1", "memory", "observation", "direct", CLAIM_TEXTS["memory"], (
        GenBinding("faithful", "prefix", {
            "tool_name": "query_metrics", "source_invocation_id": 1, "raw_path": "$.alerts[0]",
            "evidence_excerpt": "HighMemoryUsage firing, service=order-service, current=91%"},
            "query_metrics"),
    ))  # fmt: skip
    leak = GenClaim("claim-1", "leak", "root_cause", "none", CLAIM_TEXTS["leak"], ())
    fact = {"fact": CLAIM_TEXTS["memory"], "claim_id": "claim-1", "is_critical": True,
            "verification": "direct_evidence", "detail": "告警原文。",
            "evidence_refs": [{"trace_ref": "trace-1", "source_invocation_ids": [1]}]}  # fmt: skip
    verifier = {"verdict": "PASS", "groundedness_score": 1.0, "critical_fact_count": 1,
                "facts_checked": [fact], "rationale": "generated"}  # fmt: skip
    pieces = [Piece("claim", "memory", CLAIM_TEXTS["memory"]),
              Piece("claim", "leak", CLAIM_TEXTS["leak"])]  # fmt: skip
    return Generated([memory, leak], pieces, verifier)


def test_a_second_claim_reusing_an_id_still_counts() -> None:
    case = _duplicate_id_case()
    try:
        case.contract()
    except ValidationError:
        return  # refusing duplicate claim ids in the contract closes the hole as well
    outcome = check_property(case)
    assert outcome.decision.derived_verdict != "PASS"


def _stitched_case() -> Generated:
    """The payment-service CPU claim cites a real but unrelated citation (the order-service
    memory alert) and the verifier calls it direct; the answer adds a sentence stitched from
    the claim's subject and that alert's words."""
    alert = GenBinding("faithful", "prefix", {
        "tool_name": "query_metrics", "source_invocation_id": 1, "raw_path": "$.alerts[0]",
        "evidence_excerpt": "HighMemoryUsage firing, service=order-service, current=91%"},
        "query_metrics")  # fmt: skip
    cpu = GenClaim("claim-1", "cpu", "observation", "direct", CLAIM_TEXTS["cpu"], (alert,))
    extra = "payment-service 当前存在 HighMemoryUsage 告警。"
    fact = {"fact": CLAIM_TEXTS["cpu"], "claim_id": "claim-1", "is_critical": True,
            "verification": "direct_evidence", "detail": "告警原文。",
            "evidence_refs": [{"trace_ref": "trace-1", "source_invocation_ids": [1]}]}  # fmt: skip
    verifier = {"verdict": "PASS", "groundedness_score": 1.0, "critical_fact_count": 1,
                "facts_checked": [fact], "rationale": "generated"}  # fmt: skip
    pieces = [Piece("claim", "cpu", CLAIM_TEXTS["cpu"]), Piece("extra", extra, extra)]
    return Generated([cpu], pieces, verifier)


def test_a_sentence_stitched_from_claim_and_evidence_words_is_not_published() -> None:
    outcome = check_property(_stitched_case())
    assert "payment-service 当前存在 HighMemoryUsage" not in outcome.composition.answer
