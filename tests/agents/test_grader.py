"""The grader of a ``rubric`` check: what it is shown (the verified evidence only), that the
same run sends it byte-identical requests, and what an unusable answer becomes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from pytest_diageval.agents.chat_service import ChatService
from pytest_diageval.agents.grader import GraderInput, run_grader
from pytest_diageval.agents.scripted.model import scripted_llm
from pytest_diageval.core.evidence.world import default_world
from pytest_diageval.harness.checks.rubric import check_rubric
from pytest_diageval.harness.format.scenario import RubricExpectation

EXAMPLE = Path(__file__).resolve().parents[1] / "plugin" / "data" / "example-scenario.yaml"
CRITERIA = "回答只确认 order-service 的 HighMemoryUsage 告警。"
UNBACKED = "此外 payment-service 的数据库连接池已经耗尽。"
RATIONALE = "verifier-rationale-never-shown"
GRADER = {"stage": "grader", "content": {"score": 0.75, "reasons": ["只确认了告警"]}}


def _script(*, unbacked: bool = False, grader: list[dict[str, Any]] | None = None) -> list[Any]:
    script = copy.deepcopy(yaml.safe_load(EXAMPLE.read_text("utf-8"))["llm"]["script"])
    contract = script[2]["content"]
    if unbacked:  # a sentence no verified claim backs: the answer is composed without it
        contract["user_facing_answer"] += UNBACKED
    script[3]["content"]["rationale"] = RATIONALE
    return [*script, *(grader if grader is not None else [GRADER])]


def _graded(script: list[Any]) -> tuple[Any, Any, bytes]:
    llm, transport = scripted_llm(script)
    with llm:
        result = ChatService().run(
            "只确认 order-service 是否存在 HighMemoryUsage 告警", default_world(), llm
        )
        grade = run_grader(llm, CRITERIA, result)
    transport.assert_exhausted()
    last = transport.requests[-1]
    assert last.stage == "grader"
    return result, grade, last.content


def test_the_grader_reads_the_published_answer_and_the_verified_claims_only() -> None:
    result, grade, request = _graded(_script(unbacked=True))

    assert result.final_verdict == "PASS"
    assert result.composer_output.source == "composed"
    assert grade.graded == GraderInput(
        query="只确认 order-service 是否存在 HighMemoryUsage 告警",
        answer_kind="direct",
        final_answer=result.final_answer,
        verified_claims=[
            {
                "claim_id": "claim-1",
                "claim_type": "observation",
                "claim_text": "order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。",
                "evidence": [
                    {
                        "tool_name": "query_metrics",
                        "source_invocation_id": 1,
                        "raw_path": "$.alerts[0]",
                        "excerpt": "HighMemoryUsage firing, service=order-service, current=91%,"
                        " duration=15m",
                    },
                    {
                        "tool_name": "query_logs",
                        "source_invocation_id": 2,
                        "raw_path": "$.logs[4]",
                        "excerpt": "内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB",
                    },
                ],
            }
        ],
    )
    text = request.decode("utf-8")
    # The executor's unpublished sentence and the verifier's words never reach the grader.
    assert UNBACKED not in result.final_answer
    assert "payment-service" not in text
    assert RATIONALE not in text
    assert CRITERIA in text
    body = json.loads(request)
    assert body["tool_choice"]["function"]["name"] == "GraderOutput"
    assert grade.output.score == 0.75
    assert grade.output.reasons == ["只确认了告警"]


def test_the_same_run_sends_byte_identical_grader_requests() -> None:
    first = _graded(_script())[2]
    second = _graded(_script())[2]

    assert first == second
    assert b"<rubric_criteria>" in first


def test_a_malformed_grader_answer_is_reasked_once_then_fails_the_rubric() -> None:
    malformed = {"stage": "grader", "raw_arguments": '{"score": 2, "reasons": []}'}
    result, grade, _ = _graded(_script(grader=[malformed, malformed]))

    assert grade.output is None
    assert grade.failure.startswith(
        "grader output unusable: GraderOutput output of grader (round 1) still invalid after"
        " 2 attempt(s)"
    )
    outcome = check_rubric(RubricExpectation(criteria=CRITERIA, min_score=0.5), result, grade)
    assert not outcome.passed
    assert outcome.actual.startswith("the grader gave no usable score: grader output unusable")
    assert outcome.got == "no score"
    # The verdict is untouched by the grader's failure.
    assert result.final_verdict == "PASS"


def test_the_rubric_check_compares_the_score_inclusively() -> None:
    result, grade, _ = _graded(_script())

    at = check_rubric(RubricExpectation(criteria=CRITERIA, min_score=0.75), result, grade)
    above = check_rubric(RubricExpectation(criteria=CRITERIA, min_score=0.76), result, grade)

    assert (at.passed, at.actual) == (True, "grader score 0.75")
    assert (above.passed, above.expected) == (False, "grader score >= 0.76")
    assert above.reason == "只确认了告警"
