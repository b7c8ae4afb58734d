"""A large deterministic world, shared by the scale test and the tools benchmark."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from pytest_diageval.core.evidence.world import World, default_world

__all__ = ["BASE", "POOL_MESSAGE", "build_world"]

BASE = datetime(2026, 7, 8, 8, 0, tzinfo=timezone(timedelta(hours=8)))
POOL_MESSAGE = "HikariPool-1 - Connection is not available, request timed out after 30000ms"
ALERT_NAMES = ("HighCPUUsage", "HighMemoryUsage", "SlowResponse", "DiskFull")


def build_world(n_logs: int = 10_000, n_alerts: int = 1_000) -> World:
    """A deterministic world: 40 services, one pool-exhaustion log in every hundred."""
    logs = [
        {
            "timestamp": (BASE + timedelta(seconds=i)).isoformat(),
            "level": ("INFO", "WARN", "ERROR")[i % 3],
            "service": f"svc-{i % 40:02d}",
            "message": POOL_MESSAGE if i % 100 == 0 else f"request {i} handled in {i % 997}ms",
        }
        for i in range(n_logs)
    ]
    alerts = [
        {
            "alert_name": ALERT_NAMES[i % 4],
            "service": f"svc-{i % 40:02d}",
            "state": "firing",
            "current": f"{i % 100}%",
            "threshold": "80%",
            "duration": "5m",
            "description": f"alert {i}",
        }
        for i in range(n_alerts)
    ]
    knowledge = [doc.model_dump() for doc in default_world().knowledge]
    return World.model_validate(
        {"now": BASE.isoformat(), "logs": logs, "alerts": alerts, "knowledge": knowledge}
    )
