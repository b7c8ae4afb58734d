"""The soundness scenarios (scenarios/soundness/) do what their notes say, and can fail.

No ``expect`` key reads the verdict's overrides or the claim ceilings, yet each soundness
scenario's notes name the rule that stops its hole. This test runs every file and pins exactly
those rules, so a scenario that reaches the right verdict for another reason fails here. Two
mutations show that the answer expectations are not vacuous: a composer that publishes the
executor's answer whatever it says, and one that keeps hidden characters, each fail the
scenario's ``answer_forbidden_keywords`` item.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_diageval.core.answer import answer_templates, composer
from support.scenario_runs import failed_keys, load_raw, run_file
from support.shipped import shipped_files

SOUNDNESS_DIR = Path(__file__).resolve().parents[2] / "scenarios" / "soundness"

# The code's verdict differs from the verifier's PASS 1.0: one override each for the verdict and
# the score.
MATRIX: list[tuple[str, int | None]] = [("verdict.matrix", None), ("verdict.score", None)]
TWO_DIRECT = [("claim-1", "direct_evidence", None), ("claim-2", "direct_evidence", None)]
# The published-answer classes built on the faithful two-claim answer (issue 24).
PUBLISHED_TWO_CLAIMS = [
    f"published-{name}.yaml"
    for name in (
        "number-changed", "numbers-permuted", "timestamp-shuffled", "subject-swapped",
        "causal-join", "arabic-indic-digits", "hedge-with-root-cause",
        "hedge-with-confirmation-synonym", "hedge-with-english-confirmation",
        "hedge-with-restart-synonym", "hedge-with-raise-limit", "hedge-with-fullwidth-restart",
    )
]  # fmt: skip
# file -> (overrides as (rule, fact index), claim ceilings as (claim, ceiling, rule))
RULES: dict[str, tuple[list[tuple[str, int | None]], list[tuple[str, str, str | None]]]] = {
    "runbook-substituted-for-incident-binding.yaml": (
        [("fact.claim_ceiling", 0), *MATRIX],
        [("claim-1", "indirect_support", "claim.runbook_binding")],
    ),
    "runbook-only-claim-verifier-cites-incident.yaml": (
        [("fact.claim_ceiling", 1), *MATRIX],
        [
            ("claim-1", "direct_evidence", None),
            ("claim-2", "no_evidence", "claim.runbook_as_fact"),
        ],
    ),
    "claim-without-bindings-support-none.yaml": (
        [("fact.claim_ceiling", 1), *MATRIX],
        [("claim-1", "direct_evidence", None), ("claim-2", "no_evidence", "claim.no_bindings")],
    ),
    "verifier-demotes-claim-to-non-critical.yaml": (
        [("fact.criticality", 1), *MATRIX],
        [("claim-1", "direct_evidence", None), ("claim-2", "no_evidence", "claim.no_bindings")],
    ),
    "extra-sentence-outside-claims.yaml": ([], [("claim-1", "direct_evidence", None)]),
    "fact-cites-evidence-claim-never-bound.yaml": (
        [("fact.ref_not_bound", 0), *MATRIX],
        [("claim-1", "direct_evidence", None), ("claim-2", "direct_evidence", None)],
    ),
    "no-hit-of-another-subject.yaml": (
        [("fact.claim_ceiling", 1), *MATRIX],
        [
            ("claim-1", "direct_evidence", None),
            ("claim-2", "no_evidence", "claim.negative_subject"),
        ],
    ),
    "invented-fact-with-runbook-claim.yaml": (
        [("fact.evidence_level_cap", 0), ("fact.claim_ceiling", 0), *MATRIX],
        [("claim-1", "no_evidence", "claim.runbook_as_fact")],
    ),
    "hidden-characters-stripped.yaml": ([], [("claim-1", "direct_evidence", None)]),
    # Grounded claims (issue 24): the claim's own items decide its ceiling.
    "claim-entity-not-cited.yaml": (
        [("fact.claim_ceiling", 0), *MATRIX],
        [("claim-1", "no_evidence", "claim.entity_not_cited"), TWO_DIRECT[1]],
    ),
    "claim-number-not-cited.yaml": (
        [("fact.claim_ceiling", 1), *MATRIX],
        [TWO_DIRECT[0], ("claim-2", "no_evidence", "claim.number_not_cited")],
    ),
    "claim-timestamp-not-cited.yaml": (
        [("fact.claim_ceiling", 0), *MATRIX],
        [("claim-1", "no_evidence", "claim.timestamp_not_cited"), TWO_DIRECT[1]],
    ),
    # The item decides which of two contradicting claims falls.
    "claim-contradicts-claim.yaml": (
        [("fact.claim_ceiling", 2), *MATRIX],
        [*TWO_DIRECT, ("claim-3", "no_evidence", "claim.polarity_contradicts_item")],
    ),
    "claim-polarity-contradicts-item.yaml": (
        [("fact.claim_ceiling", 0), *MATRIX],
        [("claim-1", "no_evidence", "claim.polarity_contradicts_item"), TWO_DIRECT[1]],
    ),
    "claim-denial-without-no-hit.yaml": (
        [("fact.claim_ceiling", 0), *MATRIX],
        [("claim-1", "no_evidence", "claim.denial_without_no_hit"), TWO_DIRECT[1]],
    ),
    **{
        f"claim-{name}.yaml": ([("fact.claim_ceiling", 0), *MATRIX], [("claim-1", ceiling, rule)])
        for name, ceiling, rule in (
            ("negative-filtered-no-hit", "no_evidence", "claim.negative_filter"),
            ("negative-terms-not-searched", "no_evidence", "claim.negative_terms"),
            ("negative-alert-no-hit-for-logs", "no_evidence", "claim.negative_kind"),
            ("negative-with-runbook", "indirect_support", "claim.runbook_binding"),
            ("alias-positive", "no_evidence", "claim.subject_not_cited"),
            ("alias-negative", "no_evidence", "claim.negative_subject"),
        )
    },
    # The published answer: the verdict stands (PASS); what matters is which sentences publish.
    **dict.fromkeys(PUBLISHED_TWO_CLAIMS, ([], [*TWO_DIRECT])),
    "published-modal-dropped.yaml": ([], [*TWO_DIRECT, ("claim-3", "direct_evidence", None)]),
    "published-struck-negation.yaml": ([], [("claim-1", "direct_evidence", None)]),
    "claim-hidden-combining-mark.yaml": ([], [("claim-1", "direct_evidence", None)]),
    "single-claim-restated-verbatim.yaml": ([], [("claim-1", "direct_evidence", None)]),
    # The templates: the verifier's own verdict stands; what matters is what the answer quotes.
    "low-confid-gap-names-the-claim.yaml": (
        [],
        [("claim-1", "direct_evidence", None), ("claim-2", "no_evidence", "claim.no_bindings")],
    ),
    "reject-template-quotes-nothing-unverified.yaml": (
        [],
        [("claim-1", "direct_evidence", None), ("claim-2", "no_evidence", "claim.no_bindings")],
    ),
    "faithful-answer-published-verbatim.yaml": (
        [],
        [("claim-1", "direct_evidence", None), ("claim-2", "direct_evidence", None)],
    ),
    # Issue 36's probes: what the user reads is the rendered evidence, never the claim's words.
    # These claims restate their items closely enough that the structural reading lets them
    # stand (their wording is what issue 36 keeps from the user).
    **dict.fromkeys(
        [
            f"rendered-{name}.yaml"
            for name in (
                "canary",
                "enclosed-letters",
            )
        ],
        ([], [("claim-1", "direct_evidence", None)]),
    ),
    # Since issue 37 the verdict reads these as well.
    "rendered-causal-across-items.yaml": (
        [("fact.claim_ceiling", 0), *MATRIX],
        [("claim-1", "indirect_support", "claim.causal_across_items")],
    ),
    **{
        f"rendered-{name}.yaml": (
            [("fact.claim_ceiling", 0), *MATRIX],
            [("claim-1", "no_evidence", rule)],
        )
        for name, rule in (
            ("label-swap", "claim.label_swapped"),
            ("negation-reversed", "claim.polarity_contradicts_item"),
            ("conclusion-with-cited-number", "claim.topic_not_cited"),
        )
    },
    "gap-line-names-claim-by-position.yaml": (
        MATRIX,
        [
            ("claim-1", "direct_evidence", None),
            ("restart-order-service", "no_evidence", "claim.no_bindings"),
        ],
    ),
    "reject-gap-names-claim-by-position.yaml": (
        MATRIX,
        [
            ("claim-1", "direct_evidence", None),
            ("rollback-v2.3.1-now", "no_evidence", "claim.no_bindings"),
            ("claim-3", "no_evidence", "claim.denial_without_no_hit"),
        ],
    ),
    # Issue 37's faithful forms: each claim restates its cited item, so nothing is capped.
    # Most were refused before issue 37 (scenarios/README.md, "Claims read by structure").
    **dict.fromkeys(
        [
            f"structure-faithful-{name}.yaml"
            for name in (
                "acquire-timeout",
                "chinese-clock-time",
                "chinese-numeral-count",
                "chinese-numeral-percent",
                "decimal-seconds",
                "heap-exhausted",
                "month-day-date",
                "no-available-connection",
                "no-idle-connections",
                "not-returned-within",
                "pool-name",
                "recovery-notice-en",
                "recovery-notice-zh",
                "risk-whitelist-pass",
                "seconds-for-ms",
                "utc-time",
            )
        ],
        ([], [*TWO_DIRECT]),
    ),
}

# Issue 37's unfaithful classes: claim-1 misreads the items it cites and is capped below
# direct_evidence by the rule the structural reading names; claim-2, a faithful companion,
# stands. Each reached PASS 1.0 on main before issue 37 (bebce84). The injected second line is
# stopped at the gatekeeper (evidence.instruction_like: its binding fails).
STRUCTURE_UNFAITHFUL: dict[str, tuple[str, str]] = {
    "structure-label-swap.yaml": ("no_evidence", "claim.label_swapped"),
    "structure-clause-polarity.yaml": ("no_evidence", "claim.polarity_contradicts_item"),
    "structure-subject.yaml": ("no_evidence", "claim.subject_not_cited"),
    "structure-time.yaml": ("no_evidence", "claim.timestamp_not_cited"),
    "structure-unit.yaml": ("no_evidence", "claim.label_swapped"),
    "structure-entity-not-in-item.yaml": ("no_evidence", "claim.entity_not_cited"),
    "structure-negative-level.yaml": ("no_evidence", "claim.negative_filter"),
    "structure-injection-second-line.yaml": ("no_evidence", "claim.bindings_failed"),
}
RULES.update(
    {
        name: ([("fact.claim_ceiling", 0), *MATRIX], [("claim-1", *capped), TWO_DIRECT[1]])
        for name, capped in STRUCTURE_UNFAITHFUL.items()
    }
)
# A cross-item causal claim and a hardened suspicion are indirect at most: alone in their
# scenario, every critical fact is indirect and the round is LOW_CONFID.
RULES.update(
    {
        f"structure-{name}.yaml": (
            [("fact.claim_ceiling", 0), *MATRIX],
            [("claim-1", "indirect_support", rule)],
        )
        for name, rule in (
            ("modality", "claim.modality_hardened"),
            ("causal-across-items", "claim.causal_across_items"),
        )
    }
)
# Claims that point (docs/points.md): the points decide, the text is not read. The verifier
# says PASS 1.0 in each; claim-1's text says the opposite of its items in the first.
RULES.update(
    {
        "points-decide-not-the-text.yaml": ([], TWO_DIRECT),
        "points-false-point.yaml": (
            [("fact.claim_ceiling", 0), *MATRIX],
            [("claim-1", "no_evidence", "point.false"), TWO_DIRECT[1]],
        ),
        "points-not-comparable.yaml": (
            [("fact.claim_ceiling", 0), *MATRIX],
            [("claim-1", "no_evidence", "point.not_comparable"), TWO_DIRECT[1]],
        ),
        "points-negative-observation.yaml": ([], [TWO_DIRECT[0]]),
        "points-root-cause-across-items.yaml": (
            [("fact.claim_ceiling", 0), *MATRIX],
            [("claim-1", "indirect_support", "claim.causal_across_items")],
        ),
    }
)


def test_every_soundness_scenario_is_pinned_here_and_tagged_soundness() -> None:
    paths = shipped_files("scenarios/soundness", "*.yaml")
    assert sorted(RULES) == [path.name for path in paths]
    untagged = [p.name for p in paths if "soundness" not in load_raw(p).get("tags", [])]
    assert untagged == []


@pytest.mark.parametrize("name", sorted(RULES))
def test_the_rule_the_notes_name_is_the_one_that_decides(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome = run_file(SOUNDNESS_DIR / name, monkeypatch)
    assert failed_keys(outcome) == set()
    decision = outcome.result.rounds[-1].decision
    overrides, ceilings = RULES[name]
    assert [(o.rule, o.fact_index) for o in decision.overrides] == overrides
    assert [(c.claim_id, c.ceiling, c.rule) for c in decision.claim_ceilings] == ceilings


def _publish_the_executor_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The design before issue 36: the executor's answer is what the user reads."""
    monkeypatch.setattr(
        composer,
        "_direct",
        lambda selection, evidence, confirmed, contract, wording: contract.user_facing_answer,
    )


