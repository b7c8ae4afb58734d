"""Time the evidence tools over a large generated world (default: 10,000 logs, 1,000 alerts).

Run: ``python benchmarks/bench_tools.py [--logs N] [--alerts N] [--repeat N]``.

Each case runs ``--repeat`` times (after one warm-up run) and the median and the worst
wall-clock time (``time.perf_counter``) are printed. ``lookup_knowledge`` gets a fresh
``Toolbox`` per run (built outside the timed region) because a repeated query in one toolbox
is deduplicated and would not search. Timings are informative only; no test asserts them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_diageval.core.evidence.tools import Toolbox
from pytest_diageval.core.evidence.world import World

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.worlds import build_world

__all__ = ["main"]


def _time(
    run: Callable[[], Any], repeat: int, setup: Callable[[], Any] | None = None
) -> list[float]:
    """Milliseconds of ``repeat`` runs after one warm-up; ``setup`` runs untimed before each."""
    samples = []
    for index in range(repeat + 1):
        if setup is not None:
            setup()
        started = time.perf_counter()
        run()
        elapsed = (time.perf_counter() - started) * 1000
        if index:
            samples.append(elapsed)
    return samples


def _cases(world: World) -> list[tuple[str, Callable[[], Any], Callable[[], Any] | None]]:
    warm = Toolbox(world)
    fresh: list[Toolbox] = []

    def new_toolbox() -> None:
        fresh[:] = [Toolbox(world)]

    return [
        ("Toolbox(world) + first query_logs", lambda: Toolbox(world).query_logs(limit=1), None),
        ("query_metrics()", warm.query_metrics, None),
        ("query_metrics(service)", lambda: warm.query_metrics(service="svc-03"), None),
        ("query_metrics(keywords)", lambda: warm.query_metrics(keywords=["CPU", "内存"]), None),
        ("query_logs(keywords=HikariCP)", lambda: warm.query_logs(keywords=["HikariCP"]), None),
        (
            "query_logs(service, keywords, limit=200)",
            lambda: warm.query_logs(service="svc-00", keywords=["connection pool"], limit=200),
            None,
        ),
        ("query_logs(no hit)", lambda: warm.query_logs(service="inventory-service"), None),
        ("query_logs(level=ERROR)", lambda: warm.query_logs(level="ERROR"), None),
        ("lookup_knowledge(L0)", lambda: fresh[0].lookup_knowledge("HighCPUUsage"), new_toolbox),
        (
            "lookup_knowledge(L1)",
            lambda: fresh[0].lookup_knowledge("数据库连接池耗尽怎么办"),
            new_toolbox,
        ),
        ("lookup_knowledge(dedup)", lambda: warm.lookup_knowledge("HighCPUUsage"), None),
        ("get_current_time()", warm.get_current_time, None),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--logs", type=int, default=10_000, help="number of logs (10000)")
    parser.add_argument("--alerts", type=int, default=1_000, help="number of alerts (1000)")
    parser.add_argument("--repeat", type=int, default=9, help="timed runs per case (9)")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    world = build_world(args.logs, args.alerts)
    build_ms = (time.perf_counter() - started) * 1000
    print(
        f"world: {args.logs} logs, {args.alerts} alerts (built and validated in {build_ms:.1f} ms)"
    )
    print(f"{'case':<42} {'median ms':>10} {'max ms':>10}")
    print("-" * 64)
    for name, run, setup in _cases(world):
        samples = _time(run, args.repeat, setup)
        print(f"{name:<42} {statistics.median(samples):>10.3f} {max(samples):>10.3f}")


if __name__ == "__main__":
    main()
