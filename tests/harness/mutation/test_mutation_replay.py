"""Running mutants (harness/mutation/mutant_runs.py): which answers a mutant gets, and its verdict.

Scripted runs use the documented example; the cassette tests record the same example once
against the local fake OpenAI server (tests/support/fake_openai_server.py), stop the server,
and then serve the cassette's answers to the mutants: nothing may reach the network.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_diageval.agents.scripted.model import ScriptEntry
from pytest_diageval.core.answer import composer as composer_module
from pytest_diageval.harness.format.loader import load_scenario, load_scenario_world
from pytest_diageval.harness.mutation.kinds import PROSE_CANARY
from pytest_diageval.harness.mutation.mutant_runs import (
    MutationSetupError,
    ReplayPlan,
    cassette_entries,
    confirmed_lines,
    mutant_entries,
    plan_replay,
    run_mutant,
)
from pytest_diageval.harness.mutation.mutants import Mutant, derive_mutants
from pytest_diageval.harness.runner import run_scenario
from pytest_diageval.harness.settings import RunSettings
from support.fake_openai_server import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "tests" / "plugin" / "data" / "example-scenario.yaml"
FORGERIES = (
    "other-invocation-claim-1-0",
    "other-invocation-claim-1-1",
    "other-path-claim-1-1",
    "index-plus-one-claim-1-0",
    "index-plus-one-claim-1-1",
    "digit-first-claim-1-0",
    "digit-last-claim-1-1",
    "tool-swap-claim-1-0",
    "negation-flip-claim-1-0",
    "negation-flip-claim-1-1",
)


def example_plan(entries: list[ScriptEntry] | None = None, *, cassette: bool = False) -> ReplayPlan:
    scenario = load_scenario(EXAMPLE)
    assert scenario.llm is not None
    assert scenario.llm.script is not None
    world = load_scenario_world(scenario, EXAMPLE)
    served = scenario.llm.script if entries is None else entries
    plan = plan_replay(scenario.scenario_id, scenario.query, world, served, cassette=cassette)
    assert plan is not None
    return plan


def mutant(plan: ReplayPlan, name: str) -> Mutant:
    return next(m for m in derive_mutants(plan.base) if m.name == name)


@pytest.fixture(scope="module")
def scripted() -> ReplayPlan:
    return example_plan()


@pytest.fixture(scope="module")
def recorded_cassette(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example recorded once against the fake server (which is stopped afterwards)."""
    scenario = load_scenario(EXAMPLE)
    assert scenario.llm is not None
    cassette = tmp_path_factory.mktemp("cassettes") / "example.yaml"
    with FakeOpenAIServer(
        [e.model_dump(exclude_none=True) for e in scenario.llm.script or []]
    ) as server:
        settings = RunSettings(record_mode="once", base_url=server.base_url, model="m")
        run = run_scenario(
            scenario, EXAMPLE, cassette=cassette, settings=settings, rerecord_command=""
        )
    assert run.result is not None, run.error
    assert run.result.final_verdict == "PASS"
    return cassette


def test_the_plan_knows_the_round_of_every_answer_and_the_contract_position(
    scripted: ReplayPlan,
) -> None:
    assert [e.stage for e in scripted.entries] == ["planner", "executor", "executor", "verifier"]
    assert scripted.rounds == (1, 1, 1, 1)
    assert scripted.contract_index == 2
    assert scripted.baseline.final_verdict == "PASS"


def test_a_scenario_that_does_not_reach_pass_has_no_plan() -> None:
    scenario = load_scenario(EXAMPLE)
    assert scenario.llm is not None
    script = [e.model_dump(exclude_none=True) for e in scenario.llm.script or []]
    script[3]["content"]["facts_checked"][0]["verification"] = "indirect_support"
    entries = [ScriptEntry.model_validate(e) for e in script]
    world = load_scenario_world(scenario, EXAMPLE)
    assert plan_replay("x", scenario.query, world, entries, cassette=False) is None


def test_a_script_with_answers_left_over_cannot_be_mutated(scripted: ReplayPlan) -> None:
    extra = [*scripted.entries, ScriptEntry(stage="planner", content={"plan": "x"})]
    with pytest.raises(MutationSetupError, match=r"leaves 1 answer\(s\) unused"):
        example_plan(extra)


def test_a_contract_mutant_replaces_the_contract_and_repeats_the_round_for_a_retry(
    scripted: ReplayPlan,
) -> None:
    forged = mutant(scripted, "digit-first-claim-1-0")
    entries = mutant_entries(scripted, forged)
    assert [e.stage for e in entries] == ["planner", "executor", "executor", "verifier"] * 2
    assert entries[2].content == forged.contract
    assert entries[6].content == forged.contract
    # Scripted: the verifier answers what the scenario scripted.
    assert entries[3] == scripted.entries[3]


def test_a_verifier_mutant_keeps_the_contract_and_replaces_the_verifier(
    scripted: ReplayPlan,
) -> None:
    demoted = mutant(scripted, "demoted-claim-1-all")
    entries = mutant_entries(scripted, demoted)
    assert entries[2] == scripted.entries[2]
    assert entries[3] == ScriptEntry(stage="verifier", content=demoted.verifier)