def test_a_composer_that_publishes_the_executor_answer_fails_the_extra_sentence_scenario(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _publish_the_executor_answer(monkeypatch)
    outcome = run_file(SOUNDNESS_DIR / "extra-sentence-outside-claims.yaml", monkeypatch)
    assert "内存泄漏已确认，请立即重启。" in outcome.result.final_answer
    assert failed_keys(outcome) == {"answer_forbidden_keywords", "required_keywords"}


def test_a_composer_that_keeps_hidden_characters_fails_the_hidden_character_scenario(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _publish_the_executor_answer(monkeypatch)
    outcome = run_file(SOUNDNESS_DIR / "hidden-characters-stripped.yaml", monkeypatch)
    assert "\u202e" in outcome.result.final_answer
    assert failed_keys(outcome) == {"answer_forbidden_keywords", "required_keywords"}


def test_templates_that_quote_the_gap_fact_fail_both_template_scenarios(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The old gap line: the verifier's fact text, quoted.
    monkeypatch.setattr(
        answer_templates,
        "_claim_gap",
        lambda claim, code_ids, wording: "已确认 order-service 的根因是内存泄漏",
    )
    for name in (
        "low-confid-gap-names-the-claim.yaml",
        "reject-template-quotes-nothing-unverified.yaml",
    ):
        outcome = run_file(SOUNDNESS_DIR / name, monkeypatch)
        assert "answer_forbidden_keywords" in failed_keys(outcome), name


# Every class of published prose (issue 24's, and the hedges): each was published by the main
# before issue 36 or is published by a composer that shows the executor's answer.
PUBLISHED_CLASSES = sorted(
    {
        *PUBLISHED_TWO_CLAIMS,
        "published-modal-dropped.yaml",
        "published-struck-negation.yaml",
        # the probes whose claim still stands (the others the verdict stops since issue 37)
        *(
            name
            for name, (_, ceilings) in RULES.items()
            if name.startswith("rendered-") and ceilings[0][1] == "direct_evidence"
        ),
    }
)


@pytest.mark.parametrize("name", PUBLISHED_CLASSES)
def test_a_composer_that_publishes_the_executor_answer_fails_each_published_class(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Show the executor's answer instead of the rendered evidence and each scenario fails:
    the rendering is what stops every one of them."""
    _publish_the_executor_answer(monkeypatch)
    failed = failed_keys(run_file(SOUNDNESS_DIR / name, monkeypatch))
    assert "required_keywords" in failed, name


def test_gap_lines_that_print_the_executor_claim_id_fail_both_position_scenarios(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The gap line before issue 36: the executor's own id when it looked like an id."""
    monkeypatch.setattr(
        answer_templates,
        "_claim_gap",
        lambda claim, code_ids, wording: f"{claim.claim_id}（{claim.claim_type}）缺少工具证据",
    )
    for name in (
        "gap-line-names-claim-by-position.yaml",
        "reject-gap-names-claim-by-position.yaml",
    ):
        outcome = run_file(SOUNDNESS_DIR / name, monkeypatch)
        assert {"answer_forbidden_keywords", "required_keywords"} <= failed_keys(outcome), name
