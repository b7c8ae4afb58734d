"""scenarios/README.md indexes every seed requirement: every file and test it names exists,
and every shipped scenario is named in it; every seed-derived scenario carries a seed tag."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "scenarios" / "README.md"
TEST_REF = re.compile(r"`(tests/[\w/]+\.py)?::(\w+)")
SCENARIO_REF = re.compile(
    r"`((?:matrix|regression|verifier|routing|evidence|injection|soundness|worlds|live)"
    r"/[\w.-]+\.yaml)`"
)


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
    named = set(SCENARIO_REF.findall(text))
    shipped = {
        str(path.relative_to(ROOT / "scenarios"))
        for path in (ROOT / "scenarios").rglob("*.yaml")
        if "cassettes" not in path.parts
    }
    assert named - shipped == set(), (
        f"scenarios/README.md names scenario files that do not exist: {sorted(named - shipped)};"
        " edit scenarios/README.md"
    )
    assert shipped - named == set(), (
        f"{sorted(shipped - named)} are not in the index: add each to scenarios/README.md, under"
        " the seed requirement it covers (see 'Add a scenario to the shipped suite' in README.md)"
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
        for path in sorted((ROOT / "scenarios" / folder).glob("*.yaml")):
            tags = yaml.safe_load(path.read_text("utf-8")).get("tags", [])
            if not any(tag.startswith(wanted) for tag in tags):
                untagged.append(f"{folder}/{path.name}")
    assert untagged == [], (
        f"{untagged} carry no seed requirement tag: edit each file's `tags:` (e.g. seed004_…)"
    )
