"""ChatService: one diagnosis, Planner → Executor → Gatekeeper → Verifier → answer.

The model-driven agents do the talking; the deterministic core decides. Per round:

1. the planner plans (a failure is recorded, not fatal); steps outside the scope are withheld;
2. the executor collects evidence through the recorder and returns the contract;
3. the gatekeeper checks every citation against the store;
4. the trace summary is built from the persisted rows;
5. the verifier labels facts; claims outside the question are set aside (``core.scope``); the
   code derives verdict and score from the in-scope claims;
6. routing decides: answer now, or (LOW_CONFID < 0.5 in round 1 only) one more round.

The scope is read once from the query and the world's names (an alert's services too),
persisted (``self_evaluation.scope_contract``; set-aside claims in ``verifier_evaluation``), and
narrows what the executor may generate (``DecodingScope``).

Everything is persisted as it happens (agent steps, tool rows, verifier and rule evaluations).
An LLM that answers nothing usable ends the session as an error in the store, never a PASS;
no model output makes ``run`` raise (an absurd id or path is a gatekeeper reject); should a
bug raise anyway, the session row is closed with ``status="error"`` before it propagates.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from itertools import chain
from typing import Any

from pytest_diageval.agents.executor import ExecutorBudget, ExecutorRun, run_executor
from pytest_diageval.agents.llm import LLM, LLMUnavailable
from pytest_diageval.agents.planner import run_planner
from pytest_diageval.agents.prompts import example_subjects
from pytest_diageval.agents.results import ChatResult, RoundResult
from pytest_diageval.agents.verifier import VerifierRun, run_verifier
from pytest_diageval.core.answer.audit import (
    build_verifier_evaluation,
    persist_composer_output,
    persist_verifier_evaluation,
)
from pytest_diageval.core.answer.composer import ComposerOutput, compose_answer
from pytest_diageval.core.answer.routing import build_retry_context, decide_route
from pytest_diageval.core.contract.contracts import (
    FactChecked,
    GatekeeperResult,
    RetryContext,
    VerifierInput,
)
from pytest_diageval.core.contract.scope_contract import DecodingScope, ScopeContract
from pytest_diageval.core.evidence.recorder import ToolInvocationRecorder
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.evidence.tool_arguments import (
    constrained_tool_definitions,
    services_named_in,
)
from pytest_diageval.core.evidence.tools import Toolbox
from pytest_diageval.core.evidence.trace_summary import ToolTraceSummaryService
from pytest_diageval.core.evidence.world import World
from pytest_diageval.core.judge.gatekeeper import Gatekeeper, parse_failure_result
from pytest_diageval.core.judge.rule_evaluation import evaluate_rows
from pytest_diageval.core.judge.verdict import VerdictDecision, derive_verdict, fallback_decision
from pytest_diageval.core.scope.session import (
    ScopeNames,
    ScopeSplit,
    checked_plan,
    decoding_scope,
    is_off_scope,
    session_scope,
    split_claims,
)

__all__ = ["DEFAULT_SESSION_ID", "ChatService"]

DEFAULT_SESSION_ID = "diag-1"


@dataclass
class _Session:
    """What every step of one run needs."""

    session_id: str
    query: str
    now: str
    llm: LLM
    recorder: ToolInvocationRecorder
    tools: list[dict[str, Any]]
    aliases: dict[str, str]  # the world's service aliases, for the claims' subject checks
    scope: ScopeContract  # what the question lets a claim be about (read once, never widened)
    names: ScopeNames  # the names a question and a claim can use, in this world
    decoding: DecodingScope  # what the executor's requests may generate, from the scope


class ChatService:
    """Runs whole diagnoses against one store (a fresh ``:memory:`` store by default)."""

    def __init__(
        self,
        *,
        store: Store | None = None,
        budget: ExecutorBudget | None = None,
        max_rounds: int = 2,
    ) -> None:
        self.store = store if store is not None else Store()
        self.budget = budget if budget is not None else ExecutorBudget()
        self.max_rounds = max_rounds
        self.last_rounds: list[RoundResult] = []
        """The rounds the latest run finished, kept also when the run raised (a broken
        script stops a run between rounds; its author needs the rounds before the stop)."""

    def run(
        self, query: str, world: World, llm: LLM, *, session_id: str = DEFAULT_SESSION_ID
    ) -> ChatResult:
        now = world.now.isoformat()
        names = _scope_names(world, query)
        scope, _widened = session_scope(query, names)  # the planner's proposal is a later step
        self.store.create_session(session_id, query, now)
        recorder = ToolInvocationRecorder(self.store, Toolbox(world), session_id)
        decoding = decoding_scope(scope, names)
        tools = constrained_tool_definitions(world, query, decoding)
        scope_record = {"scope": scope.model_dump(mode="json"), "source": "query"}
        self.store.update_self_evaluation(session_id, "scope_contract", scope_record)
        aliases = world.entity_aliases()
        session = _Session(
            session_id, query, now, llm, recorder, tools, aliases, scope, names, decoding
        )
        rounds: list[RoundResult] = []
        self.last_rounds = rounds
        try:
            self._run_rounds(session, rounds)
            return self._complete(session, rounds)
        except LLMUnavailable as exc:
            return self._fail(session, rounds, str(exc))  # "LLM unavailable (stage, round): …"
        except Exception as exc:
            # Model output is graded, never fatal; reaching here is a bug. It stays loud (the
            # exception propagates), but the session row is closed with a status first.
            message = f"internal error: {type(exc).__name__}: {exc}"
            self.store.finish_session(
                session_id, status="error", now=now, error_message=message[:2000]
            )
            raise

    # ------------------------------------------------------------------ rounds

    def _run_rounds(self, session: _Session, rounds: list[RoundResult]) -> None:
        retry_context: RetryContext | None = None
        for round_number in range(1, self.max_rounds + 1):
            result, next_context = self._run_round(session, round_number, retry_context)
            rounds.append(result)
            if next_context is None:
                return
            retry_context = next_context

    def _run_round(
        self, session: _Session, round_number: int, retry_context: RetryContext | None
    ) -> tuple[RoundResult, RetryContext | None]:
        """The round's result, and what the next round is told (None: no next round)."""
        planner = run_planner(
            session.llm, session.query, round=round_number, retry_context=retry_context
        )
        plan, plan_set_aside = checked_plan(planner.plan, session.scope, session.names)
        self._persist_step(
            session, round_number, "planner", planner.messages, planner.step_output(plan_set_aside)
        )
        executor = run_executor(
            session.llm,
            session.recorder,
            query=session.query,
            round=round_number,
            plan=plan,  # the plan checked against the scope, never the model's own
            retry_context=retry_context,
            budget=self.budget,
            tools=session.tools,
            scope=session.decoding,
        )
        self._persist_step(session, round_number, "executor", None, executor.step_output())
        gatekeeper = self._gatekeep(session, executor)
        summary = ToolTraceSummaryService(self.store).build(session.session_id)
        verifier_input = VerifierInput(
            original_query=session.query,
            executor_final_answer=executor.final_answer,
            executor_structured_output=executor.contract,
            executor_output_parse_status=executor.parse_status,
            gatekeeper_result=gatekeeper,
            tool_trace_summary=summary,
            retry_context=retry_context,
        )
        verifier = run_verifier(session.llm, verifier_input, round=round_number)
        self._persist_step(
            session, round_number, "verifier", verifier.messages, verifier.step_output()
        )
        split = split_claims(  # each claim judged with the items its passed bindings cite
            executor.contract,
            session.scope,
            session.names,
            invocations=session.recorder.invocations(),
            gatekeeper=gatekeeper,
        )
        decision = self._decide(session, verifier, verifier_input, split)
        route = decide_route(
            decision,
            round_number,
            verifier_fallback=verifier.output is None,
            max_rounds=self.max_rounds,
        )
        record = build_verifier_evaluation(
            round=round_number,
            verifier_output=verifier.output,
            decision=decision,
            gatekeeper=gatekeeper,
            trace_summary=summary,
            parse_status=executor.parse_status,
            route=route,
            fallback_reason=verifier.failure,
            set_aside=split.set_aside,
        )
        # The rule channel as EvaluationService.persist writes it, in the same transaction.
        rules = evaluate_rows(session.recorder.invocations()).model_dump(mode="json")
        persist_verifier_evaluation(self.store, session.session_id, record, rule_evaluation=rules)
        next_context = None
        if route.action == "retry":
            gaps = self._unscoped_gap_facts(session, verifier, verifier_input, split)
            next_context = build_retry_context(decision, gatekeeper, gap_facts=gaps)
        result = RoundResult(
            round=round_number,
            retry_context=retry_context,
            plan=planner.plan,
            planner_error=planner.error,
            plan_set_aside=plan_set_aside,
            executor_final_answer=executor.final_answer,
            executor_contract=executor.contract,
            parse_status=executor.parse_status,
            tool_calls=executor.tool_calls,
            executor_turns=executor.turns,
            executor_budget_exhausted=executor.budget_exhausted,
            executor_stop_reason=executor.stop_reason,
            gatekeeper=gatekeeper,
            tool_trace_summary=summary,
            verifier_output=verifier.output,
            verifier_failure=verifier.failure,
            decision=decision,
            route=route,
            set_aside=split.set_aside,
            texts_at_bound=[
                *(f"planner: {text}" for text in planner.texts_at_bound),
                *(f"executor: {text}" for text in executor.texts_at_bound),
                *(f"verifier: {text}" for text in verifier.texts_at_bound),
            ],
        )
        return result, next_context

    def _gatekeep(self, session: _Session, executor: ExecutorRun) -> GatekeeperResult:
        if executor.contract is None:
            return parse_failure_result(executor.parse_status.detail)
        return Gatekeeper(self.store).check(executor.contract, session.session_id)

    def _decide(
        self,
        session: _Session,
        verifier: VerifierRun,
        verifier_input: VerifierInput,
        split: ScopeSplit,
    ) -> VerdictDecision:
        gatekeeper = verifier_input.gatekeeper_result
        if verifier.output is None:
            return fallback_decision(verifier.failure or "verifier gave no output", gatekeeper)
        invocations = session.recorder.invocations()  # the stored rows, kept in memory
        return derive_verdict(
            verifier.output,
            gatekeeper,
            verifier_input.tool_trace_summary,
            [row.id for row in invocations],
            claims=split.contract.claims if split.contract is not None else (),  # in scope
            invocations=invocations,
            aliases=session.aliases,
            claims_set_aside=split.claims_set_aside,
        )

    def _unscoped_gap_facts(
        self,
        session: _Session,
        verifier: VerifierRun,
        verifier_input: VerifierInput,
        split: ScopeSplit,
    ) -> list[FactChecked] | None:
        """The facts as judged without the scope, for the retry context's evidence gaps only.

        The retry context says what evidence is missing, not what is in scope (the scope
        reaches the model through the tools' enums, the contract schema and the checked plan),
        so the next round is told the gaps it was always told. The verdict and the route never
        read these facts.
        """
        if not split.set_aside or verifier.output is None:
            return None
        unscoped = ScopeSplit(verifier_input.executor_structured_output, [], [])
        return self._decide(session, verifier, verifier_input, unscoped).facts

    def _persist_step(
        self,
        session: _Session,
        round_number: int,
        agent: str,
        messages: list[dict[str, str]] | None,
        output: dict[str, Any],
    ) -> None:
        """One agent step row (an agent's run in one round); bumps ``step_count``.

        Its input is the stage's messages; the executor's (``messages=None``) is the query, as
        its messages carry the tool outputs, which are rows of their own."""
        input = {"query": session.query} if messages is None else {"messages": messages}
        self.store.add_agent_step(
            session.session_id, round=round_number, agent=agent, input=input, output=output
        )

    # ------------------------------------------------------------------ endings

    def _complete(self, session: _Session, rounds: list[RoundResult]) -> ChatResult:
        last = rounds[-1]
        composition = compose_answer(
            last.route,
            decision=last.decision,
            # a set-aside claim never reaches the answer: the composer sees the in-scope ones
            contract=split_claims(
                last.executor_contract,
                session.scope,
                session.names,
                invocations=session.recorder.invocations(),
                gatekeeper=last.gatekeeper,
            ).contract,
            executor_final_answer=last.executor_final_answer,
            gatekeeper=last.gatekeeper,
            invocations=session.recorder.invocations(),
            question=session.query,
            zone=datetime.fromisoformat(session.now).tzinfo,
            off_scope=lambda text: is_off_scope(text, session.scope, session.names),
        )
        answer = composition.answer
        persist_composer_output(self.store, session.session_id, composition.output)
        verdict = last.decision.derived_verdict
        self.store.finish_session(
            session.session_id,
            status="completed",
            now=session.now,
            final_verdict=verdict,
            final_answer=answer,
        )
        return self._result(
            session, rounds, status="completed", answer=answer, composer=composition.output
        )

    def _fail(self, session: _Session, rounds: list[RoundResult], message: str) -> ChatResult:
        self.store.finish_session(
            session.session_id, status="error", now=session.now, error_message=message
        )
        return self._result(session, rounds, status="error", error=message)

    def _result(
        self,
        session: _Session,
        rounds: list[RoundResult],
        *,
        status: str,
        answer: str = "",
        error: str | None = None,
        composer: ComposerOutput | None = None,
    ) -> ChatResult:
        stored = self.store.get_session(session.session_id)
        last = rounds[-1] if rounds and status == "completed" else None
        return ChatResult.model_validate(
            {
                "session_id": session.session_id,
                "query": session.query,
                "scope": session.scope,
                "status": status,
                "error": error,
                "rounds": rounds,
                "final_verdict": None if last is None else last.decision.derived_verdict,
                "final_score": None if last is None else last.decision.derived_score,
                "answer_kind": None if last is None else last.route.action,
                "final_answer": answer,
                "composer_output": composer,
                "invocations": session.recorder.invocations(),
                "step_count": stored["step_count"],
                "tool_call_count": stored["tool_call_count"],
            }
        )


def _scope_names(world: World, query: str) -> ScopeNames:
    """The names a scope knows: the world's, any ``…-service`` the question names (data or not),
    and the prompts' example subjects, outside every question (a copied plan or claim)."""
    services = [a.service for a in world.alerts] + [log.service for log in world.logs]
    services += [*world.aliases, *services_named_in(query)]
    owners = [(a.alert_name, a.service) for a in world.alerts]  # every alert and its service
    foreign = [*chain(*example_subjects())]
    return ScopeNames.of(services, [a for a, _ in owners], world.aliases, foreign, owners)
