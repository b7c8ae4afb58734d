"""Print docs/guide.md's agreement table of the live scenarios' repeated samples.

    .venv/bin/python docs/live_agreement.py             # replays scenarios/live/ offline
    .venv/bin/python docs/live_agreement.py REPORT.json # reads a --diageval-report instead

It replays ``scenarios/live/`` with ``--diageval-require-samples any`` (so that every sample's
outcome is reported, whatever the pins say) into a scratch ``--diageval-report``, then prints
one Markdown row per scenario: each sample's verdict, how many samples share the most common
verdict, and each expectation that held on some samples only, with how many. Nothing here
decides anything: it reads the report's ``summary.samples`` and ``check_results[].samples``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[1]


def replayed_report() -> dict[str, Any]:
    """The live scenarios replayed offline, as the JSON report records them."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch, "live.json")
        command = [sys.executable, "-m", "pytest", "scenarios/live", "-q", "-p", "no:cacheprovider"]
        command += ["--diageval-require-samples", "any", "--diageval-report", str(report)]
        subprocess.run(command, cwd=REPOSITORY, check=False, capture_output=True)
        return dict(json.loads(report.read_text("utf-8")))


def table(report: Mapping[str, Any]) -> Iterator[str]:
    """The Markdown table: scenario, verdict per sample, agreement, flaky expectations."""
    yield "| scenario | verdict per sample | agreement | flaky expectations (held on) |"
    yield "| --- | --- | --- | --- |"
    for entry in report["scenarios"]:
        summary = entry["summary"]
        samples = summary.get("samples") or [{"verdict": summary["verdict"]}]
        verdicts = " · ".join(sample["verdict"] for sample in samples)
        flaky = [
            f"`{check['name']}` ({check['samples']['held']}/{check['samples']['samples']})"
            for check in entry.get("check_results") or []
            if (check.get("samples") or {}).get("flaky")
        ]
        agreement = summary.get("agreement", "1/1")
        yield f"| {entry['id']} | {verdicts} | {agreement} | {', '.join(flaky) or '—'} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", nargs="?", type=Path, help="a --diageval-report to read")
    args = parser.parse_args()
    report = json.loads(args.report.read_text("utf-8")) if args.report else replayed_report()
    for line in table(report):
        print(line)


if __name__ == "__main__":
    main()
