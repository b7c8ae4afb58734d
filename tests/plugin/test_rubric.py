"""``expect: {rubric: {criteria, min_score}}`` in real pytest runs: the grader is asked after
the pipeline (stage ``grader``), scripted like any stage, recorded and replayed like any call,
counted in the usage, shown with its reasons in every report, and never the verdict's judge."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from pytest_diageval.core.contract.text_bounds import functions_char_bound
from support.fake_openai_server import FakeOpenAIServer
from support.html_page import parse_html

if TYPE_CHECKING:
    from conftest import ScenarioDir

CRITERIA = "回答只确认 order-service 的 HighMemoryUsage 告警，并给出已核验的内存使用率。"
REASONS = ["确认了 order-service 的 HighMemoryUsage 告警", "给出了已核验的 91%"]
LOW_REASONS = ["没有说明告警持续了多久", "没有给出阈值 85%"]
NODE = "scenarios/graded.yaml::graded"


def _graded(
    scenarios: ScenarioDir,
    *,
    score: float = 0.9,
    reasons: list[str] | None = None,
    min_score: float = 0.8,
    base: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The example (or ``base``) with a rubric and a scripted grader entry after the verifier."""
    data = base if base is not None else scenarios.example()
    data["id"] = "graded"
    data["llm"]["script"].append(
        {"stage": "grader", "content": {"score": score, "reasons": reasons or REASONS}}
    )
    data["expect"] = {
        "verdict": data["expect"]["verdict"],
        "rubric": {"criteria": CRITERIA, "min_score": min_score},
    }
    return data


def _report(pytester: pytest.Pytester, name: str = "r.json") -> dict[str, Any]:
    (entry,) = json.loads((pytester.path / name).read_text("utf-8"))["scenarios"]
    return dict(entry)


def _rubric_result(entry: dict[str, Any]) -> dict[str, Any]:
    (found,) = [c for c in entry["check_results"] if c["name"] == "rubric"]
    return dict(found)


# --------------------------------------------------------------------------- scripted


def test_a_passing_rubric_is_an_item_with_the_graders_reasons_and_usage(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/graded.yaml", _graded(scenarios))

    result = pytester.runpytest("-v", "--diageval-report", "r.json")

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"{NODE}::verdict PASSED*", f"{NODE}::rubric PASSED*"])
    entry = _report(pytester)
    rubric = _rubric_result(entry)
    assert rubric["outcome"] == "passed"
    assert rubric["expected"] == "grader score >= 0.8"
    assert rubric["actual"] == "grader score 0.9"
    assert rubric["details"][:4] == [
        f"criteria: {CRITERIA}",
        "grader reasons (score 0.9):",
        f"  - {REASONS[0]}",
        f"  - {REASONS[1]}",
    ]
    # It read the verified claim (two passed excerpts) and the published answer.
    assert rubric["details"][4].startswith(
        "graded: the final answer (direct) and 1 verified claim(s) (claim-1) with 2 verified"
    )
    # The grader is a request of its own in the per-stage usage, after the pipeline's stages.
    stages = entry["summary"]["usage"]["stages"]
    assert sorted(stages) == ["executor", "grader", "planner", "verifier"]
    assert stages["grader"]["requests"] == 1
    assert stages["grader"]["prompt_tokens"] > 0
    assert entry["summary"]["usage"]["total"]["requests"] == 5


