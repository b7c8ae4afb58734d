"""How the reference agent is chosen, as real pytest runs: per scenario (``llm: {reference:
true}``) and per run (``--diageval-model reference``); a scenario with no source of answers
stays an error, and the reference never records."""

from __future__ import annotations

import pytest
import yaml

FIVE_LINES = """\
id: memory-alert
title: order-service HighMemoryUsage
query: 只确认 order-service 是否存在 HighMemoryUsage 告警。
world: default
llm: {reference: true}
expect: {verdict: PASS, required_keywords: [HighMemoryUsage, 当前 91%]}
"""

NO_LLM = "\n".join(line for line in FIVE_LINES.splitlines() if not line.startswith("llm:"))


def test_a_five_line_scenario_passes_offline_on_the_reference_agent(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".yaml", **{"scenarios/memory": FIVE_LINES})
    result = pytester.runpytest("scenarios/", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert not (pytester.path / "scenarios" / "cassettes").exists()  # nothing recorded


def test_a_five_line_scenario_fails_when_its_expectation_is_wrong(
    pytester: pytest.Pytester,
) -> None:
    wrong = FIVE_LINES.replace("verdict: PASS", "verdict: REJECT")
    pytester.makefile(".yaml", **{"scenarios/memory": wrong})
    result = pytester.runpytest("scenarios/", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*expected: REJECT*", "*actual:   PASS*"])


def test_without_a_source_of_answers_the_scenario_stays_an_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".yaml", **{"scenarios/memory": NO_LLM})
    result = pytester.runpytest("scenarios/", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cassette not found*memory-alert.yaml*"])


def test_the_run_level_reference_model_answers_scenarios_without_a_script(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".yaml", **{"scenarios/memory": NO_LLM})
    result = pytester.runpytest(
        "scenarios/", "--diageval-model", "reference", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=2)
    assert not (pytester.path / "scenarios" / "cassettes").exists()


def test_the_run_level_reference_model_refuses_to_record(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"scenarios/memory": NO_LLM})
    result = pytester.runpytest(
        "scenarios/",
        "--diageval-model",
        "reference",
        "--diageval-record",
        "once",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*--diageval-model reference runs the built-in reference agent, which records nothing*"]
    )
    assert not (pytester.path / "scenarios" / "cassettes").exists()


def test_reference_and_a_script_together_are_one_source_too_many(
    pytester: pytest.Pytester,
) -> None:
    both = FIVE_LINES.replace("llm: {reference: true}", "llm: {reference: true, cassette: c.yaml}")
    pytester.makefile(".yaml", **{"scenarios/memory": both})
    result = pytester.runpytest("scenarios/", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*give exactly one of 'cassette', 'script' or 'reference: true'"
            " (cassette, reference given)*"
        ]
    )


QUESTIONS = [
    "只确认 order-service 是否存在 HighMemoryUsage 告警。",
    "只确认 payment-service 是否存在 HighCPUUsage 告警。",
    "只确认 user-service 是否存在 SlowResponse 告警。",
    "只确认 order-service 是否存在 HighCPUUsage 告警。",
    "只确认 inventory-service 是否存在 HighMemoryUsage 告警。",
    "请确认 inventory-service 是否存在 HikariCP 连接池耗尽，只确认这一件事。",
    "确认 order-service 是否存在 HikariCP 连接池耗尽。",
    "payment-service 是否出现 Redis 命令超时",
    "inventory-service 有 Redis 报错吗",
    "order-service 有没有 OOM 日志？",
    "只确认 user-service 是否存在 SlowResponse 告警和慢请求日志。",
    "只确认 payment-service 当前是否存在 CPU 使用率过高告警。",
    "只确认 HighCPUUsage，不要分析订单123、OOM、数据库慢查询、连接池或 user-service",
    "order-service 怎么了？",
    "现在有哪些告警？",
    "Is there a HighMemoryUsage alert on order-service?",
    "Is there a HighCPUUsage alert on payment-service?",
    "只确认 HighMemoryUsage 告警。",
    "只确认 SlowResponse 告警。",
    "inventory-service 有没有 OOM 日志？",
]


