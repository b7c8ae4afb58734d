"""Property: the model points, the code speaks (issue 36; issue 10's property before it).

Every example runs the pure core on the default world, without any model: real tool calls
through ``ToolInvocationRecorder`` and ``Toolbox`` into a fresh ``Store``, then the gatekeeper,
the trace summary, the verdict, the route and the composer, exactly as ``ChatService`` chains
them. What the models would have said is generated (``tests/support/soundness_cases.py`` and
``soundness_strategies.py``): claims whose bindings are real refs or forgeries of them,
verifier facts with any label, criticality and refs, and a ``user_facing_answer`` of claim
texts, paraphrases, hedges, framing and extra confirmed-sounding sentences.

Then every string a model wrote is edited (claim texts, claim ids, the answer, the actions, the
verifier's fact texts and details) to carry a canary, and the pipeline runs again. The
property, on every route:

* no canary reaches the answer: nothing the model wrote is published;
* a claim used by both runs shows byte-identical evidence lines: what the user reads of a
  claim is a function of its checked bindings, never of its words;
* no extra sentence, fix or hidden character of the generated answer reaches the answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from pydantic import ValidationError

from pytest_diageval.core.answer import confirmed
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
    run_pipeline,
)
from support.soundness_strategies import generated

CANARY = "ZQXCANARY"

# --------------------------------------------------------------------------- the judgement


def edited(case: Generated) -> Generated:
    """The same case with every model-written string carrying :data:`CANARY` (ids renamed
    consistently, so the verifier's facts still name their claims)."""
    ids = {c.claim_id: f"{CANARY}-{n}" for n, c in enumerate(case.claims, start=1)}
    claims = [
        dataclasses.replace(c, claim_id=ids[c.claim_id], text=f"{c.text}{CANARY}已确认")
        for c in case.claims
    ]
    pieces = [dataclasses.replace(p, text=f"{p.text}{CANARY}") for p in case.pieces]
    verifier: dict[str, Any] = {**case.verifier, "rationale": f"{CANARY} rationale"}
    verifier["facts_checked"] = [
        {
            **fact,
            "fact": f"{fact['fact']}{CANARY}",
            "detail": f"{fact['detail']}{CANARY}",
            "claim_id": ids.get(fact["claim_id"], fact["claim_id"]),
        }
        for fact in case.verifier["facts_checked"]
    ]
    actions = [f"{action}{CANARY}" for action in case.actions]
    return Generated(claims, pieces, verifier, actions)


def rendered_by_position(outcome: Outcome, case: Generated) -> dict[int, list[str]]:
    """Claim position -> the evidence lines the answer rendered for it (used claims only)."""
    positions = {c.claim_id: n for n, c in enumerate(case.claims)}
    output = outcome.composition.output
    return {positions[r.claim_id]: r.lines for r in output.rendered or []}


def leaked_extras(answer: str) -> list[str]:
    """Extra sentences, fixes and hidden characters of the generated answer in ``answer``."""
    markers = [m for found in (*EXTRAS.values(), *ACTIONS.values()) for m in found]
    leaked = [m for m in markers if m in answer]
    return leaked + [repr(ch) for ch in HIDDEN if ch in answer]


def check_property(case: Generated) -> tuple[Outcome, Outcome]:
    original = run_pipeline(case)
    assert leaked_extras(original.composition.answer) == [], original.composition.answer
    try:
        again = edited(case)
        outcome = run_pipeline(again)
    except ValidationError:  # an id too long once edited: the contract does not parse
        return original, original
    answer = outcome.composition.answer
    assert CANARY not in answer, answer
    assert leaked_extras(answer) == [], answer
    before, after = rendered_by_position(original, case), rendered_by_position(outcome, again)
    for position in before.keys() & after.keys():
        assert after[position] == before[position], (position, answer)
    return original, outcome


@settings(
    max_examples=200,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(generated())
def test_no_model_text_reaches_the_answer_and_a_claim_renders_its_evidence_alone(
    case: Generated,
) -> None:
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


def test_the_generator_reaches_a_pass_that_renders_evidence_of_a_claim() -> None:
    """The property is not vacuous: a generated PASS renders evidence lines of a used claim,
    and the edited run of it keeps them."""

    def reaches(case: Generated) -> bool:
        outcome = run_pipeline(case)
        lines = [line for r in outcome.composition.output.rendered or [] for line in r.lines]
        return outcome.decision.derived_verdict == "PASS" and bool(lines)

    original, _ = check_property(_first(reaches))
    assert original.decision.derived_verdict == "PASS"
    assert any(r.lines for r in original.composition.output.rendered or [])


def test_the_property_catches_a_renderer_that_shows_the_claim_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Made to fail on purpose: a renderer that appends the model's wording to each item (the
    old design, in one line) fails the property on some generated case."""
    real = confirmed.render_confirmed

    def wordy(used: list[str], gatekeeper: Any, *args: Any, **kwargs: Any) -> Any:
        evidence = real(used, gatekeeper, *args, **kwargs)
        for claim_id in evidence.per_claim:
            evidence.per_claim[claim_id] = [
                f"{line} {claim_id}" for line in evidence.per_claim[claim_id]
            ]
        evidence.groups = {s: [*lines, *used] for s, lines in evidence.groups.items()}
        return evidence

    monkeypatch.setattr("pytest_diageval.core.answer.composer.render_confirmed", wordy)

    def fails(case: Generated) -> bool:
        try:
            check_property(case)
        except AssertionError:
            return True
        return False

    case = _first(fails)
    assert CANARY in run_pipeline(edited(case)).composition.answer


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
    outcome, _ = check_property(case)
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
    outcome, _ = check_property(case)
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
    outcome, _ = check_property(_stitched_case())
    assert "payment-service 当前存在 HighMemoryUsage" not in outcome.composition.answer
