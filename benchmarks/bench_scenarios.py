"""Time whole pytest runs of many generated scenario files: collection, replay, ``-n``, memory.

Generates ``--count`` scenario files (default 1,000), half scripted (``llm: script``) and half
cassette-backed, each a PASS diagnosis of one firing alert of the default world with eight
model calls: planner, executor with five tool-call turns and the final contract, verifier.
Six scenario shapes (three services × two phrasings of the query) keep the files from being
all alike. A cassette is recorded once per shape (``--diageval-record=once`` against the fake
OpenAI server of ``tests/support`` on a random port) and copied for every scenario of that
shape: replay matching ignores the host, and the scenario (session) id never reaches a request.
Both are checked: the recording id must not occur in the cassette, and the replay runs use
another base URL and other ids, yet every item must pass.

Then, per kind, it runs ``pytest <dir> -p no:cacheprovider -q`` as subprocesses and reports
the wall and CPU time of ``--collect-only -q``, of a single-process run and of a
``-n <workers>`` run (replay per scenario = (run − collect-only) / scenarios, so interpreter
start-up, imports and collection are left out), and the peak RSS of the largest process
(``/usr/bin/time -v``, or ``getrusage(RUSAGE_CHILDREN)`` in a wrapper process when it is
missing). A run that does not pass every item stops the benchmark.

``--profile N`` then runs ``python -m cProfile -o`` on N scenarios per kind, single process,
and prints the top 10 cumulative entries of the project, vcrpy, openai, instructor and
pydantic, and the top 10 by own time.

Run: ``python benchmarks/bench_scenarios.py [--count 1000] [--kinds scripted,cassette]
[--workers 2] [--keep DIR] [--profile 50]``. Timings are informative only.
"""

from __future__ import annotations

import argparse
import io
import os
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.fake_openai_server import FakeOpenAIServer

__all__ = ["Shape", "main", "scenario_document", "script"]

KINDS = ("scripted", "cassette")
CANARY_KEY = "sk-" + "benchscenarios0123456789abcdef"  # built: no key-like literal
RECORD_MODEL = "bench-model"
# Environment that would change what a run does (endpoint, key, model, extra options), and
# PYTHONDONTWRITEBYTECODE: without cached bytecode pytest re-parses and assert-rewrites every
# plugin module on each start (seconds here); a user's checkout has the cache.
_SCRUBBED_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "DIAGEVAL_MODEL",
    "PYTEST_ADDOPTS",
    "PYTHONDONTWRITEBYTECODE",
)
# Bytecode goes to a folder of its own rather than __pycache__ folders in the source tree.
_PYCACHE = Path(tempfile.gettempdir()) / "pytest-diageval-bench-pycache"
_PROFILED = re.compile(r"pytest_diageval|/vcr/|/openai/|/instructor/|/pydantic(_core)?/")


@dataclass(frozen=True)
class Shape:
    """One distinct scenario: its requests (and so its cassette) differ from the others'."""

    name: str
    service: str
    alert: str
    excerpt: str  # quoted from the alert's evidence ref, as the gatekeeper requires
    query: str
    keywords: tuple[str, str]


# service, alert, current value, duration, two log keywords (default world facts)
_SERVICES = (
    ("order-service", "HighMemoryUsage", "91%", "15m", ("内存", "Full GC")),
    ("payment-service", "HighCPUUsage", "92%", "25m", ("CPU", "Redis")),
    ("user-service", "SlowResponse", "P99 4.2s", "10m", ("慢请求", "profile")),
)
_PHRASINGS = ("只确认 {0} 是否存在 {1} 告警", "{0} 现在是否在触发 {1}？只确认这一件事")
SHAPES = tuple(
    Shape(
        name=f"{service.split('-')[0]}-{number}",
        service=service,
        alert=alert,
        excerpt=f"{alert} firing, service={service}, current={current}, duration={duration}",
        query=phrasing.format(service, alert),
        keywords=keywords,
    )
    for service, alert, current, duration, keywords in _SERVICES
    for number, phrasing in enumerate(_PHRASINGS, start=1)
)

EXPECT: dict[str, Any] = {
    "verdict": "PASS",
    "groundedness": {"min": 1.0},
    "rounds": 1,
    "answer": "direct",
    "gatekeeper": {"severity": "none", "failed_rules": []},
    "required_keywords": [],  # filled per shape: the alert name
    "claims": {"max": 1, "types": ["observation"]},
    "tool_calls": {"include": ["query_metrics", "query_logs", "lookup_knowledge"], "max": 6},
}


