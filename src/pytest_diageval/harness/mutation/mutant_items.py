"""``--diageval-mutate``: every mutant of a PASS scenario is its own pytest item.

Node ids read ``<file>::<scenario id>::mutant[digit-first-claim-1-0]``
(``<kind>-<claim>-<binding>``, see :mod:`pytest_diageval.harness.mutation.mutants`), so ``-k``,
``-x``, xdist, junit and ``--diageval-report`` treat mutants as any other item. The scenario's
unmutated replay runs once at collection (it says whether the scenario reaches PASS and what
there is to mutate); each item then runs its mutant (:mod:`~.mutant_runs`).

An item passes when its mutant is killed (any verdict but PASS), is skipped when the mutant
is equivalent by construction, and fails when the mutant survives, naming what changed, the
verdict it reached and the seed rule that let it through. A scenario whose replay cannot be
mutated (a stale cassette, a broken script) gets one failing ``mutation-setup`` item, and one
that does not reach PASS one skipped ``not-mutated`` item whose reason is its verdict (so a run
with nothing to mutate says why instead of "no tests ran").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pytest_diageval.harness.collect import ScenarioFile
from pytest_diageval.harness.format.loader import load_scenario_world
from pytest_diageval.harness.items import ScenarioNode
from pytest_diageval.harness.mutation.mutant_runs import (
    MutantOutcome,
    MutationSetupError,
    ReplayPlan,
    cassette_entries,
    plan_replay,
    run_mutant,
)
from pytest_diageval.harness.mutation.mutants import Mutant, derive_mutants
from pytest_diageval.harness.mutation.scope_mutants import (
    scope_mutants,
    without_set_aside_targets,
)
from pytest_diageval.harness.pytest_adapter import TerminalRepr
from pytest_diageval.harness.report.reporter import audit_trail
from pytest_diageval.harness.runner import script_entries

__all__ = [
    "MutantItem",
    "MutantSurvived",
    "MutationFile",
    "MutationNode",
    "MutationSetupItem",
    "NotMutatedItem",
    "mutant_payload",
    "not_mutated_payload",
]

SETUP_ITEM = "mutation-setup"
NOT_MUTATED_ITEM = "not-mutated"


class MutantSurvived(Exception):
    """A mutant reached PASS: the guards let a forgery through."""


class MutantRunError(Exception):
    """A mutant's run could not be judged (its replay asked what no answer serves)."""


class MutationFile(ScenarioFile):
    """A scenario file collected for mutation: its scenario node yields mutants."""

    def collect(self) -> Iterator[Any]:
        for node in super().collect():  # loads and checks the file exactly as a normal run
            if not isinstance(node, ScenarioNode):
                yield node  # whatever a normal run reports about the file, unchanged
                continue
            yield MutationNode.from_parent(
                self, name=node.name, outline=node.outline, cassette=node.cassette
            )


