"""scenarios/README.md indexes every seed requirement: every file and test it names exists,
and every shipped scenario is named in it; every seed-derived scenario carries a seed tag.

"Shipped" is what the repository holds (git's tracked files, see ``support.shipped``): a
user's own ``scenarios/mine/x.yaml``, as the README suggests, is theirs and needs no entry."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support.shipped import (
    shipped_files,
    shipped_scenario_files,
    shipped_scenario_paths,
    tracked_files,
)

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "scenarios" / "README.md"
TEST_REF = re.compile(r"`(tests/[\w/]+\.py)?::(\w+)")
# `folder/file.yaml`, relative to scenarios/; only names whose folder exists there count
# (`scenarios/x.yaml` or `src/…/default.yaml` in the prose are not entries).
SCENARIO_REF = re.compile(r"`([\w-]+/[\w.-]+\.yaml)`")


def named_scenarios(text: str, scenarios: Path = ROOT / "scenarios") -> set[str]:
    """The scenario files the index names, relative to ``scenarios``."""
    return {
        name
        for name in SCENARIO_REF.findall(text)
        if name.split("/")[0] != "cassettes" and (scenarios / name.split("/")[0]).is_dir()
    }


def shipped_scenarios(root: Path = ROOT) -> set[str]:
    """The shipped scenario (and world) files, relative to scenarios/: what git tracks, so a
    user's own folder breaks nothing."""
    text = (root / "scenarios" / "README.md").read_text("utf-8")
    folders = {name.split("/")[0] for name in named_scenarios(text, root / "scenarios")}
    return {
        str(path.relative_to(root / "scenarios"))
        for path in shipped_scenario_files(root, indexed_folders=folders)
    }


def referenced_tests(text: str) -> list[tuple[str, str]]:
    """(file, test) pairs; a bare ``::name`` continues the last file named before it."""
    pairs: list[tuple[str, str]] = []
    current = ""
    for match in TEST_REF.finditer(text):
        current = match.group(1) or current
        pairs.append((current, match.group(2)))
    return pairs


def test_every_test_the_index_names_exists() -> None:
    text = INDEX.read_text("utf-8")
    pairs = referenced_tests(text)
    assert len(pairs) > 50
    missing = [
        f"{file}::{name}"
        for file, name in pairs
        if not (ROOT / file).is_file()
        or not re.search(rf"def {name}\b", (ROOT / file).read_text("utf-8"))
    ]
    assert missing == [], (
        f"scenarios/README.md names tests that do not exist: {', '.join(missing)};"
        " edit scenarios/README.md (or restore the tests)"
    )


def test_every_scenario_the_index_names_exists_and_every_scenario_is_indexed() -> None:
    text = INDEX.read_text("utf-8")
    named = named_scenarios(text)
    shipped = shipped_scenarios()
    assert len(shipped) > 50
    assert named - shipped == set(), (
        f"scenarios/README.md names scenario files that do not exist: {sorted(named - shipped)};"
        " edit scenarios/README.md"
    )
    assert shipped - named == set(), (
        f"{sorted(shipped - named)} are not in the index: add each to scenarios/README.md, under"
        " the seed requirement it covers (see 'Add a scenario to the shipped suite' in"
        " docs/guide.md)"
    )


def test_the_index_check_sees_a_missing_test() -> None:
    assert referenced_tests("`tests/core/evidence/test_store.py::nope`, `::also`") == [
        ("tests/core/evidence/test_store.py", "nope"),
        ("tests/core/evidence/test_store.py", "also"),
    ]


def test_every_seed_scenario_carries_a_seed_requirement_tag() -> None:
    """matrix/ and regression/ encode 004 (seed004_*); verifier/, routing/ and evidence/ encode
    the spec scenarios of 000 and 003 (seed000_* / seed003_*); soundness/ the hole classes of
    issue 10, each tagged with the 004 or 000 sentence it answers. Tags become pytest markers, so
    ``pytest scenarios -m seed000_reject_no_retry`` selects what covers one requirement."""
    prefixes = {
        "matrix": ("seed004_",),
        "regression": ("seed004_",),
        "verifier": ("seed000_", "seed003_"),
        "routing": ("seed000_", "seed003_"),
        "evidence": ("seed000_", "seed003_"),
        "soundness": ("seed004_", "seed000_"),
    }
    untagged = []
    for folder, wanted in prefixes.items():
        for path in shipped_files(f"scenarios/{folder}", "*.yaml"):
            tags = yaml.safe_load(path.read_text("utf-8")).get("tags", [])
            if not any(tag.startswith(wanted) for tag in tags):
                untagged.append(f"{folder}/{path.name}")
    assert untagged == [], (
        f"{untagged} carry no seed requirement tag: edit each file's `tags:` (e.g. seed004_…)"
    )


