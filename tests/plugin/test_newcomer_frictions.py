"""The silent or misleading ends a newcomer met (issue 39, item 4), each as a real pytest run:
scenario files outside ``diageval_scenario_dirs``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir

# --------------------------------------------------------------------------- scenario folders


def test_scenario_files_outside_the_scenario_folders_are_named_with_the_ini_key(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("evals/memory.yaml", scenarios.full())
    scenarios.write("evals/low.yml", scenarios.low_confidence())
    scenarios.write_text("evals/compose.yaml", "services:\n  web: {image: nginx}\n")

    result = pytester.runpytest("evals/")

    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [
            "diageval: no scenario was collected, but 2 YAML files look like scenarios outside"
            " the scenario folders (ini diageval_scenario_dirs = scenarios):",
            "  evals/low.yml",
            "  evals/memory.yaml",
            "to collect them, add their folder to diageval_scenario_dirs, e.g. in pytest.ini"
            " (under [pytest]): diageval_scenario_dirs = scenarios evals; in pyproject.toml"
            ' (under [tool.pytest.ini_options]): diageval_scenario_dirs = ["scenarios",'
            ' "evals"]; or name the files on the command line',
        ]
    )
    assert "compose.yaml" not in result.stdout.str()  # not a scenario: never named


def test_scenario_files_in_a_configured_folder_run_and_no_note_is_printed(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("evals/memory.yaml", scenarios.full())
    pytester.makeini("[pytest]\ndiageval_scenario_dirs = scenarios evals\n")

    result = pytester.runpytest("evals/")

    result.assert_outcomes(passed=11)
    assert "diageval_scenario_dirs" not in result.stdout.str()


def test_a_run_that_collects_scenarios_says_nothing_of_other_yaml(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    scenarios.write("docs/example.yaml", scenarios.low_confidence())  # an example in the docs

    result = pytester.runpytest()

    result.assert_outcomes(passed=11)
    assert "diageval_scenario_dirs" not in result.stdout.str()
