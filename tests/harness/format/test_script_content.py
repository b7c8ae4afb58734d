"""Scripted answers are checked at load against the model of their stage (planner Plan,
executor contract, verifier output), with file, line, column and field; ``invalid: true``
marks a deliberately invalid answer, and ``raw`` / ``raw_arguments`` stay free."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_diageval.agents.scripted.content import content_problems
from pytest_diageval.harness.format.loader import ScenarioError, load_scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "plugin" / "data" / "example-scenario.yaml"
TEXT = EXAMPLE.read_text("utf-8")
VERIFIER_LABEL = "verification: direct_evidence"
PLANNER = (
    '{stage: planner, content: {plan: "查询告警与日志", steps: ["query_metrics", "query_logs"]}}'
)


def load_text(tmp_path: Path, text: str) -> ScenarioError | None:
    path = tmp_path / "case.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        load_scenario(path)
    except ScenarioError as error:
        return error
    return None


def position(text: str, anchor: str) -> tuple[int, int]:
    for number, line in enumerate(text.splitlines(), start=1):
        if anchor in line:
            return number, line.index(anchor) + 1
    raise AssertionError(anchor)


def test_the_example_passes_the_check() -> None:
    assert load_scenario(EXAMPLE).scenario_id == "high-memory-positive"


def test_an_invalid_verifier_label_names_the_field_and_the_allowed_values(
    tmp_path: Path,
) -> None:
    text = TEXT.replace(VERIFIER_LABEL, "verification: supported")
    error = load_text(tmp_path, text)
    assert error is not None
    (problem,) = error.problems
    assert (problem.line, problem.column) == position(text, "verification: supported")
    assert problem.field_path == "llm.script[3].content.facts_checked[0].verification"
    assert problem.message.startswith(
        "'supported' is not one of direct_evidence, indirect_support, no_evidence, contradicted"
    )
    assert "the verifier's VerifierOutput" in problem.message
    assert "invalid: true" in problem.message


def test_a_plan_without_plan_and_a_misspelt_claim_key(tmp_path: Path) -> None:
    text = TEXT.replace(PLANNER, "{stage: planner, content: {steps: [query_metrics]}}").replace(
        "claim_text:", "claim_txt:"
    )
    error = load_text(tmp_path, text)
    assert error is not None
    assert [(p.line, p.field_path) for p in error.problems] == [
        (8, "llm.script[0].content.plan"),
        (position(text, "claim_txt")[0], "llm.script[2].content.claims[0].claim_txt"),
    ]
    assert error.problems[0].message.startswith("required key is missing")
    # The misspelt key is one problem with its suggestion, not also "claim_text missing".
    assert error.problems[1].message.startswith("unknown key; did you mean 'claim_text'?")
    assert len(str(error).splitlines()) == 2


def test_several_missing_keys_are_one_problem(tmp_path: Path) -> None:
    text = (
        TEXT.replace(
            "    - stage: verifier\n      content:\n        verdict: PASS\n",
            "    - stage: verifier\n      content:\n        verdict: PASS\n        other: {}\n",
        ).split("        groundedness_score")[0]
        + "expect:\n  verdict: PASS\n"
    )
    error = load_text(tmp_path, text)
    assert error is not None
    assert [(p.field_path, p.message.split(" (")[0]) for p in error.problems] == [
        (
            "llm.script[3].content",
            "required keys are missing: groundedness_score, critical_fact_count,"
            " facts_checked, rationale",
        ),
        ("llm.script[3].content.other", "unknown key"),
    ]


def test_invalid_true_lets_a_deliberately_invalid_answer_through(tmp_path: Path) -> None:
    text = TEXT.replace(VERIFIER_LABEL, "verification: supported").replace(
        "    - stage: verifier\n", "    - stage: verifier\n      invalid: true\n"
    )
    assert load_text(tmp_path, text) is None


def test_invalid_true_on_a_valid_answer_is_refused(tmp_path: Path) -> None:
    text = TEXT.replace("    - stage: verifier\n", "    - stage: verifier\n      invalid: true\n")
    error = load_text(tmp_path, text)
    assert error is not None
    (problem,) = error.problems
    assert problem.line == position(text, "invalid: true")[0]
    assert problem.field_path == "llm.script[3]"
    assert problem.message.startswith("the content is a valid VerifierOutput")


@pytest.mark.parametrize(
    "entry",
    [
        '{stage: planner, raw: "not json", invalid: true}',
        "{stage: planner, content: {plan: p}, invalid: yes}",
    ],
    ids=["invalid on raw", "a non-boolean flag"],
)
def test_the_flag_is_only_a_boolean_on_content(tmp_path: Path, entry: str) -> None:
    error = load_text(tmp_path, TEXT.replace(PLANNER, entry))
    assert error is not None
    assert error.problems[0].field_path.startswith("llm.script[0]")


def test_raw_and_raw_arguments_stay_free(tmp_path: Path) -> None:
    text = TEXT.replace(PLANNER, '{stage: planner, raw_arguments: "{\\"plan\\": "}')
    assert load_text(tmp_path, text) is None


def test_the_agents_plain_text_forms_are_accepted() -> None:
    contract = {
        "answer_version": "2",
        "diagnosis_summary": "",
        "claims": [],
        "hypotheses": ["可能是内存泄漏"],
        "recommended_actions": ["采集堆 dump"],
        "missing_info": ["GC 日志"],
        "user_facing_answer": "",
    }
    assert content_problems("executor", contract) == []
    wrong = {**contract, "hypotheses": [3]}
    assert [p.loc for p in content_problems("executor", wrong)] == [("hypotheses", 0)]


def test_content_that_is_not_json_data() -> None:
    (problem,) = content_problems("planner", {"plan": {1, 2}})
    assert problem.loc == ()
    assert problem.message.startswith("is not JSON data")
