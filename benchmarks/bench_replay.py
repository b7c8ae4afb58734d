"""Replay cost of one scenario cassette: stock vcrpy body matching against our configuration.

Records one cassette of eight ~14 KB chat-completion requests (planner, executor ×6,
verifier; real ``openai`` client and instructor through ``LLM``, against the local fake
OpenAI server), then replays it offline many times and reports the median time per call for:

* ``sdk only``: the same calls answered in-process by ``ScriptedTransport`` (no vcrpy): the
  floor that the SDK, instructor and pydantic cost anyway;
* ``stock vcrpy``: ``vcr.VCR(match_on=(…default…, "body"), decode_compressed_response=True)``;
* ``diageval``: :class:`pytest_diageval.harness.cassettes.cassette_session.CassetteSession` in
  record mode ``none``, including ``verify()``.

Each replay enters the cassette (loads the YAML), makes the eight calls and leaves it, so the
per-call numbers include the per-scenario load. A cProfile top-10 (by own time) shows where
replay time goes for the two vcrpy configurations.

Where replay time went (cProfile), and what our configuration does about it, still on vcrpy:

* stock ``body`` matcher: for every recorded candidate that does *not* match, it builds the
  assertion message, a difflib diff of both bodies re-dumped with ``indent=2, sort_keys``;
  each request scans the cassette twice, so the cost grows with body size × interactions.
  Ours compares a canonical body string cached per body (``canonical_body``).
* ``VCR``'s request-filter wrapper deep-copies the request on every use (four per replayed
  request); we have no request filter (secrets are scrubbed at save), so we drop it.
* a client built without a transport creates a fresh SSL context (loads the CA bundle) per
  scenario; ``cassette_transport()`` shares one per process.
* what is left is mostly the YAML parse of the cassette, once per scenario.

Run: ``python benchmarks/bench_replay.py [--repetitions 40] [--profile]``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import vcr
from pydantic import BaseModel

from pytest_diageval.agents.llm import LLM, LLMConfig, Stage
from pytest_diageval.agents.prompts import load_prompt
from pytest_diageval.agents.scripted.model import ScriptedTransport
from pytest_diageval.core.evidence.store import stable_json
from pytest_diageval.core.evidence.tools import TOOL_DEFINITIONS, Toolbox
from pytest_diageval.core.evidence.world import default_world
from pytest_diageval.harness.cassettes.cassette_session import CassetteSession, cassette_transport

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.fake_openai_server import FakeOpenAIServer

__all__ = ["main"]

TARGET_BODY_BYTES = 14_000
QUERY = "order-service 内存使用率持续升高，请诊断原因并给出有证据支撑的结论。"
TOOL_PLAN: list[tuple[str, dict[str, Any]]] = [
    ("query_metrics", {"service": "order-service"}),
    ("query_logs", {"service": "order-service", "keywords": ["heap"]}),
    ("lookup_knowledge", {"query": "JVM 内存"}),
    ("query_logs", {"service": "order-service", "keywords": ["GC"]}),
    ("get_current_time", {}),
]
CANARY_KEY = "sk-" + "bench0123456789abcdefghijklmnop"  # built: no key-like literal


class BenchPlan(BaseModel):
    plan: str
    steps: list[str]


class BenchVerdict(BaseModel):
    verdict: str
    score: float


def script() -> list[dict[str, Any]]:
    """What the scripted model answers, in call order."""
    entries: list[dict[str, Any]] = [
        {"stage": "planner", "content": {"plan": "先看指标再查日志", "steps": ["指标", "日志"]}}
    ]
    entries += [
        {"stage": "executor", "tool_calls": [{"name": name, "arguments": arguments}]}
        for name, arguments in TOOL_PLAN
    ]
    entries.append({"stage": "executor", "raw": "结论：order-service JVM 堆内存 3.8GB/4GB。"})
    entries.append({"stage": "verifier", "content": {"verdict": "CONFIRMED", "score": 0.8}})
    return entries


def padded(messages: list[dict[str, Any]], tools: Any = None) -> list[dict[str, Any]]:
    """Grow the first user message with deterministic Chinese history to ~14 KB of body."""
    lines: list[str] = []
    while True:
        user = {"role": "user", "content": QUERY + "\n" + "\n".join(lines)}
        result = [messages[0], user, *messages[1:]]
        size = len(json.dumps({"messages": result, "tools": tools}, ensure_ascii=False).encode())
        if size >= TARGET_BODY_BYTES:
            return result
        number = len(lines)
        lines.append(
            f"历史记录 {number}: order-service JVM 堆内存 3.{number % 10}GB/4GB，"
            f"GC 次数 {90 + number}，P99 延迟 {1 + number % 4}.2s。"
        )


def calls() -> list[tuple[Stage, list[dict[str, Any]], type[BaseModel] | None]]:
    """The eight requests of one scenario: (stage, messages, structured model or None)."""
    toolbox = Toolbox(default_world())
    result: list[tuple[Stage, list[dict[str, Any]], type[BaseModel] | None]] = [
        ("planner", padded([{"role": "system", "content": load_prompt("planner")}]), BenchPlan)
    ]
    history: list[dict[str, Any]] = [{"role": "system", "content": load_prompt("executor")}]
    for number, (name, arguments) in enumerate([*TOOL_PLAN, ("", {})], start=1):
        result.append(("executor", padded(list(history), TOOL_DEFINITIONS), None))
        if not name:
            break
        function = {"name": name, "arguments": stable_json(arguments)}
        call = {"id": f"call_{number}", "type": "function", "function": function}
        history.append({"role": "assistant", "content": None, "tool_calls": [call]})
        output = stable_json(toolbox.call(name, arguments))
        history.append({"role": "tool", "tool_call_id": f"call_{number}", "content": output})
    verifier = [{"role": "system", "content": load_prompt("verifier")}]
    result.append(("verifier", padded(verifier), BenchVerdict))
    return result


def run_scenario(llm: LLM) -> None:
    for stage, messages, model in CALLS:
        if model is not None:
            llm.structured(model, messages, stage=stage, round=1)
        else:
            llm.chat(messages, stage=stage, round=1, tools=TOOL_DEFINITIONS)


CALLS = calls()


def record(path: Path) -> str:
    with FakeOpenAIServer(script()) as server:
        config = LLMConfig(base_url=server.base_url, model="bench", api_key=CANARY_KEY)
        session = CassetteSession(path, record_mode="once", secrets=[CANARY_KEY])
        with session as handle, LLM(config, transport=cassette_transport()) as llm:
            run_scenario(llm)
        handle.verify()
        sizes = [len(request.body) for request in server.received]
        print(f"recorded {len(sizes)} requests, body sizes (bytes): {sizes}")
        return server.base_url


@contextmanager
def stock_vcrpy(path: Path) -> Iterator[None]:
    stock = vcr.VCR(
        record_mode="none",
        match_on=("method", "scheme", "host", "port", "path", "query", "body"),
        decode_compressed_response=True,
    )
    with stock.use_cassette(str(path)):
        yield


@contextmanager
def diageval(path: Path) -> Iterator[None]:
    with CassetteSession(path, record_mode="none") as handle:
        yield
    handle.verify()


@contextmanager
def no_cassette(path: Path) -> Iterator[None]:
    yield


Setup = Callable[[Path], AbstractContextManager[None]]


def replay_once(setup: Setup, path: Path, base_url: str, *, shared_ssl: bool = True) -> float:
    """Seconds for one scenario: enter the cassette, make the eight calls, leave."""
    transport: httpx2.BaseTransport | None = None
    if setup is no_cassette:
        transport = ScriptedTransport(script())
    elif shared_ssl:
        transport = cassette_transport()
    config = LLMConfig(base_url=base_url, model="bench", api_key="replay-key", max_retries=0)
    start = time.perf_counter()
    with setup(path), LLM(config, transport=transport) as llm:
        run_scenario(llm)
    return time.perf_counter() - start


Variant = tuple[str, Setup, bool]
VARIANTS: list[Variant] = [
    ("sdk only (no vcrpy)", no_cassette, False),
    ("stock vcrpy", stock_vcrpy, False),
    ("stock vcrpy, shared SSL", stock_vcrpy, True),
    ("diageval, fresh transport", diageval, False),
    ("diageval", diageval, True),
]


def measure(path: Path, base_url: str, repetitions: int) -> dict[str, list[float]]:
    """Per-call seconds of every variant; variants take turns so machine noise hits all."""
    samples: dict[str, list[float]] = {name: [] for name, _, _ in VARIANTS}
    for repetition in range(repetitions + 1):
        for name, setup, shared_ssl in VARIANTS:
            seconds = replay_once(setup, path, base_url, shared_ssl=shared_ssl)
            if repetition:  # the first round is a warm-up (imports, caches)
                samples[name].append(seconds / len(CALLS))
    return samples


def report(samples: dict[str, list[float]]) -> None:
    floor = statistics.median(samples[VARIANTS[0][0]])
    print(f"{'per call (ms)':<27} {'median':>7} {'min':>7} {'over SDK':>9}")
    for name, values in samples.items():
        median = statistics.median(values)
        print(
            f"{name:<27} {median * 1000:7.2f} {min(values) * 1000:7.2f} "
            f"{(median - floor) * 1000:9.2f}"
        )


def profile(variant: Variant, path: Path, base_url: str, repetitions: int) -> None:
    name, setup, shared_ssl = variant
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(repetitions):
        replay_once(setup, path, base_url, shared_ssl=shared_ssl)
    profiler.disable()
    for title, order, restriction in (
        ("top 10 by own time", "tottime", ()),
        ("cassette machinery by cumulative time", "cumulative", ("vcr/|cassette|yaml/",)),
    ):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(*restriction, 14)
        print(f"\n--- cProfile {name}, {repetitions} scenarios: {title} ---")
        print(_table(out.getvalue()))


def _table(report: str) -> str:
    """The pstats rows only, with long paths shortened."""
    start = report.find("   ncalls")
    for prefix in (sys.prefix + "/lib/python3.11/site-packages/", sys.base_prefix + "/lib/"):
        report = report.replace(prefix, "")
    return report[start:].strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=40)
    parser.add_argument("--profile", action="store_true", help="print cProfile tables")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.yaml"
        base_url = record(path)
        print(f"cassette: {path.stat().st_size} bytes, {len(CALLS)} interactions")
        report(measure(path, base_url, args.repetitions))
        if args.profile:
            for variant in (VARIANTS[1], VARIANTS[4]):
                profile(variant, path, base_url, 10)


if __name__ == "__main__":
    main()
