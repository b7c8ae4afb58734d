"""Outputs that survive (issue 41, item 5): an output path that cannot be written stops the run
before it starts (exit 4, naming the option); a disk that fills up at the end costs that output
alone (an error line; the JUnit XML, the summary and the rest are written, no INTERNALERROR);
a run stopped while writing its report, or two runs writing the same one, leave a whole file;
a baseline that is not a report is a usage error naming the file."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir

OPTIONS = [
    pytest.param("--diageval-report", "JSON", id="report"),
    pytest.param("--diageval-html", "HTML", id="html"),
    pytest.param("--diageval-summary", "Markdown", id="summary"),
]
TOO_LONG = "r" * 250 + ".json"


def _unwritable(root: Path) -> list[tuple[str, str]]:
    """Paths no output can be written to, and what the usage error says of each."""
    (root / "taken").write_text("a file, not a folder", encoding="utf-8")
    (root / "out").mkdir()
    return [
        ("out", "'out' is a directory; give the {kind} file to write, such as out/"),
        ("taken/x.out", "'taken/x.out' lies under taken, which is a file, not a folder"),
        ("taken/deeper/x.out", "lies under taken, which is a file, not a folder"),
        ("/dev/full", "'/dev/full' exists and is not a regular file (a device or a pipe)"),
        (TOO_LONG, f"has a name of {len(TOO_LONG)} bytes; this file system allows 255"),
    ]


@pytest.mark.parametrize(("option", "kind"), OPTIONS)
def test_an_output_path_that_cannot_be_written_is_a_usage_error_before_the_run(
    pytester: pytest.Pytester, scenarios: ScenarioDir, option: str, kind: str
) -> None:
    scenarios.count_runs()
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    for target, said in _unwritable(pytester.path):
        result = pytester.runpytest(option, target, "--junitxml", "junit.xml")

        assert result.ret == pytest.ExitCode.USAGE_ERROR, target
        assert f"argument {option}: " in str(result.stderr)
        assert said.format(kind=kind) in str(result.stderr), target
        assert "Traceback" not in str(result.stderr) + str(result.stdout)
    assert scenarios.runs() == []  # nothing ran
    assert sorted(p.name for p in pytester.path.iterdir()) == [
        "conftest.py",
        "out",
        "scenarios",
        "taken",
    ]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes any folder")
def test_a_read_only_folder_for_an_output_is_a_usage_error(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    locked = pytester.path / "locked"
    locked.mkdir(mode=0o555)

    result = pytester.runpytest("--diageval-html", "locked/page.html")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "lies in locked, a folder this run may not write" in str(result.stderr)


def _limited_run(root: Path, limit: int, *args: str) -> subprocess.CompletedProcess[str]:
    """A pytest run in a process that may write no file larger than ``limit`` bytes (what a
    full disk does to a larger one: the write fails), its temporary files included."""

    def limit_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(root)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=root,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit_files,
        check=False,
    )


def test_a_full_disk_at_the_end_costs_only_the_outputs_it_stops(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    previous = '{"scenarios": [], "version": 1}\n'
    (pytester.path / "out").mkdir()
    (pytester.path / "out" / "report.json").write_text(previous, encoding="utf-8")

    # 8 KiB: the JUnit XML (3 KB) and the summary fit; the report, the page and each audit
    # record in the temporary folder (16 KB and more) do not.
    result = _limited_run(
        pytester.path,
        8192,
        *("--diageval-report", "out/report.json", "--diageval-html", "out/report.html"),
        *("--junitxml", "out/junit.xml", "--diageval-summary", "out/summary.md"),
    )

    output = result.stdout + result.stderr
    assert "INTERNALERROR" not in output
    assert "Traceback" not in output
    assert result.returncode == pytest.ExitCode.TESTS_FAILED
    assert "11 passed" in result.stdout
    assert "ERROR: --diageval-report out/report.json: cannot write the report: " in output
    assert "ERROR: --diageval-html out/report.html: cannot write the page: " in output
    assert (pytester.path / "out" / "report.json").read_text("utf-8") == previous
    assert not (pytester.path / "out" / "report.html").exists()
    junit = (pytester.path / "out" / "junit.xml").read_text("utf-8")
    assert 'tests="11"' in junit
    assert "### Failing scenarios" not in (pytester.path / "out" / "summary.md").read_text("utf-8")
    assert sorted(p.name for p in (pytester.path / "out").iterdir()) == [
        "junit.xml",
        "report.json",
        "summary.md",
    ]


INTERRUPTING_CONFTEST = """
import types
import pytest
import pytest_diageval.harness.report.audit_spool as spool