class MutationNode(ScenarioNode):
    """One scenario in mutation mode: the replay plan and one item per mutant."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.plan: ReplayPlan | None = None
        self.setup_error: str | None = None

    def collect(self) -> Iterator[pytest.Item]:  # type: ignore[override]
        try:
            self.plan = self._replay_plan()
        except MutationSetupError as exc:
            self.setup_error = str(exc)
            yield MutationSetupItem.from_parent(self, name=SETUP_ITEM)
            return
        except Exception as exc:  # a file it cannot read: its own failure, the rest still run
            where = self.path if self.cassette is None else self.cassette
            self.setup_error = f"{where}: cannot be mutated: {type(exc).__name__}: {exc}"
            yield MutationSetupItem.from_parent(self, name=SETUP_ITEM)
            return
        if self.plan is None:  # no PASS, nothing a forgery could sneak through
            yield self._tagged(NotMutatedItem.from_parent(self, name=NOT_MUTATED_ITEM))
            return
        scoped = scope_mutants(self.plan.base, self.plan.baseline)  # issue 25's kinds, last
        mutants = [*derive_mutants(self.plan.base), *scoped]
        for mutant in without_set_aside_targets(mutants, self.plan.baseline):
            name = f"mutant[{mutant.name}]"
            yield self._tagged(MutantItem.from_parent(self, name=name, mutant=mutant))

    def _tagged(self, item: pytest.Item) -> pytest.Item:
        for tag in self.outline.tags:  # -m selects mutants by the scenario's tags too
            self.config.addinivalue_line("markers", f"{tag}: scenario tag")
            item.add_marker(tag)
        return item

    def _replay_plan(self) -> ReplayPlan | None:
        scenario = self.scenario
        world = load_scenario_world(scenario, self.path)
        if self.cassette is None:
            entries = script_entries(scenario, world)
        else:
            run = self.run()  # the cassette's own replay: stale or broken cassettes stop here
            if run.result is None:
                raise MutationSetupError(f"the scenario's replay fails: {run.error}")
            if run.result.final_verdict != "PASS":
                return None
            entries = cassette_entries(self.cassette)
        plan = plan_replay(
            scenario.scenario_id, scenario.query, world, entries, cassette=self.cassette is not None
        )
        if plan is None and self.cassette is not None:
            raise MutationSetupError(
                "the cassette replays to PASS, but its answers served in order do not"
            )
        return plan


class MutationSetupItem(pytest.Item):
    """Fails with the reason a scenario cannot be mutated."""

    def runtest(self) -> None:
        assert isinstance(self.parent, MutationNode)
        raise MutationSetupError(self.parent.setup_error)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        assert isinstance(self.parent, MutationNode)
        return f"scenario {self.parent.scenario_id} cannot be mutated: {excinfo.value}"

    def reportinfo(self) -> tuple[Any, int | None, str]:
        assert isinstance(self.parent, MutationNode)
        return self.path, None, f"{self.parent.scenario_id}::{SETUP_ITEM}"


class NotMutatedItem(pytest.Item):
    """Skipped: the scenario does not reach PASS, so no forgery of it could pass either."""

    @property
    def node(self) -> MutationNode:
        assert isinstance(self.parent, MutationNode)
        return self.parent

    def reason(self) -> str:
        run = self.node.run()  # cached: a cassette scenario's replay has already run
        result = run.result
        if result is None or result.final_verdict is None:
            reached = "it reaches no verdict"
        elif result.final_verdict == "PASS":
            reached = "its replay from the answers in order does not reach PASS"
        else:
            score = "-" if result.final_score is None else f"{result.final_score:g}"
            reached = f"its verdict is {result.final_verdict} (score {score})"
        return f"not mutated: {reached}; --diageval-mutate forges only scenarios that reach PASS"

    def runtest(self) -> None:
        pytest.skip(self.reason())

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"{self.node.scenario_id}::{NOT_MUTATED_ITEM}"


class MutantItem(pytest.Item):
    """One mutant of one scenario."""

    def __init__(self, *, mutant: Mutant, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mutant = mutant
        self.outcome: MutantOutcome | None = None

    @property
    def node(self) -> MutationNode:
        assert isinstance(self.parent, MutationNode)
        return self.parent

    def runtest(self) -> None:
        if self.mutant.equivalent is not None:
            pytest.skip(f"equivalent mutant: {self.mutant.equivalent}")
        assert self.node.plan is not None
        self.outcome = run_mutant(self.node.plan, self.mutant)
        self.user_properties.append(("diageval_mutant_outcome", self.outcome.status))
        self.user_properties.append(("diageval_verdict", self.outcome.verdict))
        if self.outcome.result is not None and self.outcome.status != "killed":
            self.add_report_section(
                "call", "diageval audit trail", audit_trail(self.outcome.result)
            )
        if self.outcome.status == "error":
            raise MutantRunError(self.outcome.detail)
        if self.outcome.status == "survived":
            raise MutantSurvived(survivor_message(self.mutant, self.outcome))

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        header = f"scenario {self.node.scenario_id} — mutant[{self.mutant.name}]"
        if isinstance(excinfo.value, MutantSurvived):
            return f"{header} survived\n{excinfo.value}"
        if isinstance(excinfo.value, MutantRunError):
            return f"{header} could not be judged\n{excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"{self.node.scenario_id}::{self.name}"


def survivor_message(mutant: Mutant, outcome: MutantOutcome) -> str:
    """What changed, what the pipeline concluded, and which seed rule did not hold."""
    result = outcome.result
    assert result is not None
    assert result.last_round is not None
    last = result.last_round
    overrides = [o.rule for o in last.decision.overrides] or ["none"]
    answer = result.final_answer.replace("\n", " ")
    return "\n".join(
        [
            f"  changed: {mutant.change}",
            f"  reached: {result.final_verdict} (score {result.final_score}, gatekeeper"
            f" {last.gatekeeper.severity}, answer {result.answer_kind},"
            f" rounds {len(result.rounds)}); code overrides: {', '.join(overrides)}",
            f"  let through by: {mutant.seed_rule}",
            f"  final answer: {answer if len(answer) <= 160 else answer[:159] + '…'}",
        ]
    )


def not_mutated_payload(item: pytest.Item) -> dict[str, str] | None:
    """The scenario a ``not-mutated`` item skipped and why (for the mutation summary)."""
    if not isinstance(item, NotMutatedItem):
        return None
    return {"scenario": item.node.scenario_id, "nodeid": item.nodeid, "reason": item.reason()}


def mutant_payload(item: pytest.Item) -> dict[str, Any] | None:
    """The plain dict a report carries to the mutation summary (also across xdist).

    ``outcome`` is killed, survived, equivalent or error (a run that crashed or could not be
    judged, or a scenario that cannot be mutated)."""
    if isinstance(item, MutationSetupItem):
        assert isinstance(item.parent, MutationNode)
        scenario = item.parent.scenario_id
        return {
            "scenario": scenario,
            "nodeid": item.nodeid,
            "name": SETUP_ITEM,
            "kind": "setup",
            "outcome": "error",
            "change": item.parent.setup_error,
        }
    if not isinstance(item, MutantItem):
        return None
    mutant = item.mutant
    run = item.outcome
    outcome = "equivalent" if mutant.equivalent is not None else "error"
    if run is not None:
        outcome = run.status
    return {
        "scenario": item.node.scenario_id,
        "nodeid": item.nodeid,
        "name": mutant.name,
        "kind": mutant.kind,
        "claim": mutant.claim,
        "binding": mutant.binding,
        "change": mutant.change,
        "outcome": outcome,
        "equivalent_reason": mutant.equivalent,
        "verdict": None if run is None else run.verdict,
        "seed_rule": mutant.seed_rule,
    }
