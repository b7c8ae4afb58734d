"""Checks of your own in real pytest runs: a project's conftest.py (this repository's own, as
shipped) and a package's entry point register ``expect`` keys; each is an item reported like a
built-in one (terminal, ``--diageval-report``, JUnit, HTML), a bad value fails at load with its
line and column, and an unknown key lists the registered names.

The entry point is real metadata, not a patched function: a ``*.dist-info`` folder with an
``entry_points.txt`` on ``sys.path`` is what an installed package is to
``importlib.metadata.entry_points`` (pytester cannot pip-install a package)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from support.html_page import parse_html

if TYPE_CHECKING:
    from conftest import ScenarioDir

ROOT = Path(__file__).resolve().parents[2]
PROJECT_CONFTEST = (ROOT / "conftest.py").read_text("utf-8")
ANSWER = (
    "已确认（以下由工具返回的证据逐条呈现，不含模型措辞）：\norder-service：\n"
    "- 告警 HighMemoryUsage：触发中，级别 critical，当前 91%，阈值 85%，持续 15m，"
    "采样 86.2, 87.4, 88.6, 89.8, 91.0（来源：query_metrics #1 $.alerts[0]）\n"
    "- 日志 2026-07-08 11:17:00 WARN：内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB, GC次数: 128"
    "（来源：query_logs #2 $.logs[4]）\n（时间均为 UTC+08:00）"
)
"""The documented example's final answer: its two cited items, rendered by code
(tests/plugin/test_reports.py pins it too)."""
LENGTH = len(ANSWER)
BUILTIN_KEYS = (
    "verdict, groundedness, rounds, answer, parse_status, gatekeeper, forbidden_keywords,"
    " required_keywords, answer_forbidden_keywords, claims, no_evidence, tool_calls, composer,"
    " tokens, rubric, set_aside"
)


def _scenario(scenarios: ScenarioDir, scenario_id: str, **expect: Any) -> dict[str, Any]:
    data = scenarios.example()
    data["id"] = scenario_id
    data["expect"] = {"verdict": "PASS", **expect}
    return data


def _text_with_expect(scenarios: ScenarioDir, expect_lines: list[str]) -> str:
    """The example as text, its ``expect`` block written by hand (positions are known)."""
    data = scenarios.example()
    data.pop("expect")
    body = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    return body + "expect:\n" + "".join(f"  {line}\n" for line in expect_lines)


def test_the_projects_conftest_check_is_an_item_in_every_report(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    pytester.makeconftest(PROJECT_CONFTEST)
    scenarios.write("scenarios/short.yaml", _scenario(scenarios, "short", max_answer_chars=400))
    scenarios.write("scenarios/long.yaml", _scenario(scenarios, "too-long", max_answer_chars=10))

    result = pytester.runpytest(
        "-rf",
        "--junitxml=j.xml",
        "--diageval-report",
        "r.json",
        "--diageval-html",
        "r.html",
        "-W",
        "error::DeprecationWarning",
    )

    result.assert_outcomes(passed=3, failed=1)
    headline = f"max_answer_chars: expected at most 10 characters, got {LENGTH} characters"
    assert headline in result.outlines  # the failure's first line
    result.stdout.fnmatch_lines(["FAILED scenarios/long.yaml::too-long::max_answer_chars - max_*"])
    # The failure reads as a built-in one: expected, actual, the evidence the check gave.
    assert f"actual:   {LENGTH} characters" in result.outlines
    assert f"final answer: {ANSWER.splitlines()[0]}" in result.outlines
    # The terminal table counts it among the scenario's checks.
    (row,) = [line for line in scenarios.summary(result) if line.strip().startswith("too-long ")]
    assert row.split("|")[-1].strip() == "1/2"

    report = json.loads((pytester.path / "r.json").read_text("utf-8"))
    by_id = {entry["id"]: entry for entry in report["scenarios"]}
    assert by_id["short"]["checks"] == {"passed": 2, "failed": 0}
    assert [
        (c["name"], c["outcome"], c["message"], c["expected"], c["actual"])
        for c in by_id["too-long"]["check_results"]
    ] == [
        (
            "verdict",
            "passed",
            "verdict: expected PASS, got PASS (score 1.0)",
            "PASS",
            "PASS (score 1.0)",
        ),
        ("max_answer_chars", "failed", headline, "at most 10 characters", f"{LENGTH} characters"),
    ]

    cases = ET.parse(pytester.path / "j.xml").getroot().iter("testcase")
    junit = {(case.get("classname"), case.get("name")): case for case in cases}
    failing = junit[("scenarios.long.yaml.too-long", "max_answer_chars")]
    assert failing.find("failure").get("message") == headline  # type: ignore[union-attr]
    assert junit[("scenarios.short.yaml.short", "max_answer_chars")].find("failure") is None

    page = parse_html((pytester.path / "r.html").read_text("utf-8"))
    section = page.by_id("scenario-too-long")
    (table,) = section.find_all("div", "failed-expectations")[0].find_all("table")
    assert [row.cells()[:3] for row in table.find_all("tr")[1:]] == [
        ["max_answer_chars", "at most 10 characters", f"{LENGTH} characters"]
    ]


def test_a_registered_key_comes_after_the_builtin_ones_in_the_node_ids(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    pytester.makeconftest(PROJECT_CONFTEST)
    data = _scenario(scenarios, "ordered", max_answer_chars=400, rounds=1)
    scenarios.write("scenarios/ordered.yaml", data)

    result = pytester.runpytest("--collect-only", "-q")

    assert result.outlines[:3] == [
        "scenarios/ordered.yaml::ordered::verdict",
        "scenarios/ordered.yaml::ordered::rounds",
        "scenarios/ordered.yaml::ordered::max_answer_chars",
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('"400"', "must be an integer; got '400'"),
        ("0", "Input should be greater than 0; got 0 (a number)"),
        ("", "has no value: give one or remove the key"),
    ],
)
def test_a_bad_parameter_fails_at_load_with_its_line_and_column(
    pytester: pytest.Pytester, scenarios: ScenarioDir, value: str, message: str
) -> None:
    pytester.makeconftest(PROJECT_CONFTEST)
    text = _text_with_expect(scenarios, ["verdict: PASS", f"max_answer_chars: {value}".rstrip()])
    scenarios.write_text("scenarios/bad.yaml", text)
    line = text.splitlines().index(f"  max_answer_chars: {value}".rstrip()) + 1

    result = pytester.runpytest()

    result.assert_outcomes(failed=1)
    where = f"scenarios/bad.yaml:{line}:3: expect.max_answer_chars: {message}"
    assert [text for text in result.outlines if text.endswith(where)] != []
    assert "bad.yaml::invalid-scenario" in result.stdout.str()


def test_an_unknown_key_lists_the_registered_names(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    pytester.makeconftest(PROJECT_CONFTEST)
    text = _text_with_expect(scenarios, ["verdict: PASS", "max_answer_char: 400"])
    scenarios.write_text("scenarios/typo.yaml", text)
    line = text.splitlines().index("  max_answer_char: 400") + 1

    result = pytester.runpytest()

    result.assert_outcomes(failed=1)
    where = (
        f"scenarios/typo.yaml:{line}:3: expect.max_answer_char: unknown key; did you mean"
        f" 'max_answer_chars'? (allowed keys: {BUILTIN_KEYS}, max_answer_chars)"
    )
    assert [text for text in result.outlines if text.endswith(where)] != []


def test_without_the_conftest_the_key_is_unknown(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/short.yaml", _scenario(scenarios, "short", max_answer_chars=400))

    result = pytester.runpytest()

    result.assert_outcomes(failed=1)
    assert f"unknown key (allowed keys: {BUILTIN_KEYS})" in result.stdout.str()


ACME_CHECKS = """
from pytest_diageval import CheckContext, CheckOutcome


