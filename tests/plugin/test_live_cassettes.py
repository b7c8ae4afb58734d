"""The cassettes recorded from the real local model (``cassettes/live-*.yaml``) in CI, offline:
a prompt edit makes the recorded scenario fail as stale, with the diff and the command."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

import pytest

from support.prompt_edit import planner_prompt_edit_conftest

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "live" / "live-high-memory.yaml"
CASSETTE = ROOT / "cassettes" / "live-high-memory.yaml"

EDIT_ONE_PLANNER_LINE = planner_prompt_edit_conftest("steps 最多 4 条", "steps 最多 5 条")


def _copy_live_scenario(pytester: pytest.Pytester) -> Path:
    target = pytester.path / "scenarios" / "live" / SCENARIO.name
    target.parent.mkdir(parents=True)
    shutil.copy(SCENARIO, target)
    (pytester.path / "cassettes").mkdir()
    shutil.copy(CASSETTE, pytester.path / "cassettes" / CASSETTE.name)
    return target


def test_the_live_recording_replays_offline(pytester: pytest.Pytester) -> None:
    _copy_live_scenario(pytester)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)  # verdict, answer_forbidden_keywords, set_aside


def test_editing_one_prompt_line_fails_the_live_recording_as_stale_with_the_diff(
    pytester: pytest.Pytester,
) -> None:
    _copy_live_scenario(pytester)
    pytester.makeconftest(EDIT_ONE_PLANNER_LINE)

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")

    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "*StaleCassetteError: stale cassette *live-high-memory.yaml: request #1 of this run"
            " (stage planner, round 1) matches no recorded interaction*",
            "--- recorded",
            "+++ this run",
            "-1. steps 最多 4 条，*",
            "+1. steps 最多 5 条，*",
            # Endpoint, model, timeout and temperature from the cassette's recording metadata.
            f"Re-record this scenario with: {shlex.quote(sys.executable)} -m pytest"
            " scenarios/live/live-high-memory.yaml::live-high-memory --diageval-record=rewrite"
            " --diageval-base-url http://127.0.0.1:18080/v1 --diageval-model gemma3-270m"
            " --diageval-timeout 900 --diageval-temperature 0.7",
        ]
    )