def test_a_runbook_mutant_adds_the_lookup_to_the_last_tool_call_turn(scripted: ReplayPlan) -> None:
    only = mutant(scripted, "runbook-only-claim-1-all")
    entries = mutant_entries(scripted, only)
    assert entries[1].tool_calls is not None
    assert [(c.name, c.arguments) for c in entries[1].tool_calls] == [
        ("query_metrics", {"service": "order-service"}),
        ("query_logs", {"service": "order-service", "keywords": ["内存"]}),
        ("lookup_knowledge", {"query": "HighMemoryUsage"}),
    ]
    outcome = run_mutant(scripted, only)
    assert outcome.result is not None
    row = outcome.result.invocations[2]
    assert (row.id, row.tool_name, row.success) == (3, "lookup_knowledge", True)
    assert row.retrieval_details is not None
    assert row.retrieval_details.evidence_refs is not None
    ref = row.retrieval_details.evidence_refs[0]
    cited = scripted.base.runbook
    assert not isinstance(cited, str)
    # The quote the mutant cites is the real text at a real place of a real invocation.
    assert (ref.raw_path, ref.text) == (
        cited.binding["raw_path"],
        cited.binding["evidence_excerpt"],
    )


@pytest.mark.parametrize("name", FORGERIES)
def test_forged_citations_are_killed_by_the_gatekeeper(scripted: ReplayPlan, name: str) -> None:
    outcome = run_mutant(scripted, mutant(scripted, name))
    assert outcome.status == "killed"
    assert outcome.result is not None
    assert outcome.verdict == "REJECT"
    assert outcome.result.rounds[0].gatekeeper.severity == "reject"


def test_extra_sentence_survives_only_when_the_sentence_reaches_the_answer(
    scripted: ReplayPlan,
) -> None:
    extra = mutant(scripted, "extra-sentence-answer-all")
    outcome = run_mutant(scripted, extra)
    assert outcome.result is not None
    published = extra.forged_text is not None and extra.forged_text in outcome.result.final_answer
    assert outcome.status == ("survived" if outcome.verdict == "PASS" and published else "killed")


def test_a_mutant_the_answers_cannot_serve_is_an_error_not_a_kill(scripted: ReplayPlan) -> None:
    truncated = dataclasses.replace(scripted, entries=scripted.entries[:3])
    outcome = run_mutant(truncated, mutant(truncated, "demoted-claim-1-all"))
    assert outcome.status == "error"
    assert "the mutant run asked what no answer serves" in outcome.detail


def test_cassette_answers_become_script_entries_in_recorded_order(recorded_cassette: Path) -> None:
    entries = cassette_entries(recorded_cassette)
    assert [e.stage for e in entries] == ["planner", "executor", "executor", "verifier"]
    assert entries[0].raw_arguments is not None  # the planner's forced function call
    assert entries[1].tool_calls is not None
    assert [c.name for c in entries[1].tool_calls] == ["query_metrics", "query_logs"]
    assert entries[2].raw_arguments is not None  # the submit_evidence_contract call
    assert entries[3].raw_arguments is not None


def test_cassette_mutants_meet_the_worst_case_verifier(recorded_cassette: Path) -> None:
    plan = example_plan(cassette_entries(recorded_cassette), cassette=True)
    assert plan.baseline.final_verdict == "PASS"
    forged = mutant(plan, "digit-first-claim-1-0")
    entries = mutant_entries(plan, forged)
    assert entries[3].content is not None
    assert entries[3].content["rationale"] == "worst-case verifier: says PASS whatever it is shown"
    outcome = run_mutant(plan, forged)
    assert outcome.status == "killed"
    assert outcome.verdict == "REJECT"
    # A verifier mutant changes nothing before the verifier: the recorded output, demoted.
    demoted = mutant(plan, "demoted-claim-1-all")
    assert demoted.verifier is not None
    assert demoted.verifier["rationale"] == "ok"


def test_an_interaction_that_cannot_be_served_names_the_cassette(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump({"interactions": [{"request": {}}]}), "utf-8")
    with pytest.raises(MutationSetupError, match=r"broken.yaml: interaction 1 cannot be served"):
        cassette_entries(broken)


def test_a_forgery_that_only_drops_a_negation_is_not_published_by_the_negated_original() -> None:
    from pytest_diageval.harness.mutation.mutant_runs import is_published

    answer = "经核验确认的结论：\n1. 未检索到 payment-service 的 OOM 日志。"
    assert not is_published("检索到 payment-service 的 OOM 日志。", answer)
    assert is_published(
        "检索到 payment-service 的 OOM 日志。", "1. 检索到 payment-service 的 OOM 日志。"
    )
    # the forgery published once beside the original still counts
    assert is_published("检索到 X。", "未检索到 X。但检索到 X。")
    assert is_published("存在告警", "order-service 存在告警")


def test_a_prose_rewrite_is_killed_and_its_canary_reaches_no_answer() -> None:
    plan = example_plan()
    prose = mutant(plan, "prose-rewrite-answer-all")
    assert prose.equivalent is None
    contract = prose.contract or {}
    assert all(c["claim_id"].startswith("rewritten-") for c in contract["claims"])
    outcome = run_mutant(plan, prose)
    assert outcome.result is not None
    assert outcome.status == "killed"
    assert PROSE_CANARY not in outcome.result.final_answer
    # the rendering is the unmutated run's, evidence line for evidence line
    assert confirmed_lines(outcome.result.final_answer) <= confirmed_lines(
        plan.baseline.final_answer
    )


def test_a_composer_that_publishes_the_claim_text_lets_the_prose_rewrite_survive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Made to fail on purpose: each rendered line carrying its claim's wording (the design
    before issue 36) is what the prose check exists to catch."""
    real = composer_module.render_confirmed

    def wordy(used: list[str], gatekeeper: Any, *args: Any, **kwargs: Any) -> Any:
        evidence = real(used, gatekeeper, *args, **kwargs)
        evidence.groups = {
            service: [f"{line} {used}" for line in lines]
            for service, lines in evidence.groups.items()
        }
        return evidence

    monkeypatch.setattr(composer_module, "render_confirmed", wordy)
    plan = example_plan()
    outcome = run_mutant(plan, mutant(plan, "prose-rewrite-answer-all"))
    assert outcome.status == "survived"
