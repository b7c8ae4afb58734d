"""The one line an invalid scenario file is summarised by (``-q``'s short summary, ``--tb=line``,
JUnit's ``message``): the file relative to rootdir, its line, the field and the message, so that
a terminal's width cuts the message's tail, never the place."""

from __future__ import annotations

from typing import TYPE_CHECKING
from xml.etree import ElementTree

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir

BROKEN_YAML = "id: broken\ntitle: [x\nquery: q\n"
TWO_PROBLEMS = """\
id: bad
title: 两个错误
query: 只确认 order-service 是否存在 HighMemoryUsage 告警
world: default
llm:
  script: [{stage: planner, content: {plan: 查询}}]
expect:
  verdict: PASSS
  gatekeeper: {severity: nope}
"""


def _bad_files(scenarios: ScenarioDir) -> None:
    scenarios.write_text("scenarios/deep/er/broken.yaml", BROKEN_YAML)
    scenarios.write_text("scenarios/bad.yaml", TWO_PROBLEMS)


def test_the_short_summary_starts_with_the_relative_file_line_and_field(
    pytester: pytest.Pytester, scenarios: ScenarioDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bad_files(scenarios)
    monkeypatch.setenv("COLUMNS", "300")

    result = pytester.runpytest("-q", "-p", "no:cacheprovider", "--junitxml", "junit.xml")

    result.assert_outcomes(failed=2)
    summary = [line for line in result.outlines if line.startswith("FAILED ")]
    assert summary == [
        "FAILED scenarios/bad.yaml::invalid-scenario - scenarios/bad.yaml:8: expect.verdict:"
        " 'PASSS' is not one of PASS, LOW_CONFID, REJECT (+1 more problem)",
        "FAILED scenarios/deep/er/broken.yaml::invalid-scenario - scenarios/deep/er/broken.yaml:2:"
        " invalid YAML: did not find expected ',' or ']' (while parsing a flow sequence); line 2"
        " opens a [ … ] list whose ',' or closing ']' is missing",
    ]
    # Below the headline, every problem with its column, as before.
    root = pytester.path
    problem = f"{root}/scenarios/bad.yaml:8:3: expect.verdict: 'PASSS' is not one of PASS,"
    assert f"{problem} LOW_CONFID, REJECT" in result.outlines
    messages = [
        case.find("failure").get("message")  # type: ignore[union-attr]
        for case in ElementTree.parse(root / "junit.xml").iter("testcase")
    ]
    assert messages[1] == summary[1].split(" - ", 1)[1]


def test_a_narrow_terminal_cuts_the_message_not_the_place(
    pytester: pytest.Pytester, scenarios: ScenarioDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenarios.write_text("scenarios/broken.yaml", BROKEN_YAML)
    monkeypatch.setenv("COLUMNS", "80")

    result = pytester.runpytest("-q", "-p", "no:cacheprovider")

    [line] = [line for line in result.outlines if line.startswith("FAILED ")]
    assert line.startswith(
        "FAILED scenarios/broken.yaml::invalid-scenario - scenarios/broken.yaml:2:"
    )
    assert str(pytester.path) not in line


def test_tb_line_prints_the_place_once(pytester: pytest.Pytester, scenarios: ScenarioDir) -> None:
    scenarios.write_text("scenarios/broken.yaml", BROKEN_YAML)

    result = pytester.runpytest("-q", "-p", "no:cacheprovider", "--tb=line")

    assert (
        "scenarios/broken.yaml:2: invalid YAML: did not find expected ',' or ']' (while parsing"
        " a flow sequence); line 2 opens a [ … ] list whose ',' or closing ']' is missing"
    ) in result.outlines
