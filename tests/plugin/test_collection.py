"""Collection: node ids, ids from file names, never-collected folders, -k/-m selection, and
every bad-file message of issue 5, which a broken file fails with as its own item
``<file>::invalid-scenario`` (issue 12), or as a collection error under --collect-only."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir

# --------------------------------------------------------------------------- node ids


def test_collect_only_lists_one_item_per_expect_key_in_the_fixed_order(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    data = scenarios.full()
    # The file lists the keys backwards: the item order must not follow the file.
    data["expect"] = dict(reversed(list(data["expect"].items())))
    scenarios.write("scenarios/memory.yaml", data)

    result = pytester.runpytest("--collect-only", "-q")

    ids = [f"scenarios/memory.yaml::high-memory-positive::{key}" for key in scenarios.expect_order]
    assert result.outlines[: len(ids) + 1] == [*ids, ""]
    result.stdout.fnmatch_lines(["11 tests collected in *"])
    assert result.ret == pytest.ExitCode.OK


def test_id_defaults_to_the_file_stem_for_yaml_and_yml(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    for name in ("narrow-memory.yml", "wide_memory.yaml"):
        data = scenarios.example()
        del data["id"]
        data["expect"] = {"verdict": "PASS", "rounds": 1}
        scenarios.write(f"scenarios/{name}", data)

    result = pytester.runpytest("-v")

    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "scenarios/narrow-memory.yml::narrow-memory::verdict PASSED*",
            "scenarios/narrow-memory.yml::narrow-memory::rounds PASSED*",
            "scenarios/wide_memory.yaml::wide_memory::verdict PASSED*",
            "scenarios/wide_memory.yaml::wide_memory::rounds PASSED*",
        ]
    )


def test_files_under_worlds_or_cassettes_folders_are_never_collected(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    world_text = resources.files("pytest_diageval").joinpath("worlds", "default.yaml").read_text()
    scenarios.write_text("scenarios/worlds/custom.yaml", world_text)
    data = scenarios.example()
    data["world"] = "worlds/custom.yaml"
    data["expect"] = {"verdict": "PASS"}
    scenarios.write("scenarios/memory.yaml", data)
    # Valid scenarios and a broken file: collected, each would add items or an error.
    decoy = scenarios.example()
    decoy["id"] = "decoy"
    scenarios.write("worlds/decoy.yaml", decoy)
    scenarios.write("scenarios/cassettes/decoy.yml", {**decoy, "id": "decoy2"})
    scenarios.write("deep/worlds/nested/decoy.yaml", {**decoy, "id": "decoy3"})
    scenarios.write_text("cassettes/broken.yaml", "interactions: [unclosed\n")

    result = pytester.runpytest("-v")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["scenarios/memory.yaml::high-memory-positive::verdict PASSED*"])
    assert "decoy" not in result.stdout.str()


def test_k_gatekeeper_selects_only_the_gatekeeper_items(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    low = scenarios.low_confidence()
    low["expect"]["gatekeeper"] = {"severity": "none"}
    scenarios.write("scenarios/low.yaml", low)

    result = pytester.runpytest("--collect-only", "-q", "-k", "gatekeeper")

    assert result.outlines[:3] == [
        "scenarios/low.yaml::memory-low-confidence::gatekeeper",
        "scenarios/memory.yaml::high-memory-positive::gatekeeper",
        "",
    ]
    result.stdout.fnmatch_lines(["2/14 tests collected (12 deselected) in *"])


def test_k_scenario_id_selects_that_scenario_and_runs_it(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    scenarios.write("scenarios/low.yaml", scenarios.low_confidence())

    result = pytester.runpytest("-v", "-k", "memory-low-confidence")

    result.assert_outcomes(passed=2, deselected=11)
    result.stdout.fnmatch_lines(
        [
            "scenarios/low.yaml::memory-low-confidence::verdict PASSED*",
            "scenarios/low.yaml::memory-low-confidence::answer PASSED*",
        ]
    )
    assert "high-memory-positive::" not in result.stdout.str()


def test_tags_become_markers_for_m(pytester: pytest.Pytester, scenarios: ScenarioDir) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())  # tags: memory, positive, narrow
    low = scenarios.low_confidence()
    # In one process pytest.mark remembers every marker any earlier run registered; a tag no
    # other test uses keeps --strict-markers meaningful here.
    low["tags"] = [*low["tags"], "tag_seen_only_here"]  # memory, negative, tag_seen_only_here
    scenarios.write("scenarios/low.yaml", low)

    # --strict-markers: a tag must be a registered marker, not just a keyword.
    negative = pytester.runpytest("-v", "--strict-markers", "-m", "negative and tag_seen_only_here")
    negative.assert_outcomes(passed=2, deselected=11)
    negative.stdout.fnmatch_lines(["scenarios/low.yaml::memory-low-confidence::verdict PASSED*"])

    positive = pytester.runpytest("--collect-only", "-q", "--strict-markers", "-m", "positive")
    positive.stdout.fnmatch_lines(["11/13 tests collected (2 deselected) in *"])
    assert "memory-low-confidence" not in positive.stdout.str()


# --------------------------------------------------------------------------- bad files


@dataclass(frozen=True)
class BadFile:
    """A scenario file that must be a collection error with one precise message."""

    name: str
    build: Callable[[ScenarioDir], Path]
    anchor: str | None  # the text whose position the message names (None: line 1, column 1)
    message: str  # ``{path}`` and ``{dir}`` are filled in; the part after "file:line:col: "


def _with(
    change: Callable[[dict[str, Any]], None], scenario_id: str = "bad"
) -> Callable[[ScenarioDir], Path]:
    def build(scenarios: ScenarioDir) -> Path:
        data = scenarios.example()
        data["id"] = scenario_id
        change(data)
        return scenarios.write("scenarios/bad.yaml", data)

    return build


def _rename_expect(data: dict[str, Any]) -> None:
    data["expcet"] = data.pop("expect")


def _set(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _without(key: str) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        del data[key]

    return change


ALLOWED_TOP_KEYS = "id, title, tags, query, world, llm, notes, expect"

BAD_FILES = [
    BadFile(
        "empty file",
        lambda s: s.write_text("scenarios/bad.yaml", ""),
        None,
        "the file is empty: a scenario needs at least title, query, world, expect",
    ),
    BadFile(
        "list at top level",
        lambda s: s.write_text("scenarios/bad.yaml", "- id: a\n- title: b\n"),
        None,
        f"the top level must be a mapping of scenario keys ({ALLOWED_TOP_KEYS}); got a list",
    ),
    BadFile(
        "unknown key",
        _with(_rename_expect),
        "expcet:",
        f"expcet: unknown key; did you mean 'expect'? (allowed keys: {ALLOWED_TOP_KEYS})",
    ),
    BadFile(
        "wrong verdict name",
        _with(_set(("expect", "verdict"), "PASSED")),
        "verdict: PASSED",
        "expect.verdict: 'PASSED' is not one of PASS, LOW_CONFID, REJECT",
    ),
    BadFile(
        "unknown world name",
        _with(_set(("world",), "nowhere")),
        "world:",
        "world: unknown world name 'nowhere'; packaged worlds: default"
        " (or give a YAML file path relative to this scenario)",
    ),
    BadFile(
        "missing world file",
        _with(_set(("world",), "worlds/missing.yaml")),
        "world:",
        "world: world file not found: worlds/missing.yaml (looked for {dir}/worlds/missing.yaml)",
    ),
    BadFile(
        "missing cassette",
        _with(_set(("llm",), {"cassette": "cassettes/missing.yaml"})),
        "cassette:",
        "llm.cassette: cassette not found: {dir}/cassettes/missing.yaml;"
        " record it with `{python} -m pytest {path} --diageval-record=once"
        " --diageval-base-url <endpoint> --diageval-model <model>`",
    ),
    BadFile(
        "missing default cassette",
        _with(_without("llm"), scenario_id="uncassetted"),
        "id:",
        "id: cassette not found: {dir}/cassettes/uncassetted.yaml;"
        " record it with `{python} -m pytest {path} --diageval-record=once"
        " --diageval-base-url <endpoint> --diageval-model <model>`",
    ),
    BadFile(
        "no expect",
        _with(_without("expect")),
        None,
        "expect: required key is missing: list at least one expectation (verdict,"
        " groundedness, rounds, answer, parse_status, gatekeeper, forbidden_keywords,"
        " required_keywords, answer_forbidden_keywords, claims, no_evidence, tool_calls,"
        " composer, tokens, rubric, set_aside);"
        " each is one test item",
    ),
]


def _position(path: Path, anchor: str | None) -> tuple[int, int]:
    """1-based line and column where ``anchor`` starts in the file (1, 1 for None)."""
    if anchor is None:
        return 1, 1
    for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        if anchor in line:
            return number, line.index(anchor) + 1
    raise AssertionError(f"{anchor!r} is not in {path}")


@pytest.mark.parametrize("bad", BAD_FILES, ids=[bad.name for bad in BAD_FILES])
def test_a_bad_file_fails_as_its_own_item_with_file_line_column_and_field(
    pytester: pytest.Pytester, scenarios: ScenarioDir, bad: BadFile
) -> None:
    path = bad.build(scenarios)
    line, column = _position(path, bad.anchor)

    result = pytester.runpytest("-rA")

    result.assert_outcomes(failed=1)  # and passed=0, skipped=0: never silently skipped
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    message = bad.message.format(path=path, dir=path.parent, python=sys.executable)
    assert f"{path}:{line}:{column}: {message}" in result.outlines
    result.stdout.fnmatch_lines(["FAILED scenarios/bad.yaml::invalid-scenario*"])
    output = result.stdout.str()
    assert "Traceback" not in output
    assert "ValidationError" not in output
    assert "skipped" not in output


def test_a_misspelt_key_is_reported_once_not_also_as_missing(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    _with(_rename_expect)(scenarios)

    result = pytester.runpytest()

    result.assert_outcomes(failed=1)
    assert "did you mean 'expect'?" in result.stdout.str()
    assert "required key is missing" not in result.stdout.str()


def _two_files_with_one_id(scenarios: ScenarioDir) -> tuple[Path, Path]:
    first = scenarios.write("scenarios/a.yaml", scenarios.example())
    data = scenarios.example()
    data["title"] = "同一个 id 的第二个文件"
    second = scenarios.write("scenarios/b.yaml", data)
    return first, second


def test_a_duplicate_id_names_both_files(pytester: pytest.Pytester, scenarios: ScenarioDir) -> None:
    first, second = _two_files_with_one_id(scenarios)

    result = pytester.runpytest()

    result.assert_outcomes(failed=2)  # neither file runs as the other
    assert (
        f"duplicate scenario id 'high-memory-positive' in {first} and {second}: ids must be"
        " unique in a run (give all but one of them a distinct `id:`)"
    ) in result.stdout.str()
    result.stdout.fnmatch_lines(
        ["FAILED scenarios/a.yaml::invalid-scenario*", "FAILED scenarios/b.yaml::invalid-scenario*"]
    )


def test_a_duplicate_id_points_at_the_id_line(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    _, second = _two_files_with_one_id(scenarios)
    line, column = _position(second, "id:")

    result = pytester.runpytest()

    result.assert_outcomes(failed=2)
    assert f"{second}:{line}:{column}: id: duplicate scenario id" in result.stdout.str()


def _good_and_two_broken(scenarios: ScenarioDir) -> None:
    scenarios.write("scenarios/good.yaml", scenarios.full())
    broken = scenarios.low_confidence()
    broken["expect"]["verdict"] = "PASSED"
    scenarios.write("scenarios/broken.yaml", broken)
    scenarios.write_text("scenarios/empty.yml", "")


def test_bad_files_do_not_stop_the_good_ones(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    _good_and_two_broken(scenarios)

    result = pytester.runpytest()

    result.assert_outcomes(passed=11, failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "Interrupted" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*/scenarios/broken.yaml:*:*: expect.verdict: 'PASSED' is not one of *",
            "*/scenarios/empty.yml:1:1: the file is empty*",
            "FAILED scenarios/broken.yaml::invalid-scenario*",
            "FAILED scenarios/empty.yml::invalid-scenario*",
        ]
    )


def test_collect_only_still_reports_a_bad_file_as_a_collection_error(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    _good_and_two_broken(scenarios)

    result = pytester.runpytest("--collect-only", "-q")

    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["ERROR scenarios/broken.yaml*", "ERROR scenarios/empty.yml*"])


def test_yaml_is_loaded_safely(pytester: pytest.Pytester, scenarios: ScenarioDir) -> None:
    path = scenarios.write_text(
        "scenarios/unsafe.yaml",
        "id: unsafe\ntitle: !!python/object/apply:os.mkdir ['made-by-yaml']\n",
    )

    result = pytester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"{path}:2:8: invalid YAML: *python/object/apply:os.mkdir*"])
    assert not (pytester.path / "made-by-yaml").exists()


@pytest.mark.parametrize("selection", [("-k", "high-memory-positive"), ("-m", "memory")])
def test_a_selection_never_hides_a_bad_file(
    pytester: pytest.Pytester, scenarios: ScenarioDir, selection: tuple[str, str]
) -> None:
    _good_and_two_broken(scenarios)
    scenarios.write("scenarios/forged.yaml", scenarios.forged_citation())  # tags: forgery

    result = pytester.runpytest(*selection)

    result.assert_outcomes(passed=11, failed=2, deselected=2)
    assert "forged-citation" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        ["FAILED scenarios/broken.yaml::invalid-scenario*", "FAILED scenarios/empty.yml::*"]
    )
