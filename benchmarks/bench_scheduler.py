"""The xdist controller's scheduling bookkeeping for N scenarios, ours against xdist's own.

Drives the scheduler as xdist's controller does (two stand-in workers, every item finished in
the order it was sent) and prints the CPU seconds of the bookkeeping alone: xdist's
``loadgroup`` (``loadscope``) recounts every scope a worker ever had on each finished item and
looks items up with ``list.index`` (quadratic), ours keeps both linear.

    python benchmarks/bench_scheduler.py [--scenarios 500,2000,4000] [--keys 8]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from xdist.scheduler import LoadGroupScheduling

from pytest_diageval.harness.xdist.group_scheduler import ScenarioGroupScheduling, scenario_group

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.xdist_workers import Worker, finish_all, new_scheduler

__all__ = ["main", "schedule_all"]


class XdistOwn(LoadGroupScheduling):
    """xdist's bookkeeping with our scenario scopes (what ran before)."""

    def _split_scope(self, nodeid: str) -> str:
        return scenario_group(nodeid) or nodeid


def schedule_all(kind: type[LoadGroupScheduling], scenarios: int, keys: int) -> float:
    """CPU seconds to schedule and finish every item of ``scenarios`` scenarios."""
    collection = [
        f"scenarios/s{n:05d}.yaml::s{n:05d}::key{k}" for n in range(scenarios) for k in range(keys)
    ]
    start = time.process_time()
    scheduler = new_scheduler(kind, collection, [Worker("gw0"), Worker("gw1")])
    ran = finish_all(scheduler, list(scheduler.nodes))  # type: ignore[arg-type]
    assert sum(map(len, ran.values())) == len(collection)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scenarios", default="500,2000,4000", help="comma-separated sizes")
    parser.add_argument("--keys", type=int, default=8, help="items per scenario (8)")
    args = parser.parse_args()
    print(f"{'scenarios':>9} {'items':>7} {'xdist loadgroup s':>18} {'ours s':>8}")
    for scenarios in (int(part) for part in args.scenarios.split(",") if part.strip()):
        own = schedule_all(XdistOwn, scenarios, args.keys)
        ours = schedule_all(ScenarioGroupScheduling, scenarios, args.keys)
        print(f"{scenarios:>9} {scenarios * args.keys:>7} {own:>18.2f} {ours:>8.2f}")


if __name__ == "__main__":
    main()