_patch = pytest.MonkeyPatch()


def _interrupted(text, prefix):
    raise KeyboardInterrupt  # Ctrl-C while the report is half written


def pytest_configure(config):
    _patch.setattr(spool, "textwrap", types.SimpleNamespace(indent=_interrupted))


def pytest_unconfigure(config):
    _patch.undo()
"""


def test_a_run_stopped_while_writing_its_report_leaves_the_previous_report_whole(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    pytester.runpytest("--diageval-report", "report.json").assert_outcomes(passed=11)
    previous = (pytester.path / "report.json").read_bytes()
    assert json.loads(previous)["scenarios"][0]["id"] == "high-memory-positive"
    scenarios.write_text("conftest.py", INTERRUPTING_CONFTEST)

    # In a process of its own: an in-process run would pass the Ctrl-C on to this one.
    stopped = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--diageval-report", "report.json"
    )

    assert stopped.ret != pytest.ExitCode.OK
    assert "KeyboardInterrupt" in str(stopped.stderr)

    assert (pytester.path / "report.json").read_bytes() == previous
    assert [p.name for p in pytester.path.glob("*report.json*")] == ["report.json"]


def test_two_runs_writing_the_same_report_each_write_a_whole_one(tmp_path: Path) -> None:
    from pytest_diageval.harness.report.audit_spool import write_report

    path = tmp_path / "report.json"
    second = [{"id": "second", "text": "短"}]

    def first() -> object:
        yield {"id": "first-a", "text": "x" * 10_000}
        write_report(path, second)  # the other run writes its whole report meanwhile
        yield {"id": "first-b", "text": "y"}

    write_report(path, first())  # type: ignore[arg-type]

    report = json.loads(path.read_text("utf-8"))
    assert [entry["id"] for entry in report["scenarios"]] == ["first-a", "first-b"]
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


# --------------------------------------------------------------------------- baseline


def _baselines(root: Path) -> list[tuple[str, str]]:
    """Baseline files that are no report, and what the usage error says of each."""
    deep = "[" * 100_000 + "]" * 100_000
    cases = {
        "latin1.json": ("é".encode("latin-1"), "is not UTF-8 text"),
        "deep.json": (
            ('{"version": 1, "scenarios": ' + deep + "}").encode(),
            "nested too deeply",
        ),
        "summary.json": (
            b'{"version": 1, "scenarios": [{"id": "a", "summary": "text"}]}',
            "scenarios[0].summary must be a mapping; got str",
        ),
        "result.json": (
            b'{"version": 1, "scenarios": [{"id": "a", "result": []}]}',
            "scenarios[0].result must be a mapping; got list",
        ),
        "rounds.json": (
            b'{"version": 1, "scenarios": [{"id": "a", "result": {"rounds": "x"}}]}',
            "scenarios[0].result.rounds must be a list; got str",
        ),
        "gatekeeper.json": (
            b'{"version": 1, "scenarios": [{"id": "a", "result": {"rounds": [{"gatekeeper":'
            b' {"failed_rules": "abc"}}]}}]}',
            "scenarios[0].result.rounds[0].gatekeeper.failed_rules must be a list; got str",
        ),
    }
    for name, (content, _) in cases.items():
        (root / name).write_bytes(content)
    found = [(name, said) for name, (_, said) in cases.items()]
    return [*found, ("/dev/zero", "is not a regular file")]


def test_a_baseline_that_is_no_report_is_a_usage_error_naming_the_file(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.count_runs()
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    for name, said in _baselines(pytester.path):
        result = pytester.runpytest("--diageval-baseline", name, "--junitxml", "junit.xml")

        assert result.ret == pytest.ExitCode.USAGE_ERROR, name
        errors = str(result.stderr)
        assert f"ERROR: --diageval-baseline {name}" in errors, name
        assert said in errors, (name, errors)
        assert "INTERNALERROR" not in errors + str(result.stdout)
    assert scenarios.runs() == []
