"""The replay plan of a scripted scenario, as ``--diageval-mutate`` builds it, for the mutant
tests."""

from __future__ import annotations

from pathlib import Path

from pytest_diageval.harness.format.loader import load_scenario, load_scenario_world
from pytest_diageval.harness.mutation.mutant_runs import ReplayPlan, plan_replay


def replay_plan(path: Path) -> ReplayPlan:
    scenario = load_scenario(path)
    assert scenario.llm is not None
    assert scenario.llm.script is not None
    world = load_scenario_world(scenario, path)
    plan = plan_replay(
        scenario.scenario_id, scenario.query, world, scenario.llm.script, cassette=False
    )
    assert plan is not None
    return plan