def test_a_failing_rubric_shows_its_reasons_in_terminal_json_and_html(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/graded.yaml", _graded(scenarios, score=0.5, reasons=LOW_REASONS))

    result = pytester.runpytest("--diageval-report", "r.json", "--diageval-html", "r.html")

    # The verdict is the code's: PASS, whatever the grader thinks of the answer.
    result.assert_outcomes(passed=1, failed=1)
    failures = scenarios.failures(result)
    assert (
        "rubric: expected grader score >= 0.8, got 0.5 (没有说明告警持续了多久; 没有给出阈值 85%)"
        in failures
    )
    assert "grader reasons (score 0.5):" in failures
    assert f"  - {LOW_REASONS[0]}" in failures
    assert f"  - {LOW_REASONS[1]}" in failures
    rubric = _rubric_result(_report(pytester))
    assert (rubric["outcome"], rubric["actual"]) == ("failed", "grader score 0.5")
    assert f"  - {LOW_REASONS[1]}" in rubric["details"]
    assert _report(pytester)["summary"]["verdict"] == "PASS"
    # The audit record keeps what the grader said, beside the run it graded.
    grade = _report(pytester)["grade"]
    assert (grade["score"], grade["reasons"], grade["failure"]) == (0.5, LOW_REASONS, None)
    assert grade["verified_claims"] == ["claim-1"]
    page = parse_html((pytester.path / "r.html").read_text("utf-8"))
    section = page.by_id("scenario-graded")
    (graded,) = section.find_all("div", "rubric")
    assert "fail expected grader score >= 0.8 · grader score 0.5" in graded.text()
    assert LOW_REASONS[0] in graded.text()
    # Also among the failed expectations, with its evidence.
    (table,) = section.find_all("div", "failed-expectations")[0].find_all("table")
    assert [row.cells()[:3] for row in table.find_all("tr")[1:]] == [
        ["rubric", "grader score >= 0.8", "grader score 0.5"]
    ]


def test_the_grader_never_judges_the_verdict_of_a_forged_citation(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    data = _graded(scenarios, score=1.0, base=scenarios.forged_citation())
    data["expect"]["verdict"] = "REJECT"
    scenarios.write("scenarios/graded.yaml", data)

    result = pytester.runpytest("--diageval-report", "r.json")

    # A grader that says 1.0 changes nothing: the gatekeeper's REJECT stands, and the grader
    # was shown no claim (the forged one was dropped), only the degraded answer.
    result.assert_outcomes(passed=2)
    entry = _report(pytester)
    assert entry["summary"]["verdict"] == "REJECT"
    details = _rubric_result(entry)["details"]
    assert details[4] == (
        "graded: the final answer (degraded) and 0 verified claim(s) (none) with 0 verified"
        " excerpt(s); nothing the code did not verify"
    )


def test_a_script_without_a_grader_entry_names_the_grader_stage(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    data = _graded(scenarios)
    data["llm"]["script"].pop()  # the grader's entry
    scenarios.write("scenarios/graded.yaml", data)

    result = pytester.runpytest()

    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "ScriptExhaustedError: scripted model: request 5 from stage 'grader' came after the"
            " last script entry (the script has 4 entries; entry 5 (1-based) does not exist):"
            " the scenario's `rubric` check asks the grader stage after the pipeline finished"
            " (1 round(s)), and the script has no entry left for it",
            "Add one entry after round 1's: {stage: grader, content: {score: 0.9, reasons:"
            " [...]}} (a GraderOutput: score 0..1 and 1 to 5 short reasons; two entries when"
            " its answer is malformed and re-asked).",
        ]
    )


@pytest.mark.parametrize(
    ("rubric", "located"),
    [
        ({"criteria": "", "min_score": 0.8}, "6:12: expect.rubric.criteria: must not be empty"),
        (
            {"criteria": CRITERIA, "min_score": 1.5},
            "6:82: expect.rubric.min_score: must be <= 1.0; got 1.5 (a number)",
        ),
        ({"criteria": CRITERIA}, "6:3: expect.rubric.min_score: required key is missing"),
    ],
)
def test_a_bad_rubric_fails_at_load_with_line_and_column(
    pytester: pytest.Pytester,
    scenarios: ScenarioDir,
    rubric: dict[str, Any],
    located: str,
) -> None:
    text = (
        "id: graded\ntitle: t\nquery: q\nworld: default\nexpect:\n"
        f"  rubric: {json.dumps(rubric, ensure_ascii=False)}\n"
        "llm:\n  script:\n    - {stage: grader, content: {score: 0.9, reasons: [ok]}}\n"
    )
    scenarios.write_text("scenarios/graded.yaml", text)

    result = pytester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"{pytester.path}/scenarios/graded.yaml:{located}"])


def test_a_grader_entry_is_typed_at_load(pytester: pytest.Pytester, scenarios: ScenarioDir) -> None:
    data = _graded(scenarios)
    data["llm"]["script"][-1]["content"] = {"score": 1.5, "reason": ["x"]}
    path = scenarios.write("scenarios/graded.yaml", data)
    line = next(
        number
        for number, text in enumerate(path.read_text("utf-8").splitlines(), start=1)
        if "stage: grader" in text
    )

    result = pytester.runpytest()

    result.assert_outcomes(failed=1)
    hint = "(the grader's GraderOutput; mark a deliberately invalid answer with `invalid: true`)"
    where = f"{pytester.path}/scenarios/graded.yaml"
    score = f"llm.script[4].content.score: Input should be less than or equal to 1; got 1.5 {hint}"
    reason = (
        "llm.script[4].content.reason: unknown key; did you mean 'reasons'? (GraderOutput keys:"
        f" score, reasons) {hint}"
    )
    assert f"{where}:{line + 2}:7: {score}" in result.outlines
    assert f"{where}:{line + 3}:7: {reason}" in result.outlines


