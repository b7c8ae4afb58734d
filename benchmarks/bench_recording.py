"""How long recording a live scenario takes: each scenario re-recorded, three samples, timed.

Runs, per scenario file, the README's recording command against a running local model server
(``diageval serve-local --port 18080``), with three samples at temperature 0.7 as the shipped
live cassettes are recorded:

    pytest SCENARIO --diageval-record=rewrite --diageval-repeat 3 --diageval-temperature 0.7
        --diageval-base-url http://127.0.0.1:18080/v1 --diageval-model gemma3-270m
        --diageval-timeout 900

and prints one row per scenario (seconds for its three samples, and per sample) and the median.
It **rewrites the scenarios' cassettes**: run it on a clone, or re-pin afterwards with
``docs/live_pin.py``.

    python benchmarks/bench_recording.py [--base-url URL] [--samples N] SCENARIO.yaml [...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = 3


def record(scenario: Path, base_url: str, samples: int = SAMPLES) -> tuple[float, int]:
    """Seconds to record ``scenario``'s samples, and pytest's exit code."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        str(scenario),
        "--diageval-record=rewrite",
        f"--diageval-repeat={samples}",
        "--diageval-temperature=0.7",
        f"--diageval-base-url={base_url}",
        "--diageval-model=gemma3-270m",
        "--diageval-timeout=900",
    ]
    environment = {**os.environ, "OPENAI_API_KEY": "sk-local-anything"}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, check=False)
    return time.perf_counter() - started, done.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="+", type=Path)
    parser.add_argument("--base-url", default="http://127.0.0.1:18080/v1")
    parser.add_argument("--samples", type=int, default=SAMPLES, help="samples per scenario")
    args = parser.parse_args(argv)
    print(f"| scenario | seconds ({args.samples} samples) | per sample | pytest exit |")
    print("|---|---|---|---|")
    per_scenario = []
    for scenario in args.scenarios:
        seconds, code = record(scenario, args.base_url, args.samples)
        per_scenario.append(seconds)
        per_sample = seconds / args.samples
        print(f"| {scenario.stem} | {seconds:.0f} | {per_sample:.0f} | {code} |", flush=True)
    median = statistics.median(per_scenario)
    print(f"| **median** | {median:.0f} | {median / args.samples:.0f} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
