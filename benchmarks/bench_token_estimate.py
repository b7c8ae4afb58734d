"""How close the scripted model's token estimate comes to a real tokenizer's count.

Every request recorded from the real local model (``cassettes/live-*.yaml``, Gemma 3 270M
behind llama-cpp-python) carries the server's ``usage``. This script estimates each recorded
request and answer as the scripted model does and prints the ratio recorded / estimated per
stage (1.0 is exact; above 1 the estimate undercounts), beside the previous estimate (one
token per four characters of the request's ``messages`` and ``tools`` JSON).

    python benchmarks/bench_token_estimate.py [cassette.yaml ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from pytest_diageval.agents.scripted.token_estimate import (
    ESTIMATE_NAME,
    PROMPT_KEYS,
    estimated_tokens,
    prompt_tokens,
)
from pytest_diageval.core.evidence.store import stable_json

ROOT = Path(__file__).resolve().parents[1]


def chars_per_four(value: Any) -> int:
    """The previous estimate: one token per four characters of compact JSON, rounded up."""
    return -(-len(stable_json(value)) // 4)


def previous_prompt(body: Mapping[str, Any]) -> int:
    return chars_per_four({key: body.get(key) for key in PROMPT_KEYS})


def _recorded(
    paths: Sequence[Path],
) -> list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]]:
    rows = []
    for path in paths:
        data = yaml.load(
            path.read_text("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        )
        for interaction in data["interactions"]:
            request = interaction["request"]
            answer = json.loads(interaction["response"]["body"]["string"])
            usage = answer.get("usage") or {}
            if not usage:
                continue
            stage = request["headers"]["x-diageval-stage"][0]
            message = answer["choices"][0]["message"]
            rows.append((stage, json.loads(request["body"]), message, usage))
    return rows


def _ratios(
    rows: Sequence[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]],
    estimate: Callable[[dict[str, Any], dict[str, Any]], int],
    key: str,
) -> dict[str, list[float]]:
    by_stage: dict[str, list[float]] = {}
    for stage, body, message, usage in rows:
        counted = estimate(body, message)
        if counted and usage.get(key):
            by_stage.setdefault(stage, []).append(usage[key] / counted)
    by_stage["all"] = [r for stage in list(by_stage) for r in by_stage[stage]]
    return by_stage


def _line(label: str, ratios: Sequence[float]) -> str:
    mean = sum(ratios) / len(ratios)
    return f"  {label:<9} {len(ratios):>4}  {min(ratios):5.2f}  {mean:5.2f}  {max(ratios):5.2f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cassettes", nargs="*", type=Path)
    args = parser.parse_args(argv)
    paths = args.cassettes or sorted((ROOT / "cassettes").glob("live-*.yaml"))
    rows = _recorded(paths)
    print(f"{len(rows)} recorded requests in {len(paths)} cassettes; ratio = recorded / estimated")
    estimates = {
        "prompt tokens": (
            ("chars/4", lambda body, _m: previous_prompt(body)),
            (ESTIMATE_NAME, lambda body, _m: prompt_tokens("", body)),
        ),
        "completion tokens": (
            ("chars/4", lambda _b, message: chars_per_four(message)),
            (ESTIMATE_NAME, lambda _b, message: estimated_tokens(message)),
        ),
    }
    for what, candidates in estimates.items():
        key = "prompt_tokens" if what == "prompt tokens" else "completion_tokens"
        for name, estimate in candidates:
            print(f"{what}, {name}:")
            print("  stage     requests  min   mean   max")
            for stage, ratios in _ratios(rows, estimate, key).items():
                print(_line(stage, ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main())