# The tests that read or run every shipped file under scenarios/ (the index, the schema check,
# the recorder check over each scripted scenario, the prompts' examples), run in the checkout.
SUITE_TESTS = (
    "tests/scenarios/test_index.py",
    "tests/harness/format/test_scenario_schema.py",
    "tests/agents/test_invocation_view.py",
    "tests/agents/test_prompts.py::test_no_prompt_or_function_names_a_subject_of_any_world",
)
# The request check reads the folder only through its module's list, ``SHIPPED =
# shipped_scenario_paths()``, then runs each file of it (every shipped scenario, 10 s): in the
# checkout that list is compared with the shipped files instead of running them all again.
LISTED_ONLY = Path("tests/agents/test_post_completion.py")
PYTEST = (
    *(sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "no:xdist"),
    *(
        "--deselect",
        "tests/scenarios/test_index.py::test_a_users_own_scenario_folder_breaks_no_test",
    ),
)
DRAFT = "id: my-draft\ntitle: half written\nquery: 只确认 order-service\nexpect: {verdict: PAS}\n"
"""A user's scenario still being written: an invalid verdict, no model answers."""
UNRECORDED = (
    "id: my-unrecorded\ntitle: t\nquery: q\nllm: {cassette: cassettes/none.yaml}\nexpect: {}\n"
)
"""A user's scenario that replays a cassette not recorded yet (as ``diageval scaffold`` writes)."""


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PYTEST, *args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to tell shipped files apart")
def test_a_users_own_scenario_folder_breaks_no_test(tmp_path: Path) -> None:
    """The README says: save the example as scenarios/mine/high-memory.yaml. In a checkout
    (a copy of this one's tracked files) with that file, its world, a draft that does not load
    and a scenario not recorded yet, the tests that read the shipped suite pass and read none
    of the user's files (they read what git tracks)."""
    tracked = ["tests", "scenarios", "cassettes", "pyproject.toml", "conftest.py"]
    for part in tracked:  # conftest.py: the project's own checks
        for path in tracked_files(ROOT, part) or ():
            copy = tmp_path / path.relative_to(ROOT)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, copy)
    for command in (["init", "-q"], ["add", *tracked]):
        subprocess.run(["git", "-C", str(tmp_path), *command], check=True, capture_output=True)
    readme = (ROOT / "README.md").read_text("utf-8") + (ROOT / "docs" / "reference.md").read_text(
        "utf-8"
    )  # the PASS example, and the world in the reference
    examples = dict(re.findall(r"```yaml\n# readme-example: ([\w-]+)\n(.*?)```", readme, re.S))
    scenario = yaml.safe_load(examples["pass"])
    scenario["world"] = "worlds/shop.yaml"
    scenario["llm"]["script"][2]["content"]["claims"][0]["evidence_bindings"][1]["raw_path"] = (
        "$.logs[0]"  # the README's world has one order-service log line about memory
    )
    mine = tmp_path / "scenarios" / "mine"
    (mine / "worlds").mkdir(parents=True)
    (mine / "high-memory.yaml").write_text(yaml.safe_dump(scenario, allow_unicode=True), "utf-8")
    (mine / "worlds" / "shop.yaml").write_text(examples["world"], "utf-8")
    (mine / "draft.yaml").write_text(DRAFT, "utf-8")
    (mine / "unrecorded.yaml").write_text(UNRECORDED, "utf-8")

    project = _pytest(tmp_path, *SUITE_TESTS)
    users = _pytest(tmp_path, "scenarios/mine/high-memory.yaml")

    assert "\nSHIPPED = shipped_scenario_paths()\n" in (ROOT / LISTED_ONLY).read_text("utf-8")
    listed = [path.relative_to(tmp_path) for path in shipped_scenario_paths(root=tmp_path)]
    assert listed == [path.relative_to(ROOT) for path in shipped_scenario_paths()]
    assert project.returncode == 0, project.stdout[-3000:]
    assert "mine" not in project.stdout
    assert "test_the_executor_sees_the_stored_rows_every_turn[01-" in project.stdout
    assert users.returncode == 0, users.stdout[-3000:]
    assert "4 passed" in users.stdout