def script(shape: Shape) -> list[dict[str, Any]]:
    """The eight model answers of one scenario, in call order."""
    tool_turns: list[tuple[str, dict[str, Any]]] = [
        ("query_metrics", {"service": shape.service}),
        ("query_logs", {"service": shape.service, "keywords": [shape.keywords[0]]}),
        ("lookup_knowledge", {"query": shape.alert}),
        ("query_logs", {"service": shape.service, "keywords": [shape.keywords[1]]}),
        ("get_current_time", {}),
    ]
    text = f"{shape.service} 当前存在 {shape.alert} 告警。"
    binding = {"tool_name": "query_metrics", "source_invocation_id": 1, "raw_path": "$.alerts[0]"}
    claim: dict[str, Any] = {"claim_id": "claim-1", "claim_type": "observation", "claim_text": text}
    claim["evidence_bindings"] = [{**binding, "evidence_excerpt": shape.excerpt}]
    fact: dict[str, Any] = {"fact": text, "claim_id": "claim-1", "is_critical": True}
    fact["detail"] = "告警直接支持"
    fact["verification"] = "direct_evidence"
    fact["evidence_refs"] = [{"trace_ref": "trace-1", "source_invocation_ids": [1]}]
    verifier = {"verdict": "PASS", "groundedness_score": 1.0, "critical_fact_count": 1}
    steps = list(dict.fromkeys(name for name, _ in tool_turns))  # a Plan has at most 4 steps
    return [
        {"stage": "planner", "content": {"plan": f"确认 {shape.alert}", "steps": steps}},
        *(
            {"stage": "executor", "tool_calls": [{"name": name, "arguments": arguments}]}
            for name, arguments in tool_turns
        ),
        {"stage": "executor", "content": _contract(claim, text)},
        {"stage": "verifier", "content": {**verifier, "facts_checked": [fact], "rationale": "ok"}},
    ]


def _contract(claim: dict[str, Any], text: str) -> dict[str, Any]:
    """The executor's contract with the seven top-level fields 000 requires."""
    empty: dict[str, Any] = {"hypotheses": [], "recommended_actions": [], "missing_info": []}
    summary = {"answer_version": "2", "diagnosis_summary": text}
    return {**summary, "claims": [claim], **empty, "user_facing_answer": text}


def scenario_document(shape: Shape, scenario_id: str, *, scripted: bool) -> dict[str, Any]:
    """One scenario file's content; a cassette scenario uses the default cassette path."""
    document: dict[str, Any] = {
        "id": scenario_id,
        "title": f"{shape.alert} on {shape.service} ({shape.name})",
        "tags": ["bench", shape.name.split("-")[0]],
        "query": shape.query,
        "world": "default",
    }
    if scripted:
        document["llm"] = {"script": script(shape)}
    document["expect"] = {**EXPECT, "required_keywords": [shape.alert]}
    return document


def write_yaml(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(document, allow_unicode=True, sort_keys=False, width=100)
    path.write_text(text, "utf-8")


# --------------------------------------------------------------------------- subprocesses


@dataclass(frozen=True)
class Run:
    """One pytest subprocess: wall and CPU seconds, peak RSS of its largest process, summary.

    CPU seconds (user + system, xdist workers included) are the steadier number on a shared
    machine: other work stretches the wall time, not the CPU time.
    """

    seconds: float
    cpu_seconds: float
    peak_rss_mb: float
    summary: str
    returncode: int
    output: str

    def count(self, word: str) -> int:
        found = re.search(rf"(\d+) {word}", self.summary)
        return int(found.group(1)) if found else 0


# Used when /usr/bin/time is missing; prints what ``time -v`` would, for the lines we read.
_GETRUSAGE_WRAPPER = """
import resource, subprocess, sys
code = subprocess.call(sys.argv[2:])
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as out:
    out.write(f"User time (seconds): {usage.ru_utime}\\n")
    out.write(f"System time (seconds): {usage.ru_stime}\\n")
    out.write(f"Maximum resident set size (kbytes): {usage.ru_maxrss}\\n")
sys.exit(code)
"""


def clean_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in _SCRUBBED_ENV}
    return {**env, "PYTHONPYCACHEPREFIX": str(_PYCACHE), **extra}


def run_pytest(
    args: list[str],
    cwd: Path,
    env: dict[str, str] | None = None,
    *,
    python: tuple[str, ...] = (),
) -> Run:
    """``python [python…] -m pytest args`` in ``cwd``, measured from outside."""
    command = [sys.executable, *python, "-m", "pytest", *args, "-p", "no:cacheprovider"]
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        if Path("/usr/bin/time").exists():
            command = ["/usr/bin/time", "-v", "-o", rss.name, *command]
        else:
            command = [sys.executable, "-c", _GETRUSAGE_WRAPPER, rss.name, *command]
        start = time.perf_counter()
        done = subprocess.run(
            command, cwd=cwd, env=env or clean_env(), capture_output=True, text=True
        )
        seconds = time.perf_counter() - start
        usage = Path(rss.name).read_text()
    lines = done.stdout.strip().splitlines()
    return Run(
        seconds=seconds,
        cpu_seconds=_usage(usage, "User time (seconds)") + _usage(usage, "System time (seconds)"),
        peak_rss_mb=_usage(usage, "Maximum resident set size (kbytes)") / 1024,
        summary=lines[-1] if lines else "",
        returncode=done.returncode,
        output=done.stdout,
    )


