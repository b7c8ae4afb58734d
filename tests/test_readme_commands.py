"""The README's commands work as pasted: the local recipe serves on the port the live
cassettes were recorded on (the port their printed re-record command names), every recording
command sets the key, and the README names the Python version pyproject.toml requires."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pytest_diageval.harness.cassettes.rerecord import read_metadata

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text("utf-8")
PIPELINE = (ROOT / "docs" / "pipeline.md").read_text("utf-8")
SHELL_BLOCKS = re.findall(r"```sh\n(.*?)```", README, re.DOTALL)


def _commands() -> list[str]:
    """Each shell command of the README, its continuation lines joined."""
    return [
        " ".join(command.split())
        for block in SHELL_BLOCKS
        for command in block.replace("\\\n", " ").splitlines()
        if command.strip()
    ]


def test_the_local_recipe_serves_on_the_port_the_live_cassettes_name() -> None:
    (serve,) = [c for c in _commands() if "diageval serve-local" in c]
    port = re.search(r"--port (\d+)", serve)
    assert port is not None
    recording = [c for c in _commands() if "scenarios/live/" in c and "--diageval-record" in c]
    assert recording
    for command in recording:
        assert f"--diageval-base-url http://127.0.0.1:{port.group(1)}/v1" in command
    cassettes = sorted((ROOT / "cassettes").glob("live-*.yaml"))
    assert len(cassettes) >= 10
    for cassette in cassettes:
        metadata = read_metadata(cassette)
        assert metadata is not None
        assert metadata.base_url == f"http://127.0.0.1:{port.group(1)}/v1", cassette.name


def test_every_recording_command_sets_the_key() -> None:
    recording = [c for c in _commands() if re.search(r"--diageval-record[= ](?!none)", c)]
    assert len(recording) >= 2
    for command in recording:
        assert command.startswith("OPENAI_API_KEY="), command


def test_the_readme_names_the_python_version_pyproject_requires() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    required = project["requires-python"]
    assert required == ">=3.11"
    assert f'`requires-python = "{required}"`' in README
    assert "Python 3.11 or newer" in README


def test_the_server_internals_live_in_their_own_page() -> None:
    assert "[docs/local-model.md](docs/local-model.md)" in README
    page = (ROOT / "docs" / "local-model.md").read_text("utf-8")
    for moved in ("262,144", "finish_reason", "SIGKILL", "diageval-gemma-tools"):
        assert moved in page
        assert moved not in README


def test_the_evidence_section_sits_right_before_test_your_guards() -> None:
    headings = re.findall(r"^## .*$", PIPELINE, re.MULTILINE)
    index = headings.index("## Test your guards")
    assert headings[index - 1] == "## Evidence that gives orders"
