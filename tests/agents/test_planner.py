"""The planner's steps are capped in the schema the model is sent, not only in its prompt.

Gemma 3 270M once ran a plan away to ``"<step64>"`` until it hit the token cap; with
``maxItems`` in the function's parameters a grammar-constrained server cannot write a fifth
step, and a host that ignores the schema gets instructor's one re-ask with the error. Text
lengths are checked on parsing only: a grammar would expand a length bound into as many rules.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_diageval.agents.planner import run_planner
from pytest_diageval.agents.scripted.model import scripted_llm

QUERY = "只确认 order-service 是否存在 HighMemoryUsage 告警。"
TWO_STEPS = {"plan": "查 order-service 告警", "steps": ["query_metrics", "query_logs"]}
FIVE_STEPS = {"plan": "查 order-service 告警", "steps": ["s1", "s2", "s3", "s4", "s5"]}


def _plan(answers: list[dict[str, Any]]) -> tuple[Any, list[Any]]:
    entries = [{"stage": "planner", "content": answer, "invalid": True} for answer in answers]
    llm, transport = scripted_llm(entries)
    with llm:
        run = run_planner(llm, QUERY, round=1)
    transport.assert_exhausted()
    return run, [request.body for request in transport.requests]


def test_the_plan_schema_sent_to_the_model_caps_the_steps_not_the_text() -> None:
    _, (body,) = _plan([TWO_STEPS])
    (tool,) = body["tools"]
    parameters = tool["function"]["parameters"]
    assert parameters["properties"]["steps"]["maxItems"] == 4
    assert "maxLength" not in json.dumps(parameters)
    assert body["tool_choice"] == {
        "type": "function",
        "function": {"name": tool["function"]["name"]},
    }


def test_a_fifth_step_is_re_asked_once_with_the_error() -> None:
    run, bodies = _plan([FIVE_STEPS, TWO_STEPS])
    assert run.error is None
    assert run.plan is not None
    assert run.plan.steps == ["query_metrics", "query_logs"]
    re_ask = " ".join(str(message.get("content")) for message in bodies[1]["messages"])
    assert "List should have at most 4 items" in re_ask


def test_five_steps_twice_leave_no_plan_and_say_why() -> None:
    run, bodies = _plan([FIVE_STEPS, FIVE_STEPS])
    assert len(bodies) == 2
    assert run.plan is None
    assert run.error is not None
    assert run.error.startswith("planner output invalid:")
    assert "at most 4 items" in run.error


def test_a_plan_text_over_200_characters_is_re_asked_with_the_error() -> None:
    run, bodies = _plan([{**TWO_STEPS, "plan": "查" * 201}, TWO_STEPS])
    assert run.plan is not None
    assert run.plan.plan == TWO_STEPS["plan"]
    re_ask = " ".join(str(message.get("content")) for message in bodies[1]["messages"])
    assert "at most 200 characters, got 201" in re_ask