# --------------------------------------------------------------------------- cassettes


def _record_graded(pytester: pytest.Pytester, scenarios: ScenarioDir) -> tuple[Path, Any]:
    """The graded scenario recorded in mode once against the fake server."""
    data = _graded(scenarios)
    script = scenarios.script(data)
    data["llm"] = {"cassette": "cassettes/graded.yaml"}
    scenarios.write("scenarios/graded.yaml", data)
    with FakeOpenAIServer(script) as server:
        pytester.runpytest(
            *("--diageval-record=once", "--diageval-base-url", server.base_url),
            *("--diageval-model", "m"),
        ).assert_outcomes(passed=2)
    return scenarios.root / "scenarios" / "cassettes" / "graded.yaml", server


def test_the_grader_is_recorded_with_its_header_and_replays_offline(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    cassette, server = _record_graded(pytester, scenarios)

    stages = [r.headers["x-diageval-stage"] for r in server.received]
    assert stages == ["planner", "executor", "executor", "verifier", "grader"]
    assert server.received[-1].headers["x-diageval-round"] == "1"
    interactions = yaml.safe_load(cassette.read_text("utf-8"))["interactions"]
    grader = interactions[-1]
    assert grader["request"]["headers"]["x-diageval-stage"] == ["grader"]
    body = json.loads(grader["request"]["body"])
    assert body["messages"][1]["content"].startswith(f"<rubric_criteria>{CRITERIA}</")
    # the longest answer the grader's function admits (its reasons at their bound)
    assert body["max_tokens"] == functions_char_bound(body["tools"], message=False) == 1032
    answer = json.loads(grader["response"]["body"]["string"])
    arguments = json.loads(
        answer["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    )
    assert arguments == {"reasons": REASONS, "score": 0.9}

    # The server is gone: the grader's answer comes from the cassette.
    replay = pytester.runpytest("-v", "--diageval-report", "replayed.json")

    replay.assert_outcomes(passed=2)
    replay.stdout.fnmatch_lines([f"{NODE}::rubric PASSED*"])
    entry = _report(pytester, "replayed.json")
    assert _rubric_result(entry)["actual"] == "grader score 0.9"
    assert entry["summary"]["usage"]["stages"]["grader"]["requests"] == 1
    assert entry["summary"]["usage"]["source"] == "reported by the endpoint (m)"


def test_changed_criteria_make_the_cassette_stale_with_a_diff(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    cassette, _ = _record_graded(pytester, scenarios)
    recorded = cassette.read_text("utf-8")
    path = scenarios.root / "scenarios" / "graded.yaml"
    data = yaml.safe_load(path.read_text("utf-8"))
    data["expect"]["rubric"]["criteria"] = "回答还必须给出告警阈值。"
    scenarios.write("scenarios/graded.yaml", data)

    result = pytester.runpytest()

    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            f"StaleCassetteError: stale cassette {cassette}: request #5 of this run"
            " (stage grader, round 1) matches no recorded interaction; the recorded request"
            " at the same position (stage grader, round 1) differs from it:",
            "--- recorded",
            "+++ this run",
            "@@ *",
            " ── message 2: user",
            f"-<rubric_criteria>{CRITERIA}",
            "+<rubric_criteria>回答还必须给出告警阈值。",
            " </rubric_criteria>",
        ]
    )
    assert cassette.read_text("utf-8") == recorded  # a replay never rewrites the cassette


# --------------------------------------------------------------------------- README


def test_the_readme_rubric_snippet_runs_on_the_readme_pass_example(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    guide = (Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text("utf-8")
    pass_example = re.search(r"```yaml\n# readme-example: pass\n(.*?)```", readme, re.DOTALL)
    snippet = re.search(r"```yaml\n# readme-rubric\n(.*?)```", guide, re.DOTALL)
    assert pass_example is not None
    assert snippet is not None
    data = yaml.safe_load(pass_example[1])
    rubric = yaml.safe_load(snippet[1])
    data["llm"]["script"] += rubric["llm"]["script"]
    data["expect"] = rubric["expect"]
    scenarios.write("scenarios/mine/graded.yaml", data)

    result = pytester.runpytest("-v", "--diageval-report", "r.json")

    result.assert_outcomes(passed=2)
    actual = _rubric_result(_report(pytester))
    assert actual["actual"] == "grader score 0.9"
    assert actual["details"][0] == f"criteria: {CRITERIA}"