def _usage(text: str, label: str) -> float:
    found = re.search(rf"{re.escape(label)}: ([\d.]+)", text)
    return float(found.group(1)) if found else float("nan")


def require(run: Run, what: str, *, passed: int | None = None) -> None:
    """Stop the benchmark when a run did not do what it was meant to (a timing of a failure)."""
    if run.returncode != 0 or (passed is not None and run.count("passed") != passed):
        tail = "\n".join(run.output.splitlines()[-30:])
        sys.exit(f"{what} failed (exit {run.returncode}): {run.summary}\n{tail}")


# --------------------------------------------------------------------------- generation


def record_cassettes(record_root: Path) -> dict[str, Path]:
    """One cassette per shape, recorded through the plugin against the fake server."""
    cassettes: dict[str, Path] = {}
    for shape in SHAPES:
        folder = record_root / shape.name / "scenarios"  # the plugin collects scenarios/
        recording_id = f"recording-id-{shape.name}"
        write_yaml(folder / "scenario.yaml", scenario_document(shape, recording_id, scripted=False))
        with FakeOpenAIServer(script(shape)) as server:
            options = ["--diageval-record=once", f"--diageval-base-url={server.base_url}"]
            options.append(f"--diageval-model={RECORD_MODEL}")
            run = run_pytest([".", "-q", *options], folder, clean_env(OPENAI_API_KEY=CANARY_KEY))
            calls = len(server.received)
        require(run, f"recording shape {shape.name}")
        cassette = folder / "cassettes" / f"{recording_id}.yaml"
        text = cassette.read_text("utf-8")
        if recording_id in text or CANARY_KEY in text or calls != 8:
            sys.exit(f"{cassette}: the id or the key reached it, or {calls} calls instead of 8")
        cassettes[shape.name] = cassette
    return cassettes


def generate(
    root: Path, counts: dict[str, int], cassettes: dict[str, Path]
) -> dict[str, tuple[Path, int]]:
    """Write the scenario files; returns kind → (folder, expected passing items)."""
    folders: dict[str, tuple[Path, int]] = {}
    for kind, count in counts.items():
        folder = root / kind / "scenarios"  # the plugin collects scenarios/ folders only
        (folder / ("cassettes" if kind == "cassette" else "")).mkdir(parents=True, exist_ok=True)
        for number in range(count):
            shape = SHAPES[number % len(SHAPES)]
            scenario_id = f"{kind}-{number:04d}-{shape.name}"
            document = scenario_document(shape, scenario_id, scripted=kind == "scripted")
            write_yaml(folder / f"{scenario_id}.yaml", document)
            if kind == "cassette":
                shutil.copyfile(cassettes[shape.name], folder / "cassettes" / f"{scenario_id}.yaml")
        folders[kind] = (folder, count * len(EXPECT))
    return folders


def split(count: int, kinds: list[str]) -> dict[str, int]:
    """``count`` scenarios shared out evenly over the kinds (the first kinds get the rest)."""
    share, rest = divmod(count, len(kinds))
    return {kind: share + (index < rest) for index, kind in enumerate(kinds)}


# --------------------------------------------------------------------------- measuring


@dataclass(frozen=True)
class Row:
    kind: str
    scenarios: int
    collect: Run
    single: Run
    parallel: Run

    def per_scenario(self, run: Run) -> str:
        """Replay ms per scenario, wall (CPU): the run minus the collect-only run."""
        wall = (run.seconds - self.collect.seconds) / self.scenarios * 1000
        cpu = (run.cpu_seconds - self.collect.cpu_seconds) / self.scenarios * 1000
        return f"{wall:.0f} ({cpu:.0f})"


def measure(kind: str, folder: Path, scenarios: int, items: int, workers: int) -> Row:
    run_pytest([str(folder), "--collect-only", "-q"], folder.parent)  # warm-up: bytecode, disk
    collect = run_pytest([str(folder), "--collect-only", "-q"], folder.parent)
    require(collect, f"collecting {kind}")
    if f"{items} tests collected" not in collect.summary:
        sys.exit(f"collecting {kind}: expected {items} items, got: {collect.summary}")
    single = run_pytest([str(folder), "-q"], folder.parent)
    require(single, f"{kind}, single process", passed=items)
    parallel = run_pytest([str(folder), "-q", "-n", str(workers)], folder.parent)
    require(parallel, f"{kind}, -n {workers}", passed=items)
    return Row(kind, scenarios, collect, single, parallel)


