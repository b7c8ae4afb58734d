"""Measure issue 36's invariant: nothing a model writes reaches what the user reads.

Two checks, each run as a subprocess from the repository root, with its wall time:

* the hypothesis property (``tests/core/answer/test_soundness_property.py``): generated
  cases, each run twice through the pure core, once with every model-written string edited
  to carry a canary; the examples it ran and whether it held;
* the ``prose-rewrite`` mutants of ``--diageval-mutate`` over the shipped suite (every PASS
  scenario, every string its models wrote edited, citations kept): tried, killed, survived,
  read from the ``--diageval-report`` JSON.

Run: ``python benchmarks/bench_rendering.py``. Exit status 0 whatever the numbers.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main"]

REPO = Path(__file__).resolve().parents[1]
PROPERTY = "tests/core/answer/test_soundness_property.py::" + (
    "test_no_model_text_reaches_the_answer_and_a_claim_renders_its_evidence_alone"
)


def _run(arguments: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *arguments],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    return time.perf_counter() - start, done


def main() -> int:
    wall, done = _run([PROPERTY, "-q", "--hypothesis-show-statistics"])
    examples = re.search(r"(\d+) passing, (\d+) failing", done.stdout)
    held = "held" if done.returncode == 0 else f"FAILED (exit {done.returncode})"
    counted = f"{examples.group(1)} passing, {examples.group(2)} failing" if examples else "?"
    print(f"property: {counted} examples, {held}, {wall:.1f} s wall")
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        wall, done = _run(
            ["scenarios/", "--diageval-mutate", "-q", "-k", "prose-rewrite",
             f"--diageval-report={report}"]
        )  # fmt: skip
        totals = json.loads(report.read_text("utf-8")).get("mutation", {}).get("totals", {})
    counts = ", ".join(f"{key} {totals.get(key, '?')}" for key in ("tried", "killed", "survived"))
    print(f"prose-rewrite mutants: {counts}, {wall:.1f} s wall (exit {done.returncode})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
