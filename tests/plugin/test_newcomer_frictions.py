"""The silent or misleading ends a newcomer met (issue 39, item 4), each as a real pytest run:
scenario files outside ``diageval_scenario_dirs``, a recording with no server listening,
repeated samples that never ran, and two files with one scenario id."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
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


# --------------------------------------------------------------------------- no server


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A local address where nothing listens: the port is bound, never listened on, so every
    connection to it is refused (no other process can take it meanwhile)."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{bound.getsockname()[1]}/v1"


def _record_without_server(
    pytester: pytest.Pytester, scenarios: ScenarioDir, url: str, *args: str
) -> pytest.RunResult:
    data = scenarios.full()
    data["llm"] = {"cassette": "cassettes/memory.yaml"}
    scenarios.write("scenarios/memory.yaml", data)
    options = ("--diageval-record=rewrite", "--diageval-base-url", url, "--diageval-model", "m")
    return pytester.runpytest(*options, *args)


def test_a_recording_with_no_server_listening_names_the_server_commands(
    pytester: pytest.Pytester, scenarios: ScenarioDir, refused_url: str
) -> None:
    result = _record_without_server(pytester, scenarios, refused_url)

    result.assert_outcomes(failed=11)
    headline = (
        f"ServerUnreachableError: --diageval-record=rewrite: nothing answered at {refused_url}"
        " (the connection failed): start a model server first, e.g. `diageval serve-local`"
        " (the local model; it prints the OPENAI_BASE_URL and DIAGEVAL_MODEL to export), or"
        " give --diageval-base-url (or OPENAI_BASE_URL) the URL of a running"
        " OpenAI-compatible server. The model call said: LLM unavailable (planner, round 1):"
        f" {refused_url} (model m) connection failed: [Errno 111] Connection refused"
    )
    headlines = [
        line for line in scenarios.failures(result) if ": the scenario did not run: " in line
    ]
    assert len(headlines) == 11
    assert all(headline in line for line in headlines)
    assert not (scenarios.root / "scenarios/cassettes/memory.yaml").exists()


# --------------------------------------------------------------------------- samples


def test_samples_that_never_ran_are_not_counted_as_agreeing(
    pytester: pytest.Pytester, scenarios: ScenarioDir, refused_url: str
) -> None:
    result = _record_without_server(pytester, scenarios, refused_url, "--diageval-repeat", "3")

    result.assert_outcomes(failed=11)
    result.stdout.fnmatch_lines(["*high-memory-positive*PASS*—/—/—*| 0/3 *| 0/11"])


# --------------------------------------------------------------------------- duplicate ids


def _id_position(path: Path) -> str:
    """``line:column`` of the ``id:`` key in a scenario file."""
    for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        if line.startswith("id:"):
            return f"{number}:1"
    raise AssertionError(f"no id line in {path}")


def test_a_duplicate_id_fails_every_file_that_has_it_and_none_runs(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.count_runs()
    first = scenarios.write("scenarios/a.yaml", scenarios.example())
    copy = scenarios.example()
    copy["title"] = "同一个 id 的第二个文件"
    second = scenarios.write("scenarios/b.yaml", copy)
    scenarios.write("scenarios/low.yaml", scenarios.low_confidence())  # another id: it runs

    result = pytester.runpytest()

    result.assert_outcomes(passed=2, failed=2)
    message = (
        f"duplicate scenario id 'high-memory-positive' in {first} and {second}: ids must be"
        " unique in a run (give all but one of them a distinct `id:`)"
    )
    for path in (first, second):
        assert f"{path}:{_id_position(path)}: id: {message}" in result.outlines
    result.stdout.fnmatch_lines(
        [
            "FAILED scenarios/a.yaml::invalid-scenario*",
            "FAILED scenarios/b.yaml::invalid-scenario*",
        ],
        consecutive=False,
    )
    assert [scenario for scenario, _ in scenarios.runs()] == ["memory-low-confidence"]


def test_three_files_with_one_id_each_fail_and_the_first_names_all_three(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    paths = [scenarios.write(f"scenarios/{name}.yaml", scenarios.example()) for name in "abc"]

    result = pytester.runpytest("-k", "verdict")  # a selection hides no broken file

    result.assert_outcomes(failed=3)
    assert f"in {paths[0]} and {paths[1]} and {paths[2]}: ids must be unique" in (
        result.stdout.str()
    )


# --------------------------------------------------------------------------- YAML syntax

HEAD = "id: bad\ntitle: t\n"
TAIL = "world: default\nexpect: {verdict: PASS}\n"


@pytest.mark.parametrize(
    ("body", "position", "message"),
    [
        pytest.param(
            "query: 只确认 order-service\n  notes: a key indented under a value\n",
            "3:1",
            "invalid YAML: mapping values are not allowed in this context; line 4 is indented"
            " under line 3, so it reads as more of line 3's value: check the indentation of"
            " line 4 (align its key with line 3's), or end line 3 at its key's ':' to make it"
            " hold a mapping",
            id="a key indented under a value",
        ),
        pytest.param(
            "query q\n\n# the colon is missing above\n",
            "3:1",
            "invalid YAML: could not find expected ':' (while scanning a simple key); line 3 is"
            " a key without its ':' (or, if it continues the value above it, is not indented"
            " enough)",
            id="a key without its colon",
        ),
        pytest.param(
            'query: "只确认 order-service\ntags: [memory]\n',
            "3:8",
            "invalid YAML: found unexpected end of stream (while scanning a quoted scalar);"
            " line 3 opens a quote that is never closed",
            id="a quote never closed",
        ),
        pytest.param(
            "query: q\nllm:\n  script:\n    - stage: planner\n   - stage: executor\n",
            "7:4",
            "invalid YAML: did not find expected key (while parsing a block mapping); check the"
            " indentation of line 7: it lines up with no key of the mapping begun on line 5",
            id="an item less indented than its list",
        ),
        pytest.param(
            "query: 只确认: order-service\n",
            "3:11",
            "invalid YAML: mapping values are not allowed in this context; a value that holds"
            " ': ' must be quoted (\"…\")",
            id="a colon in a value",
        ),
    ],
)
def test_a_yaml_syntax_error_points_at_the_line_of_the_mistake_with_a_hint(
    pytester: pytest.Pytester, scenarios: ScenarioDir, body: str, position: str, message: str
) -> None:
    path = scenarios.write_text("scenarios/bad.yaml", HEAD + body + TAIL)

    result = pytester.runpytest()

    result.assert_outcomes(failed=1)
    assert f"{path}:{position}: {message}" in result.outlines
