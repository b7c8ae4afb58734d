"""What the plugin collects: scenario folders and files named on the command line, never the
other YAML files of a project (issue 12). An unrelated project in the same virtualenv runs
exactly its own tests, with and without xdist."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir

LEAN = ("-p", "no:hypothesispytest", "--assert=plain")

# Real-looking files of a project that has nothing to do with diagnosis scenarios.
UNRELATED_FILES = {
    "docker-compose.yaml": "services:\n  web:\n    image: nginx:1.27\n    ports: ['8080:80']\n",
    ".github/workflows/ci.yml": (
        "name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - uses: actions/checkout@v4\n      - run: pytest\n"
    ),
    "mkdocs.yml": "site_name: My Project\nnav:\n  - Home: index.md\n",
    ".pre-commit-config.yaml": (
        "repos:\n  - repo: https://github.com/astral-sh/ruff-pre-commit\n    rev: v0.6.0\n"
        "    hooks:\n      - id: ruff\n"
    ),
    "charts/web/values.yaml": "replicaCount: 2\nimage:\n  repository: nginx\n  tag: ''\n",
    "charts/web/templates/deployment.yaml": "apiVersion: apps/v1\nkind: {{ .Values.kind }}\n",
    "openapi.yml": "openapi: 3.0.0\ninfo: {title: api, version: '1'}\npaths: {}\n",
    "tests/test_app.py": "def test_app():\n    assert 1 + 1 == 2\n",
}


def _unrelated_project(pytester: pytest.Pytester) -> None:
    for relpath, text in UNRELATED_FILES.items():
        path = pytester.path / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_an_unrelated_project_runs_exactly_its_own_tests(pytester: pytest.Pytester) -> None:
    _unrelated_project(pytester)

    result = pytester.runpytest("-v")

    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["tests/test_app.py::test_app PASSED*"])
    assert "yaml" not in result.stdout.str()


def test_an_unrelated_project_runs_exactly_its_own_tests_under_xdist(
    pytester: pytest.Pytester,
) -> None:
    _unrelated_project(pytester)

    result = pytester.runpytest_subprocess(*LEAN, "-n", "2", "-v")

    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*PASSED tests/test_app.py::test_app*"])
    assert "yaml" not in result.stdout.str()
    # xdist's own default scheduling: the plugin leaves a run without scenarios alone.
    result.stdout.fnmatch_lines(["scheduling tests via LoadScheduling"])


def test_scenarios_beside_unrelated_yaml_collect_only_the_scenarios(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    _unrelated_project(pytester)
    scenarios.write("scenarios/memory.yaml", scenarios.full())

    result = pytester.runpytest("-q", "--collect-only")

    assert result.ret == pytest.ExitCode.OK
    collected = [line for line in result.outlines if "::" in line]
    assert collected[0] == "scenarios/memory.yaml::high-memory-positive::verdict"
    assert collected[-1] == "tests/test_app.py::test_app"
    assert len(collected) == 12


def test_a_yaml_file_named_on_the_command_line_is_collected_wherever_it_is(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    data = scenarios.example()
    data["expect"] = {"verdict": "PASS"}
    scenarios.write("elsewhere/memory.yaml", data)
    scenarios.write("elsewhere/other.yaml", {**data, "id": "other"})

    named = pytester.runpytest("-v", "elsewhere/memory.yaml")
    folder = pytester.runpytest("-v", "elsewhere")

    named.assert_outcomes(passed=1)
    named.stdout.fnmatch_lines(["elsewhere/memory.yaml::high-memory-positive::verdict PASSED*"])
    # A folder on the command line is not a scenario folder by itself: no test there.
    assert folder.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_a_node_id_on_the_command_line_counts_as_naming_the_file(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("elsewhere/memory.yaml", scenarios.full())

    result = pytester.runpytest("-v", "elsewhere/memory.yaml::high-memory-positive::rounds")

    result.assert_outcomes(passed=1)


def test_diageval_scenario_dirs_changes_where_scenarios_live(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    data = scenarios.example()
    data["expect"] = {"verdict": "PASS"}
    scenarios.write("diag/cases/memory.yaml", data)  # a folder path, relative to rootdir
    scenarios.write("checks/low.yaml", {**scenarios.low_confidence()})  # a folder name
    scenarios.write("scenarios/ignored.yaml", {**data, "id": "ignored"})  # default no more
    scenarios.write_text("diag/docker-compose.yaml", UNRELATED_FILES["docker-compose.yaml"])
    scenarios.write_text("pytest.ini", "[pytest]\ndiageval_scenario_dirs = diag/cases checks\n")

    result = pytester.runpytest("-v")

    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "checks/low.yaml::memory-low-confidence::verdict PASSED*",
            "checks/low.yaml::memory-low-confidence::answer PASSED*",
            "diag/cases/memory.yaml::high-memory-positive::verdict PASSED*",
        ]
    )
    assert "ignored" not in result.stdout.str()


def test_an_empty_diageval_scenario_dirs_collects_only_named_files(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    scenarios.write_text("pytest.ini", "[pytest]\ndiageval_scenario_dirs =\n")

    everything = pytester.runpytest()
    named = pytester.runpytest("scenarios/memory.yaml")

    assert everything.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    named.assert_outcomes(passed=11)


def test_running_inside_the_scenario_folder_without_an_ini_collects_it(
    pytester: pytest.Pytester, scenarios: ScenarioDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    monkeypatch.chdir(pytester.path / "scenarios")

    result = pytester.runpytest()

    result.assert_outcomes(passed=11)