def answer_mentions_service(service: str, ctx: CheckContext[str]) -> CheckOutcome:
    named = service in ctx.result.final_answer
    return CheckOutcome(named, f"the answer names {service}", "named" if named else "not named")


def register(registry):
    registry.register(
        "answer_mentions_service", str, answer_mentions_service,
        description="The final answer names this service.",
    )
"""


def _install_acme(pytester: pytest.Pytester) -> None:
    """A package as pip leaves it: its module and its dist-info, on sys.path."""
    pytester.makepyfile(acme_checks=ACME_CHECKS)
    info = pytester.mkdir("acme_checks-1.0.dist-info")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-checks\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[pytest_diageval.checks]\nacme = acme_checks:register\n"
    )
    pytester.syspathinsert()


def test_a_packages_entry_point_registers_a_check(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    _install_acme(pytester)
    named = _scenario(scenarios, "named", answer_mentions_service="order-service")
    other = _scenario(scenarios, "other", answer_mentions_service="payment-service")
    scenarios.write("scenarios/named.yaml", named)
    scenarios.write("scenarios/other.yaml", other)

    result = pytester.runpytest("-rf", "-W", "error::DeprecationWarning")

    result.assert_outcomes(passed=3, failed=1)
    assert (
        "answer_mentions_service: expected the answer names payment-service, got not named"
    ) in result.outlines
    result.stdout.fnmatch_lines(["FAILED scenarios/other.yaml::other::answer_mentions_service*"])


def test_the_diageval_run_fixture_runs_the_registered_checks(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    pytester.makeconftest(PROJECT_CONFTEST)
    scenarios.write("scenarios/long.yaml", _scenario(scenarios, "too-long", max_answer_chars=10))
    pytester.makepyfile(
        test_mine="""
        def test_mine(diageval_run):
            run = diageval_run("scenarios/long.yaml")
            assert list(run.checks) == ["verdict", "max_answer_chars"]
            assert list(run.failures) == ["max_answer_chars"]
            assert run.failures["max_answer_chars"].actual == "LENGTH characters"
        """.replace("LENGTH", str(LENGTH))
    )

    result = pytester.runpytest("test_mine.py")

    result.assert_outcomes(passed=1)


def test_diageval_schema_prints_the_projects_checks(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    pytester.makeconftest(PROJECT_CONFTEST)
    _install_acme(pytester)
    main = "from pytest_diageval.cli.command import main; raise SystemExit(main(['schema']))"
    command = [sys.executable, "-c", main]  # `diageval schema`, in the project's folder
    env = {"PYTHONPATH": str(pytester.path), "PATH": "/usr/bin:/bin"}

    done = subprocess.run(
        command, cwd=pytester.path, capture_output=True, text=True, check=True, env=env
    )

    properties = json.loads(done.stdout)["$defs"]["Expect"]["properties"]
    assert "max_answer_chars" in properties
    assert properties["answer_mentions_service"] == {
        "description": "The final answer names this service.",
        "type": "string",
    }


README_CHECK = re.compile(r"```python\n# conftest\.py \(readme-check\)\n(.*?)```", re.DOTALL)


def test_the_readmes_conftest_example_registers_the_check_it_describes(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    (example,) = README_CHECK.findall((ROOT / "docs" / "guide.md").read_text("utf-8"))
    assert "pytest_diageval." not in example  # the public names alone
    pytester.makeconftest(example)
    scenarios.write("scenarios/short.yaml", _scenario(scenarios, "short", max_answer_chars=400))
    scenarios.write("scenarios/long.yaml", _scenario(scenarios, "too-long", max_answer_chars=10))

    result = pytester.runpytest("-W", "error::DeprecationWarning")

    result.assert_outcomes(passed=3, failed=1)
    headline = f"max_answer_chars: expected at most 10 characters, got {LENGTH} characters"
    assert headline in result.outlines
    # The README shows the repository's own check: the same name, type, words and outcome.
    assert "@registry.check(" in example
    assert "Field(gt=0)" in PROJECT_CONFTEST
    assert 'description="The final answer has at most this many characters."' in example
