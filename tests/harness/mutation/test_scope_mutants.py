"""The scope kinds of mutant (issue 25), on the shipped scope scenarios: what each forges, that
the pipeline kills it by setting the forged claim aside, and that a mutant aimed at the support
of a claim the scope already set aside is equivalent."""

from __future__ import annotations

from pathlib import Path

from pytest_diageval.harness.mutation.mutant_runs import run_mutant
from pytest_diageval.harness.mutation.mutants import derive_mutants
from pytest_diageval.harness.mutation.scope_mutants import (
    EXCLUDED_ID,
    MOVED_ID,
    scope_mutants,
    without_set_aside_targets,
)
from support.mutation_plans import replay_plan

SCOPE = Path(__file__).resolve().parents[3] / "scenarios" / "scope"


def test_scope_service_adds_the_claim_moved_to_a_service_the_question_does_not_name() -> None:
    plan = replay_plan(SCOPE / "out-of-scope-verified-claim.yaml")
    service, excluded = scope_mutants(plan.base, plan.baseline)  # claim-2 is set aside: no base
    assert (service.name, excluded.name) == (
        "scope-service-claim-1-all",
        "scope-excluded-claim-1-all",
    )
    assert excluded.equivalent == "the question excludes nothing"
    assert service.contract is not None
    assert service.verifier is not None
    moved = service.contract["claims"][-1]
    assert moved["claim_id"] == MOVED_ID
    assert (
        moved["claim_text"]
        == "inventory-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。"
    )
    assert service.forged_text == moved["claim_text"]
    assert service.contract["user_facing_answer"].endswith(moved["claim_text"])
    labels = [(f["claim_id"], f["verification"]) for f in service.verifier["facts_checked"]]
    assert labels[-1] == (MOVED_ID, "direct_evidence")

    outcome = run_mutant(plan, service)

    assert outcome.status == "killed"
    assert outcome.result is not None
    assert outcome.result.final_verdict == "PASS"  # resting on claim-1, the moved text unshown
    assert [c.claim_id for c in outcome.result.last_round.set_aside] == ["claim-2", MOVED_ID]
    assert "inventory-service" not in outcome.result.final_answer


def test_scope_excluded_adds_a_confirmation_of_what_the_question_excluded() -> None:
    plan = replay_plan(SCOPE / "excluded-topic-confirmed.yaml")
    _, excluded = scope_mutants(plan.base, plan.baseline)
    assert excluded.contract is not None
    added = excluded.contract["claims"][-1]
    assert (added["claim_id"], added["claim_text"]) == (
        EXCLUDED_ID,
        "order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%；"
        "已确认 HikariCP 同样存在异常。",
    )

    outcome = run_mutant(plan, excluded)

    assert outcome.status == "killed"
    assert outcome.result is not None
    aside = {c.claim_id: c.rules for c in outcome.result.last_round.set_aside}
    assert aside[EXCLUDED_ID] == ["scope.excluded_topic"]
    assert "HikariCP" not in outcome.result.final_answer


def test_a_question_that_names_no_service_leaves_scope_service_equivalent() -> None:
    example = Path(__file__).resolve().parents[2] / "plugin" / "data" / "example-scenario.yaml"
    plan = replay_plan(example)
    unscoped = plan.baseline.model_copy(update={"scope": None})
    service, excluded = scope_mutants(plan.base, unscoped)
    assert service.equivalent == (
        "the question names no service: a claim about any service is in its scope"
    )
    assert excluded.equivalent == "the question excludes nothing"


def test_mutants_aimed_at_a_set_aside_claims_support_are_equivalent() -> None:
    plan = replay_plan(SCOPE / "root-cause-under-narrow.yaml")
    mutants = {
        m.name: m for m in without_set_aside_targets(derive_mutants(plan.base), plan.baseline)
    }
    for name in ("unbound-claim-2-all", "demoted-claim-2-all", "digit-first-claim-2-0"):
        assert mutants[name].equivalent is not None, name
        assert "outside the question's scope" in mutants[name].equivalent
    assert mutants["unbound-claim-1-all"].equivalent is None
    # a mutant that puts text in the answer still runs, whichever claim it starts from
    assert mutants["statement-number-claim-2-answer"].equivalent is None