def test_a_20_row_csv_scaffolds_20_reference_scenarios_that_all_pass_offline(
    pytester: pytest.Pytester,
) -> None:
    from pytest_diageval.cli.command import main

    rows = [f"case-{n:02d},{query},default,,PASS" for n, query in enumerate(QUESTIONS, 1)]
    cases = pytester.path / "cases.csv"
    cases.write_text("id,query,world,tags,verdict\n" + "\n".join(rows) + "\n", "utf-8")
    folder = pytester.path / "scenarios" / "cases"
    assert main(["scaffold", "--from", str(cases), "-o", str(folder), "--reference"]) == 0
    assert len(list(folder.glob("*.yaml"))) == 20
    result = pytester.runpytest("scenarios/", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=20)
    assert not (folder / "cassettes").exists()


def test_without_reference_the_scaffolded_scenarios_wait_for_a_recording(
    pytester: pytest.Pytester,
) -> None:
    from pytest_diageval.cli.command import main

    cases = pytester.path / "cases.csv"
    cases.write_text(f"id,query,world,tags,verdict\nc1,{QUESTIONS[0]},default,,PASS\n", "utf-8")
    folder = pytester.path / "scenarios" / "cases"
    assert main(["scaffold", "--from", str(cases), "-o", str(folder)]) == 0
    result = pytester.runpytest("scenarios/", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cassette not found*"])


RUBRIC = "expect: {verdict: PASS, rubric: {criteria: 只确认告警, min_score: 0.8}}"


def test_a_rubric_on_a_reference_scenario_is_refused_at_its_line(
    pytester: pytest.Pytester,
) -> None:
    text = "\n".join(
        RUBRIC if line.startswith("expect:") else line for line in FIVE_LINES.splitlines()
    )
    pytester.makefile(".yaml", **{"scenarios/memory": text})
    result = pytester.runpytest("scenarios/", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*memory.yaml:6:*expect.rubric: the reference agent (llm.reference) does not grade*"]
    )


def test_a_rubric_under_the_run_level_reference_fails_saying_it_does_not_grade(
    pytester: pytest.Pytester,
) -> None:
    text = "\n".join(RUBRIC if line.startswith("expect:") else line for line in NO_LLM.splitlines())
    pytester.makefile(".yaml", **{"scenarios/memory": text})
    result = pytester.runpytest(
        "scenarios/", "--diageval-model", "reference", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*the reference agent does not grade*"])


def test_scaffold_script_writes_the_reference_answers_as_a_script_that_passes(
    pytester: pytest.Pytester,
) -> None:
    """--script: the reference's transcript as `llm.script`, runnable at once; editing one
    answer (the executor's excerpt) makes a failure case the gatekeeper catches."""
    from pytest_diageval.cli.command import main

    cases = pytester.path / "cases.csv"
    cases.write_text(f"id,query,world,tags,verdict\nc1,{QUESTIONS[0]},default,,PASS\n", "utf-8")
    folder = pytester.path / "scenarios" / "cases"
    assert main(["scaffold", "--from", str(cases), "-o", str(folder), "--script"]) == 0
    written = yaml.safe_load((folder / "c1.yaml").read_text("utf-8"))
    stages = [entry["stage"] for entry in written["llm"]["script"]]
    assert stages == ["planner", "executor", "executor", "verifier"]
    pytester.runpytest("scenarios/", "-p", "no:cacheprovider").assert_outcomes(passed=1)

    (binding,) = written["llm"]["script"][2]["content"]["claims"][0]["evidence_bindings"]
    binding["evidence_excerpt"] = "HighMemoryUsage firing, current=99%"
    written["expect"] = {"verdict": "REJECT"}
    (folder / "c1.yaml").write_text(yaml.safe_dump(written, allow_unicode=True), "utf-8")
    pytester.runpytest("scenarios/", "-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_scaffold_reference_without_from_is_a_usage_error(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_diageval.cli.command import main

    cassette = pytester.path / "c.yaml"
    cassette.write_text("interactions: []\n", "utf-8")
    assert main(["scaffold", str(cassette), "--reference"]) == 2
    assert "--reference goes with --from CASES" in capsys.readouterr().err
