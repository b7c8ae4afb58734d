"""Time the whole mutation suite: ``pytest scenarios/ --diageval-mutate`` on the shipped suite.

Runs the command as a subprocess, once single-process and once with ``-n <workers>``
(default 2), each ``--repeat`` times (default 1), and prints per run the wall time, the CPU
time of the run and its children (user + system), the load average before it started, and
the mutant totals read from the ``--diageval-report`` JSON (tried, killed, survived,
equivalent, error). Survivors make pytest exit 1; that is a result, not a failure of the
benchmark. Any other exit code stops it.

Run from the repository root: ``python benchmarks/bench_mutation.py [--workers 2]
[--repeat 1] [--paths scenarios/]``. Timings are informative only.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Measurement", "main", "measure"]

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Measurement:
    label: str
    wall: float
    cpu: float
    load: float
    totals: dict[str, int]


def measure(label: str, paths: list[str], extra: list[str]) -> Measurement:
    """One ``pytest <paths> --diageval-mutate`` subprocess, timed."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "mutation.json"
        command = [
            sys.executable,
            "-m",
            "pytest",
            *paths,
            "--diageval-mutate",
            "-q",
            "-p",
            "no:cacheprovider",
            "--diageval-report",
            str(report),
            *extra,
        ]
        load = os.getloadavg()[0]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 1):
            raise SystemExit(
                f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-3000:]}"
            )
        totals: dict[str, Any] = json.loads(report.read_text("utf-8"))["mutation"]["totals"]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Measurement(label, wall, cpu, load, totals)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--paths", nargs="+", default=["scenarios/"])
    args = parser.parse_args(argv)
    runs = [("1 process", []), (f"-n {args.workers}", ["-n", str(args.workers)])]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; paths {args.paths}")
    print(
        "run        | wall s | cpu s | load before | tried | killed | survived | equivalent | error"
    )
    for _ in range(args.repeat):
        for label, extra in runs:
            m = measure(label, args.paths, extra)
            t = m.totals
            print(
                f"{m.label:<10} | {m.wall:6.1f} | {m.cpu:5.1f} | {m.load:11.2f} | {t['tried']:5} |"
                f" {t['killed']:6} | {t['survived']:8} | {t['equivalent']:10} | {t['error']}"
            )


if __name__ == "__main__":
    main()
