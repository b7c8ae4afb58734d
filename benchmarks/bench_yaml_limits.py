"""Time and memory of loading hostile YAML: an alias bomb and a recursive alias in a scenario's
script ``content``, a string bomb in a tool call's keywords, nesting 990 deep, an integer of
5,000 digits, one million keywords and a 50 MB file of keys, against a plain scenario.

Before the limits (``core.evidence.yaml_limits``) such a file loaded "fine" and the cost came
later, when pydantic and the JSON encoder walked every reference (minutes, gigabytes, then an
"LLM unavailable" message), or it ended the session in a RecursionError or hung it. Each case
is loaded ``--repeat`` times with ``load_scenario``; the
script prints the median wall time, the peak traced memory and the first line of the error.

Run: ``python benchmarks/bench_yaml_limits.py [--levels 9] [--repeat 20]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

from pytest_diageval.harness.format.loader import ScenarioError, load_scenario

HEAD = "title: t\nquery: q\nworld: default\nexpect: {verdict: PASS}\nllm:\n  script:\n"


def bomb(levels: int) -> str:
    """Nine references per level: 9**levels values once expanded."""
    lines = [f"        l0: &l0 [{', '.join(['x'] * 9)}]\n"]
    for level in range(1, levels):
        refs = ", ".join([f"*l{level - 1}"] * 9)
        lines.append(f"        l{level}: &l{level} [{refs}]\n")
    return HEAD + "    - stage: planner\n      content:\n" + "".join(lines)


CASES = {
    "plain": HEAD + "    - {stage: planner, content: {plan: p, steps: [a, b]}}\n",
    "recursive alias": HEAD
    + "    - stage: planner\n      content: &loop {plan: p, steps: [*loop]}\n",
    "string bomb": HEAD
    + "    - {stage: executor, tool_calls: [{name: query_logs, arguments: {keywords: [&s "
    + "x" * 100_000
    + ", "
    + ", ".join(["*s"] * 2_000)
    + "]}}]}\n",
    "nested 990 deep": HEAD.replace("title: t", "title: " + "[" * 990 + "]" * 990),
    "int of 5,000 digits": HEAD.replace("title: t", "title: " + "9" * 5_000),
    "1M keywords": HEAD.replace(
        "expect: {verdict: PASS}", "expect: {required_keywords: [" + ", k" * 10**6 + "]}"
    ).replace("[, k", "[k"),
    "50 MB of keys": "".join(f"key{i}: {i}\n" for i in range(100_000)) * 40,
}


def measure(text: str, repeat: int, folder: Path) -> tuple[float, float, str]:
    path = folder / "case.yaml"
    path.write_text(text, "utf-8")
    times: list[float] = []
    outcome = "loaded"
    tracemalloc.start()
    for _ in range(repeat):
        start = time.perf_counter()
        try:
            load_scenario(path)
        except ScenarioError as error:
            outcome = str(error).split(": ", 1)[1][:100]
        times.append(time.perf_counter() - start)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return statistics.median(times) * 1000, peak / 2**20, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=int, default=9, help="alias bomb depth (9**levels)")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    cases = {**CASES, f"alias bomb 9**{args.levels}": bomb(args.levels)}
    print(f"{'case':<20} {'median ms':>9} {'peak MB':>8}  outcome")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in cases.items():
            millis, megabytes, outcome = measure(text, args.repeat, Path(tmp))
            print(f"{name:<20} {millis:>9.2f} {megabytes:>8.2f}  {outcome}")


if __name__ == "__main__":
    main()
