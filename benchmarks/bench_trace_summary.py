"""Time the tool trace summary over sessions of 1,000 recorded invocations.

Run: ``python benchmarks/bench_trace_summary.py [--invocations N] [--repeat N]``.

Each session is recorded once, untimed, through the real ``ToolInvocationRecorder`` and
``Toolbox`` into an in-memory store. Then two things are timed (``time.perf_counter``, one
warm-up run, the median and the worst of ``--repeat`` runs):

- ``summarize_invocations(rows)``: the pure summary over rows already read;
- ``ToolTraceSummaryService(store).build(session)``: reading the rows from SQLite, validating
  them, and summarising.

Sessions: a mixed default-world session (few topics, heavy merging, two rounds); one entry
per call (a distinct service per call); and one topic hit by every call (1,000 merged rows of
20 logs each, so 20,000 refs to deduplicate). Timings are informative only; no test asserts
them.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from functools import partial
from typing import Any

from pytest_diageval.core.evidence.recorder import ToolInvocationRecorder
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.evidence.tools import Toolbox
from pytest_diageval.core.evidence.trace_summary import (
    ToolTraceSummaryService,
    summarize_invocations,
)
from pytest_diageval.core.evidence.world import World, default_world

__all__ = ["main", "record_session"]

SESSION = "bench"
BASE = datetime(2026, 7, 8, 8, 0, tzinfo=timezone(timedelta(hours=8)))
POOL_MESSAGE = "HikariPool-1 - Connection is not available, request timed out after 30000ms"

Call = tuple[str, dict[str, Any]]

DEFAULT_WORLD_CALLS: tuple[Call, ...] = (
    ("query_metrics", {"service": "order-service"}),
    ("query_metrics", {"alert_name": "SlowResponse"}),
    ("query_logs", {"service": "order-service", "keywords": ["内存", "Full GC"]}),
    ("query_logs", {"service": "order-service", "keywords": ["HikariCP"]}),
    ("query_logs", {"service": "inventory-service", "keywords": ["HikariCP"]}),
    ("query_logs", {"service": "user-service", "keywords": ["慢请求"]}),
    ("lookup_knowledge", {"query": "HighMemoryUsage"}),
    ("lookup_knowledge", {"query": "数据库连接池耗尽怎么办"}),
)


def _generated_world(services: int) -> World:
    """One firing alert per service and 40 pool-exhaustion logs on ``svc-0000``."""
    alerts = [
        {
            "alert_name": "HighCPUUsage",
            "service": f"svc-{i:04d}",
            "state": "firing",
            "current": f"{80 + i % 20}%",
            "threshold": "80%",
            "duration": "5m",
            "description": f"CPU usage above threshold on svc-{i:04d}",
        }
        for i in range(services)
    ]
    logs = [
        {
            "timestamp": (BASE + timedelta(seconds=i)).isoformat(),
            "level": "ERROR",
            "service": "svc-0000",
            "message": POOL_MESSAGE if i % 2 == 0 else f"HikariCP pool stats: active=50/50, n={i}",
        }
        for i in range(40)
    ]
    return World.model_validate({"now": BASE.isoformat(), "alerts": alerts, "logs": logs})


def record_session(world: World, calls: Iterator[tuple[Call, int]]) -> Store:
    """An in-memory store holding one session with every call recorded."""
    store = Store()
    store.create_session(SESSION, "benchmark", BASE.isoformat())
    recorder = ToolInvocationRecorder(store, Toolbox(world), SESSION)
    for (tool, arguments), round_number in calls:
        recorder.call(tool, arguments, round=round_number)
    return store


def _sessions(count: int) -> list[tuple[str, Store]]:
    mixed_calls = (
        (DEFAULT_WORLD_CALLS[i % len(DEFAULT_WORLD_CALLS)], 1 + 2 * i // count)
        for i in range(count)
    )
    distinct_calls = ((("query_metrics", {"service": f"svc-{i:04d}"}), 1) for i in range(count))
    merged_calls = (
        (("query_logs", {"service": "svc-0000", "keywords": ["HikariCP"], "limit": 20}), 1)
        for _ in range(count)
    )
    generated = _generated_world(count)
    return [
        ("default world, mixed topics, 2 rounds", record_session(default_world(), mixed_calls)),
        ("one entry per call (distinct services)", record_session(generated, distinct_calls)),
        ("one topic, every call merged (20 logs)", record_session(generated, merged_calls)),
    ]


def _median_and_max(run: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Milliseconds of ``repeat`` runs after one warm-up."""
    run()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples), max(samples)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--invocations", type=int, default=1_000, help="calls per session")
    parser.add_argument("--repeat", type=int, default=15, help="timed runs per case (15)")
    args = parser.parse_args(argv)

    header = f"{'session':<40} {'rows':>5} {'entries':>7} {'summarize ms':>19} {'build ms':>19}"
    print(f"{'':<54} {'median / max':>19} {'median / max':>19}")
    print(header)
    print("-" * len(header))
    for name, store in _sessions(args.invocations):
        service = ToolTraceSummaryService(store)
        rows = store.list_invocations(SESSION)
        entries = len(summarize_invocations(rows))
        pure = _median_and_max(partial(summarize_invocations, rows), args.repeat)
        full = _median_and_max(partial(service.build, SESSION), args.repeat)
        print(
            f"{name:<40} {len(rows):>5} {entries:>7}"
            f" {pure[0]:>9.2f} / {pure[1]:>7.2f} {full[0]:>9.2f} / {full[1]:>7.2f}"
        )


if __name__ == "__main__":
    main()
