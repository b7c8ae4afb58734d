"""What the local server's prompt cache saves: recorded requests sent again, with and without it.

Starts the local model server (the ``local`` extra) once per setting (``serve-local
--prompt-cache-mb``: the default, and 0 for none) and sends it, in recorded order, every
request of the given cassettes (default: the three samples of
``live-new-shipping-error-rate``), each with ``max_tokens`` 1: what is timed is reading the
prompt, the part a cache can save; the answers are not compared. A recording sends the same
requests in the same order, so the saving per request is the saving a recording sees before
it generates.

    python benchmarks/bench_prompt_cache.py [--cache-mb 2048] [CASSETTE ...]

Prints, per setting, the seconds and the prompt tokens the server reported per stage, and the
total. Needs about 7 GB and a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import yaml

from pytest_diageval.local.server import DEFAULT_PROMPT_CACHE_MB, LocalServer

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CASSETTES = [
    ROOT / "cassettes" / name
    for name in (
        "live-new-shipping-error-rate.yaml",
        "live-new-shipping-error-rate.sample-2.yaml",
        "live-new-shipping-error-rate.sample-3.yaml",
    )
]


def recorded_requests(paths: list[Path]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(stage, body) of every recorded request, in order, with ``max_tokens`` 1."""
    for path in paths:
        data = yaml.safe_load(path.read_text("utf-8"))
        for interaction in data.get("interactions", []):
            request = interaction["request"]
            stage = (request.get("headers", {}).get("x-diageval-stage") or ["?"])[0]
            body = json.loads(request["body"])
            body["max_tokens"] = 1
            yield stage, body


def run(cache_mb: int, requests: list[tuple[str, dict[str, Any]]]) -> dict[str, list[float]]:
    """Seconds and prompt tokens per stage, each request sent once to a fresh server."""
    per_stage: dict[str, list[float]] = {}
    server = LocalServer(prompt_cache_mb=cache_mb, generation_timeout=600)
    with server, httpx2.Client(base_url=server.base_url, timeout=900) as client:
        for stage, body in requests:
            started = time.perf_counter()
            response = client.post("/chat/completions", json=body)
            seconds = time.perf_counter() - started
            response.raise_for_status()
            prompt = response.json()["usage"]["prompt_tokens"]
            totals = per_stage.setdefault(stage, [0, 0.0, 0])
            totals[0] += 1
            totals[1] += seconds
            totals[2] += prompt
    return per_stage


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cassettes", nargs="*", type=Path, default=DEFAULT_CASSETTES)
    parser.add_argument("--cache-mb", type=int, default=DEFAULT_PROMPT_CACHE_MB)
    args = parser.parse_args(argv)
    requests = list(recorded_requests(args.cassettes))
    print(f"{len(requests)} requests from {len(args.cassettes)} cassette(s)")
    print("| prompt cache | stage | requests | prompt tokens | seconds |")
    print("|---|---|---|---|---|")
    totals = {}
    for cache_mb in (0, args.cache_mb):
        per_stage = run(cache_mb, requests)
        setting = "none" if cache_mb == 0 else f"{cache_mb} MB"
        for stage, (count, seconds, tokens) in sorted(per_stage.items()):
            print(f"| {setting} | {stage} | {count:.0f} | {tokens:.0f} | {seconds:.1f} |")
        totals[setting] = sum(seconds for _, seconds, _ in per_stage.values())
        print(f"| {setting} | all | {len(requests)} | | {totals[setting]:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