def _seconds(run: Run) -> str:
    return f"{run.seconds:.1f} ({run.cpu_seconds:.1f})"


def print_table(rows: list[Row], workers: int) -> None:
    parallel = f"-n {workers}"
    print(
        f"{'kind':<9} {'scen.':>5} {'items':>5} {'collect s':>13} {'1 proc s':>13} "
        f"{'ms/scen.':>10} {parallel + ' s':>13} {'ms/scen.':>10} {'peak MB':>9}"
    )
    for row in rows:
        peak = f"{row.single.peak_rss_mb:.0f}/{row.parallel.peak_rss_mb:.0f}"
        print(
            f"{row.kind:<9} {row.scenarios:>5} {row.single.count('passed'):>5} "
            f"{_seconds(row.collect):>13} {_seconds(row.single):>13} "
            f"{row.per_scenario(row.single):>10} {_seconds(row.parallel):>13} "
            f"{row.per_scenario(row.parallel):>10} {peak:>9}"
        )
    print(
        "times: wall (CPU = user + system, all processes); ms/scen. = (run − collect-only) "
        f"/ scenarios; peak MB = max RSS of the largest process, 1 proc / {parallel} "
        "(collect-only: "
        + ", ".join(f"{row.kind} {row.collect.peak_rss_mb:.0f}" for row in rows)
        + ")"
    )


def profile(kind: str, folder: Path, items: int, scenarios: int) -> None:
    output = folder.parent / f"{kind}.prof"
    run = run_pytest(
        [str(folder), "-q"], folder.parent, python=("-m", "cProfile", "-o", str(output))
    )
    require(run, f"profiling {kind}", passed=items)
    print(f"\n--- cProfile, {scenarios} {kind} scenarios, single process: {run.seconds:.2f} s wall")
    for title, order, restrictions in (
        (
            "top 10 cumulative (project, vcrpy, openai, instructor, pydantic)",
            "cumulative",
            (_PROFILED.pattern, 10),
        ),
        ("top 10 by own time (everything)", "tottime", (10,)),
    ):
        out = io.StringIO()
        pstats.Stats(str(output), stream=out).sort_stats(order).print_stats(*restrictions)
        print(f"{title}:\n{_pstats_rows(out.getvalue())}")


def _pstats_rows(report: str) -> str:
    for prefix in (sys.prefix + "/lib/", sys.base_prefix + "/lib/", str(Path.cwd()) + "/"):
        report = report.replace(prefix, "")
    report = re.sub(r"python3\.\d+/(site-packages/)?", "", report)
    return report[report.find("   ncalls") :].strip()


# --------------------------------------------------------------------------- main


def _load() -> str:
    """The machine is shared: say how busy it was."""
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="scenarios in all (default 1000)")
    parser.add_argument("--kinds", default="scripted,cassette", help="scripted,cassette or one")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (-n)")
    parser.add_argument("--keep", type=Path, default=None, help="generate into DIR and keep it")
    parser.add_argument(
        "--profile", type=int, default=0, metavar="N", help="also cProfile N scenarios per kind"
    )
    args = parser.parse_args()
    kinds = [kind.strip() for kind in args.kinds.split(",") if kind.strip()]
    if not kinds or set(kinds) - set(KINDS):
        parser.error(f"--kinds takes a comma-separated list of {', '.join(KINDS)}")
    with tempfile.TemporaryDirectory(prefix="bench-scenarios-") as tmp:
        root = args.keep or Path(tmp)
        if args.keep and any(root.iterdir() if root.exists() else ()):
            parser.error(f"--keep {root}: the folder must be new or empty")
        cassettes: dict[str, Path] = {}
        if "cassette" in kinds:
            cassettes = record_cassettes(Path(tmp) / "recording")
            print(f"recorded {len(cassettes)} cassettes (one per shape), 8 interactions each")
        folders = generate(root / "run", split(args.count, kinds), cassettes)
        print(f"load average before: {_load()}")
        rows = [
            measure(kind, folder, split(args.count, kinds)[kind], items, args.workers)
            for kind, (folder, items) in folders.items()
        ]
        print_table(rows, args.workers)
        print(f"load average after: {_load()}; {os.cpu_count()} CPUs")
        if args.profile:
            small = generate(root / "profile", dict.fromkeys(kinds, args.profile), cassettes)
            for kind, (folder, items) in small.items():
                profile(kind, folder, items, args.profile)


if __name__ == "__main__":
    main()
