"""Folders named ``cassettes`` or ``worlds`` are never collected, but only inside the project:
the same names above it (a checkout in ``~/worlds/``) must not stop collection."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir


@pytest.mark.parametrize("above", ["worlds", "cassettes", "cassettes/worlds"])
@pytest.mark.parametrize("with_ini", [True, False])
def test_a_project_below_a_worlds_or_cassettes_folder_is_collected(
    pytester: pytest.Pytester,
    scenarios: ScenarioDir,
    monkeypatch: pytest.MonkeyPatch,
    above: str,
    with_ini: bool,
) -> None:
    project = f"{above}/project"
    scenarios.write(f"{project}/scenarios/memory.yaml", scenarios.full())
    # Inside the project the folders still hide what they hold.
    decoy = {**scenarios.example(), "id": "decoy"}
    scenarios.write(f"{project}/scenarios/worlds/decoy.yaml", decoy)
    scenarios.write_text(f"{project}/scenarios/cassettes/broken.yaml", "interactions: [unclosed\n")
    if with_ini:  # rootdir is the project; without an ini it is the argument's folder
        scenarios.write_text(f"{project}/pytest.ini", "[pytest]\n")
    monkeypatch.chdir(pytester.path / project)

    result = pytester.runpytest("-v", "scenarios")

    result.assert_outcomes(passed=11)
    result.stdout.fnmatch_lines(["scenarios/memory.yaml::high-memory-positive::verdict PASSED*"])
    assert "decoy" not in result.stdout.str()
    assert "broken" not in result.stdout.str()
