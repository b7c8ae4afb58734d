"""pytest-diageval against its floors, in one run: overhead per scenario, memory, ``-n``.

Prints, each measured in the same run so the ratios hold on a shared machine:

* **pytest floor**: ``pytest -p no:diageval`` over N generated Python files with as many
  trivial items as the scenarios have (8 per file);
* **SDK floor**: the bare ``openai`` client sending exactly the scenarios' requests (the
  cassettes' bodies, stage headers and recorded responses, on an in-memory
  ``httpx2.MockTransport``), one client per scenario, N times: the whole process with its
  ``import openai``, minus a bare interpreter start (the pytest floor counts that already);
  the requests alone are printed beside it. The plugin sends its bodies through the client's
  ``post`` without ``create``'s params walk (the identity on them, and most of the SDK's
  time), so the same floor through ``post`` is measured too, and the overhead against it;
* **plugin**: ``pytest`` over N scripted and N cassette scenarios (the scenarios of
  ``bench_scenarios.py``: 8 model calls, 8 ``expect`` items each);
* **overhead per scenario** = (plugin − pytest floor − SDK floor) / N, wall and CPU, each
  round against its own floors, over ``--repeat`` interleaved rounds (median and spread: the
  machine's speed drifts by 2x over minutes);
* **peak RSS** of single-process runs over ``--rss-counts`` scripted scenarios (1,000 and
  5,000 by default) and the pytest floor at the largest of them;
* **``-n`` ratio**: wall (and CPU) of ``-n <workers>`` over one process at
  ``--parallel-count`` scripted scenarios, and the same for the shipped ``scenarios/`` suite.

``--count 50 --rss-counts 200 --parallel-count 200`` is a small version (about a minute).
Timings are informative only; no test asserts one. Every plugin run must pass every item.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scenarios import (
    EXPECT,
    Run,
    clean_env,
    generate,
    record_cassettes,
    require,
    run_pytest,
)

__all__ = ["main", "sdk_floor"]

ROOT = Path(__file__).resolve().parents[1]
ITEMS = len(EXPECT)


# --------------------------------------------------------------------------- floors


def write_trivial_suite(folder: Path, files: int) -> int:
    """``files`` test modules of ``ITEMS`` trivial tests each, named like the scenario items."""
    folder.mkdir(parents=True, exist_ok=True)
    body = "".join(f"def test_{key}():\n    pass\n\n\n" for key in EXPECT)
    for number in range(files):
        (folder / f"test_scenario_{number:05d}.py").write_text(body, "utf-8")
    return files * ITEMS


def sdk_floor(cassette_dir: Path, scenarios: int, door: str = "create") -> dict[str, float]:
    """Send the recorded requests of ``scenarios`` scenarios through a bare openai client,
    by ``chat.completions.create`` or (``door="post"``) by the client's ``post``.

    Runs inside the ``--sdk-floor`` subprocess; returns wall and CPU seconds of the loop.
    """
    import httpx2
    import openai
    from openai.types.chat import ChatCompletion as cast_to

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    cassettes = []
    for path in sorted(cassette_dir.glob("*.yaml"))[: min(scenarios, 6)]:
        data = yaml.load(path.read_text("utf-8"), Loader=loader)
        cassettes.append([_exchange(entry) for entry in data["interactions"]])
    start, cpu = time.perf_counter(), time.process_time()
    for number in range(scenarios):
        exchanges = cassettes[number % len(cassettes)]
        answers = iter(exchanges)

        def answer(request: Any, answers: Any = answers) -> Any:
            _, status, body = next(answers)
            headers = {"content-type": "application/json"}
            return httpx2.Response(status, content=body, headers=headers)

        http = openai.DefaultHttpxClient(transport=httpx2.MockTransport(answer))
        client = openai.OpenAI(
            api_key="floor", base_url="http://floor.invalid/v1", max_retries=0, http_client=http
        )
        with client:
            for (params, headers), _, _ in exchanges:
                if door == "post":
                    options: Any = {"headers": headers, "security": {"bearer_auth": True}}
                    client.post("/chat/completions", body=params, cast_to=cast_to, options=options)
                else:
                    client.chat.completions.create(**params, extra_headers=headers)
    return {"seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu}


def _exchange(entry: dict[str, Any]) -> tuple[tuple[dict[str, Any], dict[str, str]], int, bytes]:
    request, response = entry["request"], entry["response"]
    headers = {name: values[0] for name, values in request["headers"].items() if "x-diag" in name}
    body = response["body"]["string"]
    content = body.encode("utf-8") if isinstance(body, str) else body
    return (json.loads(request["body"]), headers), response["status"]["code"], content


def run_sdk_floor(cassette_dir: Path, scenarios: int, door: str = "create") -> tuple[Run, float]:
    """The SDK floor as a whole process (``import openai`` included, as a user of the bare SDK
    pays it) minus a bare interpreter start (the pytest floor has that already); and the
    loop alone in ms per scenario."""
    command = [sys.executable, __file__, "--sdk-floor", str(cassette_dir), str(scenarios), door]
    whole, output = _timed(command)
    bare, _ = _timed([sys.executable, "-c", "pass"])
    loop = json.loads(output.strip().splitlines()[-1])
    run = Run(
        whole.seconds - bare.seconds,
        whole.cpu_seconds - bare.cpu_seconds,
        whole.peak_rss_mb,
        "",
        0,
        output,
    )
    return run, loop["seconds"] / scenarios * 1000


def _timed(command: list[str]) -> tuple[Run, str]:
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        timed = ["/usr/bin/time", "-v", "-o", rss.name, *command]
        start = time.perf_counter()
        done = subprocess.run(timed, env=clean_env(), capture_output=True, text=True, check=True)
        seconds = time.perf_counter() - start
        usage = Path(rss.name).read_text()
    cpu = _field(usage, "User time (seconds)") + _field(usage, "System time (seconds)")
    peak = _field(usage, "Maximum resident set size (kbytes)") / 1024
    return Run(seconds, cpu, peak, "", done.returncode, done.stdout), done.stdout


def _field(text: str, label: str) -> float:
    for line in text.splitlines():
        if line.strip().startswith(label):
            return float(line.rsplit(":", 1)[1])
    return float("nan")


# --------------------------------------------------------------------------- table


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def timed(run: Run) -> str:
    return f"{run.seconds:7.2f} ({run.cpu_seconds:6.2f})"


def line(label: str, scenarios: int, run: Run, extra: str = "") -> None:
    print(f"{label:<34} {scenarios:>6} {timed(run):>17} {run.peak_rss_mb:>8.0f}  {extra}")


def header(title: str) -> None:
    print(f"\n{title}   [load average {load()}]")
    print(f"{'run':<34} {'scen.':>6} {'wall s (CPU s)':>17} {'peak MB':>8}")


def overhead_ms(plugin: Run, floor: Run, sdk: Run, scenarios: int) -> tuple[float, float]:
    """(wall, CPU) ms per scenario above pytest's floor and the SDK's."""
    wall = (plugin.seconds - floor.seconds - sdk.seconds) / scenarios * 1000
    cpu = (plugin.cpu_seconds - floor.cpu_seconds - sdk.cpu_seconds) / scenarios * 1000
    return wall, cpu


def median_run(runs: list[Run]) -> Run:
    """The run of median CPU time (a real run, so its wall time and memory go with it)."""
    return sorted(runs, key=lambda run: run.cpu_seconds)[len(runs) // 2]


# --------------------------------------------------------------------------- sections


def floors_and_plugin(root: Path, count: int, cassettes: dict[str, Path], repeat: int) -> None:
    """Floors and plugin runs in ``repeat`` interleaved rounds: each round's overhead is taken
    against the floors of the same round (the machine's speed drifts by 2x over minutes),
    and the median round is printed with the spread."""
    folders = generate(root / "plugin", {"scripted": count, "cassette": count}, cassettes)
    trivial = root / "trivial"
    items = write_trivial_suite(trivial, count)
    header(f"{count} scenarios × {ITEMS} items against the floors, median of {repeat} rounds")
    run_pytest([str(trivial), "-q", "-p", "no:diageval"], root)  # warm-up: bytecode
    for folder, _ in folders.values():
        run_pytest([str(folder), "-q", "--collect-only"], root)  # warm-up: bytecode, disk
    rounds = [_round(root, trivial, items, folders) for _ in range(repeat)]
    floor = median_run([r["floor"] for r in rounds])
    line("pytest floor (trivial items)", count, floor)
    sdk = median_run([r["sdk"] for r in rounds])
    loop_ms = sorted(r["loop_ms"] for r in rounds)[repeat // 2]
    line("SDK floor (same requests)", count, sdk, f"requests alone {loop_ms:.1f} ms/scen.")
    post = median_run([r["post"] for r in rounds])
    post_ms = sorted(r["post_ms"] for r in rounds)[repeat // 2]
    line(
        "SDK floor by post (no params walk)", count, post, f"requests alone {post_ms:.1f} ms/scen."
    )
    for kind in folders:
        each = sorted(overhead_ms(r[kind], r["floor"], r["sdk"], count) for r in rounds)
        cpu = sorted(c for _, c in each)
        wall = sorted(w for w, _ in each)[repeat // 2]
        spread = f"; CPU {cpu[0]:.1f}–{cpu[-1]:.1f} over rounds" if repeat > 1 else ""
        by_post = sorted(overhead_ms(r[kind], r["floor"], r["post"], count)[1] for r in rounds)
        extra = (
            f"overhead {wall:5.1f} ms/scen. wall ({cpu[repeat // 2]:5.1f} CPU{spread});"
            f" over the post floor {by_post[repeat // 2]:.1f} CPU"
        )
        line(f"pytest-diageval, {kind}", count, median_run([r[kind] for r in rounds]), extra)


def _round(
    root: Path, trivial: Path, items: int, folders: dict[str, tuple[Path, int]]
) -> dict[str, Any]:
    floor = run_pytest([str(trivial), "-q", "-p", "no:diageval"], root)
    require(floor, "pytest floor", passed=items)
    cassettes = folders["cassette"][0] / "cassettes"
    sdk, loop_ms = run_sdk_floor(cassettes, items // ITEMS)
    post, post_ms = run_sdk_floor(cassettes, items // ITEMS, door="post")
    measured: dict[str, Any] = {
        "floor": floor,
        "sdk": sdk,
        "loop_ms": loop_ms,
        "post": post,
        "post_ms": post_ms,
    }
    for kind, (folder, passing) in folders.items():
        measured[kind] = run_pytest([str(folder), "-q"], root)
        require(measured[kind], f"plugin, {kind}", passed=passing)
    return measured


def memory(root: Path, counts: list[int]) -> dict[int, Run]:
    header("peak RSS, one process, scripted scenarios")
    runs: dict[int, Run] = {}
    for count in counts:
        folder, passing = generate(root / f"rss-{count}", {"scripted": count}, {})["scripted"]
        run = runs[count] = run_pytest([str(folder), "-q"], root)
        require(run, f"{count} scenarios", passed=passing)
        line("pytest-diageval, scripted", count, run)
    largest = max(counts)
    items = write_trivial_suite(root / "rss-trivial", largest)
    floor = run_pytest([str(root / "rss-trivial"), "-q", "-p", "no:diageval"], root)
    require(floor, "pytest floor", passed=items)
    line("pytest floor (trivial items)", largest, floor)
    return runs


def parallel(root: Path, count: int, workers: int, single: Run | None) -> None:
    header(f"-n {workers} against one process")
    folder, passing = generate(root / f"parallel-{count}", {"scripted": count}, {})["scripted"]
    _ratio(f"{count} scripted scenarios", count, [str(folder)], workers, passing, root, single)
    # xdist's own cost per item (reports serialised to the controller, each worker collecting
    # everything), measured on pytest's trivial items: the floor of any -n ratio.
    trivial = root / f"parallel-trivial-{count}"
    items = write_trivial_suite(trivial, count)
    floor_args = [str(trivial), "-p", "no:diageval"]
    _ratio("pytest floor (trivial items)", count, floor_args, workers, items, root, None)
    shipped = ROOT / "scenarios"
    _ratio("shipped scenarios/ suite", 0, [str(shipped)], workers, None, ROOT, None)


def _ratio(
    label: str,
    count: int,
    args: list[str],
    workers: int,
    passing: int | None,
    cwd: Path,
    single: Run | None,
) -> None:
    one = single or run_pytest([*args, "-q"], cwd)
    many = run_pytest([*args, "-q", "-n", str(workers)], cwd)
    for name, run in ((label + ", 1 process", one), (f"{label}, -n {workers}", many)):
        require(run, name, passed=passing)
        line(name, count, run, run.summary if not count else "")
    wall, cpu = many.seconds / one.seconds, many.cpu_seconds / one.cpu_seconds
    print(f"{'':<34} ratio -n {workers} / 1 process: wall {wall:.2f}, CPU {cpu:.2f}")


# --------------------------------------------------------------------------- main


def _counts(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip() and int(part) > 0]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", type=int, default=200, help="N per kind (200; 0 skips)")
    parser.add_argument(
        "--rss-counts", default="1000,5000", help='peak RSS at these sizes ("" skips)'
    )
    parser.add_argument("--parallel-count", type=int, default=2000, help="-n ratio at N (2000)")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (2)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the floors section (3)")
    parser.add_argument(
        "--sdk-floor", nargs=3, metavar=("CASSETTES", "N", "DOOR"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.sdk_floor:
        folder, scenarios, door = args.sdk_floor
        print(json.dumps(sdk_floor(Path(folder), int(scenarios), door)))
        return
    rss_counts = _counts(args.rss_counts)
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        root = Path(tmp)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load()}")
        if args.count:  # --count 0 skips the floors (to rerun only the other sections)
            floors_and_plugin(root, args.count, record_cassettes(root / "recording"), args.repeat)
        runs = memory(root, rss_counts) if rss_counts else {}
        if args.parallel_count:
            parallel(root, args.parallel_count, args.workers, runs.get(args.parallel_count))
        print(f"\nload average after: {load()}")


if __name__ == "__main__":
    main()
