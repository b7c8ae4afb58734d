"""Mutant derivation (harness/mutation/mutants.py) on the contracts of real scenario runs.

The base of every test is a real run: the documented example (a HighMemoryUsage PASS with an
alert binding #1 $.alerts[0] and a log binding #2 $.logs[4]) or a shipped scenario, replayed
through ``plan_replay`` exactly as ``--diageval-mutate`` does. Each mutant is compared with
the unmutated contract field by field, so a test names every value a mutation changed.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from pytest_diageval.harness.mutation import kinds as mutant_kinds
from pytest_diageval.harness.mutation import mutants as mutants_module
from pytest_diageval.harness.mutation.kinds import PROSE_CANARY
from pytest_diageval.harness.mutation.mutant_runs import ReplayPlan, worst_case_verifier
from pytest_diageval.harness.mutation.mutants import (
    EXTRA_SENTENCE,
    KINDS,
    SEED_RULES,
    Mutant,
    MutationBase,
    RunbookQuote,
    derive_mutants,
)
from support.mutation_plans import replay_plan

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "tests" / "plugin" / "data" / "example-scenario.yaml"
PASS_DIRECT = REPO / "scenarios" / "routing" / "pass-direct.yaml"
MATRIX = REPO / "scenarios" / "matrix"
PLACEHOLDER = REPO / "scenarios" / "regression" / "placeholder-log-no-hit.yaml"
RUNBOOK_CALL = {"name": "lookup_knowledge", "arguments": {"query": "HighMemoryUsage"}}


@pytest.fixture(scope="module")
def example() -> ReplayPlan:
    return replay_plan(EXAMPLE)


@pytest.fixture(scope="module")
def by_name(example: ReplayPlan) -> dict[str, Mutant]:
    return {mutant.name: mutant for mutant in derive_mutants(example.base)}


def changes(before: Any, after: Any, path: str = "") -> dict[str, tuple[Any, Any]]:
    """Every leaf that differs between two JSON values, by dotted path."""
    if isinstance(before, dict) and isinstance(after, dict):
        found: dict[str, tuple[Any, Any]] = {}
        for key in sorted(set(before) | set(after)):
            found |= changes(before.get(key), after.get(key), f"{path}.{key}".lstrip("."))
        return found
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        found = {}
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            found |= changes(old, new, f"{path}[{index}]")
        return found
    return {} if before == after else {path: (before, after)}


def contract_changes(plan: ReplayPlan, mutant: Mutant) -> dict[str, tuple[Any, Any]]:
    assert mutant.contract is not None
    original = plan.base.contract.model_dump(mode="json", exclude_none=True)
    return changes(original, mutant.contract)


def test_every_mutant_of_the_example_in_claim_binding_kind_order(example: ReplayPlan) -> None:
    names = [mutant.name for mutant in derive_mutants(example.base)]
    kinds = mutants_module.BINDING_KINDS + mutants_module.EVIDENCE_KINDS
    per_binding = [f"{kind}-claim-1-{number}" for number in (0, 1) for kind in kinds]
    per_claim = [f"{kind}-claim-1-all" for kind in mutants_module.CLAIM_KINDS]
    per_statement = [
        f"{kind}-claim-1-{target}"
        for kind in mutants_module.STATEMENT_KINDS
        for target in ("answer", "text")
    ]
    assert names == [
        *per_binding,
        *per_claim,
        *per_statement,
        "extra-sentence-answer-all",
        "prose-rewrite-answer-all",
    ]


def test_the_example_has_twelve_equivalent_mutants_with_their_reasons(
    by_name: dict[str, Mutant],
) -> None:
    equivalent = {name: m.equivalent for name, m in by_name.items() if m.equivalent is not None}
    assert equivalent == {
        # $.alerts of the order-service metrics call holds one alert: no other place to cite.
        "other-path-claim-1-0": "the cited invocation has no other evidence ref",
        # Each binding cites incident evidence: the other one still carries the claim.
        "runbook-quote-claim-1-0": "the claim keeps another incident binding",
        "runbook-quote-claim-1-1": "the claim keeps another incident binding",
        # No other service's call quotes the same alert or log line.
        "other-service-claim-1-0": "no invocation about another service holds the same text"
        " at this path",
        "other-service-claim-1-1": "no invocation about another service holds the same text"
        " at this path",
        # A weaker claim text alone asserts less: the modality harm is in the answer.
        "statement-modality-claim-1-text": "a weaker claim text alone asserts less: nothing to"
        " publish",
        # The claim states no time of day to move.
        "statement-timestamp-claim-1-answer": "the statement states no time",
        "statement-timestamp-claim-1-text": "the statement states no time",
        # Nor a current value beside a threshold, nor a time to call UTC.
        **dict.fromkeys(
            ["statement-label-claim-1-answer", "statement-label-claim-1-text"],
            "the statement binds no current value and threshold to swap",
        ),
        **dict.fromkeys(
            ["statement-zone-claim-1-answer", "statement-zone-claim-1-text"],
            "the statement states no time without a zone",
        ),
    }
    assert by_name["other-path-claim-1-0"].contract is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "other-invocation-claim-1-0",
            {"claims[0].evidence_bindings[0].source_invocation_id": (1, 2)},
        ),
        (
            "other-invocation-claim-1-1",
            {"claims[0].evidence_bindings[1].source_invocation_id": (2, 1)},
        ),
        (
            "other-path-claim-1-1",
            {"claims[0].evidence_bindings[1].raw_path": ("$.logs[4]", "$.logs[0]")},
        ),
        (
            "index-plus-one-claim-1-0",
            {"claims[0].evidence_bindings[0].raw_path": ("$.alerts[0]", "$.alerts[1]")},
        ),
        (
            "tool-swap-claim-1-0",
            {"claims[0].evidence_bindings[0].tool_name": ("query_metrics", "query_logs")},
        ),
        (
            "tool-swap-claim-1-1",
            {"claims[0].evidence_bindings[1].tool_name": ("query_logs", "query_metrics")},
        ),
        (
            "digit-first-claim-1-0",
            {
                "claims[0].evidence_bindings[0].evidence_excerpt": (
                    "HighMemoryUsage firing, service=order-service, current=91%, duration=15m",
                    "HighMemoryUsage firing, service=order-service, current=01%, duration=15m",
                )
            },
        ),
        (
            "digit-last-claim-1-0",
            {
                "claims[0].evidence_bindings[0].evidence_excerpt": (
                    "HighMemoryUsage firing, service=order-service, current=91%, duration=15m",
                    "HighMemoryUsage firing, service=order-service, current=91%, duration=16m",
                )
            },
        ),
        (
            "negation-flip-claim-1-0",
            {
                "claims[0].evidence_bindings[0].evidence_excerpt": (
                    "HighMemoryUsage firing, service=order-service, current=91%, duration=15m",
                    "not HighMemoryUsage firing, service=order-service, current=91%, duration=15m",
                )
            },
        ),
        (
            "negation-flip-claim-1-1",
            {
                "claims[0].evidence_bindings[1].evidence_excerpt": (
                    "内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB",
                    "未内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB",
                )
            },
        ),
        (
            "reattributed-claim-1-all",
            {
                "claims[0].claim_text": (
                    "order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。",
                    "inventory-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。",
                ),
                "user_facing_answer": (
                    "order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。",
                    "inventory-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。",
                ),
            },
        ),
        (
            "extra-sentence-answer-all",
            {
                "user_facing_answer": (
                    "order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。",
                    "order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。"
                    "已确认根因：order-service 发生内存泄漏，请立即重启 order-service。",
                )
            },
        ),
    ],
)
def test_a_contract_mutant_changes_exactly_one_thing(
    example: ReplayPlan, by_name: dict[str, Mutant], name: str, expected: dict[str, Any]
) -> None:
    mutant = by_name[name]
    assert contract_changes(example, mutant) == expected
    assert mutant.verifier is None
    assert mutant.extra_call is None
    assert mutant.equivalent is None


def test_runbook_quote_replaces_the_only_incident_binding_with_a_real_runbook_ref(
    example: ReplayPlan, by_name: dict[str, Mutant]
) -> None:
    quote = example.base.runbook
    assert isinstance(quote, RunbookQuote)
    # The example looked nothing up: the mutant adds the lookup, invocation 3.
    assert quote.call == RUNBOOK_CALL
    assert quote.binding["source_invocation_id"] == 3
    assert quote.binding["raw_path"] == "$.evidence_blocks[0]"
    assert quote.binding["evidence_excerpt"].startswith("HighMemoryUsage 告警处理手册")
    # Both bindings cite incident evidence: replacing one leaves the other to carry the claim.
    assert (
        by_name["runbook-quote-claim-1-0"].equivalent == "the claim keeps another incident binding"
    )
    only = by_name["runbook-only-claim-1-all"]
    assert contract_changes(example, only) == {
        "claims[0].evidence_bindings": (
            example.base.contract.model_dump(mode="json", exclude_none=True)["claims"][0][
                "evidence_bindings"
            ],
            [quote.binding],
        )
    }
    assert only.extra_call == RUNBOOK_CALL


def test_runbook_quote_of_a_single_binding_claim_and_runbook_only_is_then_its_duplicate() -> None:
    plan = replay_plan(PASS_DIRECT)
    found = {mutant.name: mutant for mutant in derive_mutants(plan.base)}
    quote = found["runbook-quote-claim-1-0"]
    assert quote.equivalent is None
    assert quote.contract is not None
    assert quote.contract["claims"][0]["evidence_bindings"][0]["tool_name"] == "lookup_knowledge"
    assert found["runbook-only-claim-1-all"].equivalent == (
        "identical to mutant[runbook-quote-claim-1-0]"
    )


def test_unbound_drops_every_binding_and_says_support_none(
    example: ReplayPlan, by_name: dict[str, Mutant]
) -> None:
    mutant = by_name["unbound-claim-1-all"]
    assert mutant.contract is not None
    claim = mutant.contract["claims"][0]
    assert claim["evidence_bindings"] == []
    assert claim["support_level"] == "none"
    assert mutant.change == "2 binding(s) dropped, support_level → none"


def test_demoted_is_a_verifier_mutant_that_labels_the_claim_unsupported_and_unimportant(
    example: ReplayPlan, by_name: dict[str, Mutant]
) -> None:
    mutant = by_name["demoted-claim-1-all"]
    assert mutant.contract is None
    assert mutant.verifier is not None
    original = example.base.verifier.model_dump(mode="json", exclude_none=True)
    assert changes(original, mutant.verifier) == {
        "critical_fact_count": (1, 0),
        "facts_checked[0].is_critical": (True, False),
        "facts_checked[0].verification": ("direct_evidence", "no_evidence"),
    }


def test_extra_sentence_carries_the_text_whose_publication_is_the_harm(
    by_name: dict[str, Mutant],
) -> None:
    mutant = by_name["extra-sentence-answer-all"]
    assert mutant.forged_text == EXTRA_SENTENCE.format(service="order-service")
    # A statement mutant's harm is its edited statement reaching the user; citation and claim
    # mutants' harm is the PASS itself.
    statement = by_name["statement-number-claim-1-text"]
    assert statement.forged_text is not None
    assert statement.contract is not None
    assert statement.contract["claims"][0]["claim_text"] == statement.forged_text
    answer = by_name["statement-number-claim-1-answer"]
    assert answer.contract is not None
    assert answer.contract["user_facing_answer"].endswith(str(answer.forged_text))
    # A re-attributed claim's harm is its finding about the other service reaching the user: a
    # question's scope may set it aside and let the PASS rest on the other claims (issue 25).
    moved = by_name["reattributed-claim-1-all"]
    assert moved.contract is not None
    assert moved.forged_text == moved.contract["claims"][0]["claim_text"]
    prose = by_name["prose-rewrite-answer-all"]
    assert prose.forged_text == PROSE_CANARY
    harmless = [m for m in by_name.values() if not m.kind.startswith("statement-")]
    assert all(m.forged_text is None for m in harmless if m not in (mutant, moved, prose))


def _with_bindings(base: MutationBase, *bindings: dict[str, Any]) -> MutationBase:
    contract = base.contract.model_dump(mode="json", exclude_none=True)
    contract["claims"][0]["evidence_bindings"] = list(bindings)
    return dataclasses.replace(base, contract=type(base.contract).model_validate(contract))


def test_a_single_digit_and_a_present_negation(example: ReplayPlan) -> None:
    base = _with_bindings(
        example.base,
        {
            "tool_name": "query_logs",
            "source_invocation_id": 2,
            "raw_path": "$.logs[4]",
            "evidence_excerpt": "GC 未完成 7 次",
        },
        {
            "tool_name": "query_logs",
            "source_invocation_id": 2,
            "raw_path": "$.logs[3]",
            "evidence_excerpt": "pool is not exhausted",
        },
    )
    found = {mutant.name: mutant for mutant in derive_mutants(base)}
    assert found["digit-last-claim-1-0"].equivalent == (
        "the excerpt has one digit: digit-last is digit-first"
    )
    first = found["digit-first-claim-1-0"].contract
    assert first is not None
    assert first["claims"][0]["evidence_bindings"][0]["evidence_excerpt"] == "GC 未完成 8 次"
    cjk = found["negation-flip-claim-1-0"].contract
    latin = found["negation-flip-claim-1-1"].contract
    assert cjk is not None
    assert latin is not None
    assert cjk["claims"][0]["evidence_bindings"][0]["evidence_excerpt"] == "GC 完成 7 次"
    assert latin["claims"][0]["evidence_bindings"][1]["evidence_excerpt"] == "pool is exhausted"
    assert found["digit-first-claim-1-1"].equivalent == "the excerpt has no digit"


def test_a_session_with_a_runbook_lookup_quotes_it_without_adding_a_call(
    example: ReplayPlan,
) -> None:
    binding = {
        "tool_name": "lookup_knowledge",
        "source_invocation_id": 2,
        "raw_path": "$.evidence_blocks[0]",
        "evidence_excerpt": "HighMemoryUsage 告警处理手册",
    }
    base = dataclasses.replace(example.base, runbook=RunbookQuote(binding))
    only = next(m for m in derive_mutants(base) if m.name == "runbook-only-claim-1-all")
    assert only.extra_call is None
    assert only.change == "bindings → only the runbook quote #2 $.evidence_blocks[0]"


def test_without_a_runbook_every_runbook_mutant_is_equivalent_with_the_reason(
    example: ReplayPlan,
) -> None:
    base = dataclasses.replace(example.base, runbook="the world has no runbook to quote")
    reasons = {m.name: m.equivalent for m in derive_mutants(base) if m.kind.startswith("runbook")}
    assert reasons == {
        "runbook-quote-claim-1-0": "the world has no runbook to quote",
        "runbook-quote-claim-1-1": "the world has no runbook to quote",
        "runbook-only-claim-1-all": "the world has no runbook to quote",
    }


def test_claim_ids_that_cannot_be_node_id_tokens_become_their_position(example: ReplayPlan) -> None:
    contract = example.base.contract.model_dump(mode="json", exclude_none=True)
    claim = contract["claims"][0]
    contract["claims"] = [
        {**claim, "claim_id": "a b]"},
        {**claim, "claim_id": "x::y"},
        {**claim, "claim_id": ""},
    ]
    base = dataclasses.replace(
        example.base, contract=type(example.base.contract).model_validate(contract)
    )
    claims = {m.claim for m in derive_mutants(base)}
    assert claims == {"claim1", "claim2", "claim3", "answer"}


def test_worst_case_verifier_labels_every_claim_direct_citing_what_it_binds(
    example: ReplayPlan,
) -> None:
    contract = example.base.contract
    assert worst_case_verifier(contract, example.trace_summary) == {
        "verdict": "PASS",
        "groundedness_score": 1.0,
        "critical_fact_count": 1,
        "facts_checked": [
            {
                "fact": "order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。",
                "claim_id": "claim-1",
                "is_critical": True,
                "verification": "direct_evidence",
                "detail": "worst-case verifier: every fact is labelled direct evidence",
                "evidence_refs": [
                    {"trace_ref": "trace-1", "source_invocation_ids": [1]},
                    {"trace_ref": "trace-2", "source_invocation_ids": [2]},
                ],
            }
        ],
        "rationale": "worst-case verifier: says PASS whatever it is shown",
    }


def test_an_unbound_claim_meets_a_worst_case_verifier_citing_every_trace_entry(
    example: ReplayPlan, by_name: dict[str, Mutant]
) -> None:
    mutant = by_name["unbound-claim-1-all"]
    contract = type(example.base.contract).model_validate(mutant.contract)
    refs = worst_case_verifier(contract, example.trace_summary)["facts_checked"][0]["evidence_refs"]
    assert [ref["trace_ref"] for ref in refs] == ["trace-1", "trace-2"]


def test_every_kind_is_documented_and_names_the_seed_rule_it_tests() -> None:
    assert mutant_kinds.__doc__ is not None
    for kind in KINDS:
        assert f"``{kind}``" in mutant_kinds.__doc__, kind
        assert SEED_RULES[kind].startswith(("000", "004")), kind
    assert set(SEED_RULES) == set(KINDS)


def test_a_no_hit_is_retargeted_only_to_another_services_no_hit() -> None:
    """Two no-hit searches hold the same text at $.logs. Between two about the same service a
    re-pointed binding stays true (no mutant of any kind); towards another service's no-hit
    it is the right text under another service (other-service), never other-invocation."""
    negative = {
        m.name: m for m in derive_mutants(replay_plan(MATRIX / "05-hikaricp-negative.yaml").base)
    }
    for binding in ("0", "1"):  # both searches were about inventory-service
        assert negative[f"other-invocation-claim-1-{binding}"].equivalent == (
            "every other invocation holds the same text at this path"
        )
        assert negative[f"other-service-claim-1-{binding}"].equivalent == (
            "no invocation about another service holds the same text at this path"
        )
    two_services = {m.name: m for m in derive_mutants(replay_plan(PLACEHOLDER).base)}
    # #1 and #2 searched payment-service, #3 shipping-service; all three found nothing.
    assert two_services["other-invocation-claim-1-1"].equivalent == (
        "every other invocation holds the same text at this path"
    )
    assert two_services["other-service-claim-1-1"].change == (
        "source_invocation_id 2 → 3: the same text, about shipping-service instead of"
        " payment-service"
    )
    assert two_services["other-service-claim-2-0"].change == (
        "source_invocation_id 3 → 1: the same text, about payment-service instead of"
        " shipping-service"
    )


POINTED = REPO / "scenarios" / "soundness" / "points-decide-not-the-text.yaml"


def test_each_point_of_a_pointed_claim_gets_a_flip_that_cannot_hold() -> None:
    """point-flip: one mutant per point, its relation turned into one that cannot hold where
    the original held; nothing else of the contract changes."""
    plan = replay_plan(POINTED)
    flips = [m for m in derive_mutants(plan.base) if m.kind == "point-flip"]
    assert [m.name for m in flips] == [
        "point-flip-claim-1-0",
        "point-flip-claim-1-1",
        "point-flip-claim-2-0",
        "point-flip-claim-2-1",
    ]
    assert [contract_changes(plan, m) for m in flips] == [
        {"claims[0].points[0].relation": ("equals", "above")},
        {"claims[0].points[1].relation": ("above", "at_most")},
        {"claims[1].points[0].relation": ("contains", "below")},
        {"claims[1].points[1].relation": ("at_least", "below")},
    ]
    assert all(m.equivalent is None for m in flips)
    assert flips[0].seed_rule == SEED_RULES["point-flip"]


def test_every_relation_has_a_flip_and_the_flip_is_another_relation() -> None:
    from pytest_diageval.core.contract.contracts import POINT_RELATIONS

    assert set(mutant_kinds.POINT_FLIPS) == set(POINT_RELATIONS)
    assert all(
        flip in POINT_RELATIONS and flip != r for r, flip in mutant_kinds.POINT_FLIPS.items()
    )
