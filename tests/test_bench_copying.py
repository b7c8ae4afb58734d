"""``benchmarks/bench_copying.py`` counts the rounds that copy the prompts' worked examples,
word for word or by the facts of an example's claim that the round's evidence never showed."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

REPOSITORY = Path(__file__).resolve().parents[1]
# The planner and executor prompts as they were before they stopped showing worked examples
# (commit f3dc7ad): what the older recordings carried and the bench reads examples from.
PROMPTS = Path(__file__).resolve().parent / "data" / "former_prompts"
PACKAGE_PROMPTS = REPOSITORY / "src" / "pytest_diageval" / "agents" / "prompts"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.syspath_prepend(str(REPOSITORY / "benchmarks"))
    yield importlib.import_module("bench_copying")
    sys.modules.pop("bench_copying", None)


def _interaction(stage: str, messages: list[dict[str, Any]], reply: dict[str, Any]) -> Any:
    body = {"choices": [{"message": reply}]}
    return {
        "request": {
            "headers": {"x-diageval-stage": [stage]},
            "body": json.dumps({"messages": messages}, ensure_ascii=False),
        },
        "response": {"body": {"string": json.dumps(body, ensure_ascii=False)}},
    }


def _submit(claim_text: str) -> dict[str, Any]:
    contract = {"claims": [{"claim_text": claim_text}]}
    arguments = json.dumps(contract, ensure_ascii=False)
    return {
        "tool_calls": [{"function": {"name": "submit_evidence_contract", "arguments": arguments}}]
    }


def _cassette(tmp_path: Path, claim_text: str, evidence: str, prompts: Path = PROMPTS) -> Path:
    planner = {"role": "system", "content": (prompts / "planner.md").read_text("utf-8")}
    executor = {"role": "system", "content": (prompts / "executor.md").read_text("utf-8")}
    shown = {"role": "tool", "tool_call_id": "call-1", "content": evidence}
    interactions = [
        _interaction("planner", [planner], {"content": json.dumps({"plan": "自己的计划"})}),
        _interaction("executor", [executor, shown], _submit(claim_text)),
    ]
    path = tmp_path / "live-test.yaml"
    path.write_text(yaml.safe_dump({"interactions": interactions}, allow_unicode=True), "utf-8")
    return path


EVIDENCE = (
    '{"alerts": [{"alert_name": "HighCPUUsage", "service": "payment-service", "current": "92%"}]}'
)


def test_a_claim_keeping_an_examples_number_is_a_copy_equality_misses(
    bench: ModuleType, tmp_path: Path
) -> None:
    claim = "payment-service 当前存在 HighCPUUsage 告警，队列积压 1840 条"
    tally = bench.measure([_cassette(tmp_path, claim, EVIDENCE)], None)["live-test.yaml"]

    assert (tally.rounds, tally.claims, tally.claim_facts, tally.any) == (1, 0, 1, 0)


def test_a_claim_stating_only_what_its_evidence_showed_is_no_copy(
    bench: ModuleType, tmp_path: Path
) -> None:
    claim = "payment-service 当前存在 HighCPUUsage 告警，CPU 92%"
    tally = bench.measure([_cassette(tmp_path, claim, EVIDENCE)], None)["live-test.yaml"]

    assert (tally.rounds, tally.claims, tally.claim_facts) == (1, 0, 0)


def test_an_examples_number_the_evidence_showed_is_the_evidences(
    bench: ModuleType, tmp_path: Path
) -> None:
    claim = "payment-service 当前存在 HighCPUUsage 告警，队列积压 1840 条"
    evidence = EVIDENCE.replace('"92%"', '"92%", "queue": 1840')
    tally = bench.measure([_cassette(tmp_path, claim, evidence)], None)["live-test.yaml"]

    assert tally.claim_facts == 0


def test_an_examples_claim_word_for_word_is_both_copies(bench: ModuleType, tmp_path: Path) -> None:
    examples = bench.examples_of(
        *(PROMPTS.joinpath(f"{a}.md").read_text("utf-8") for a in ("planner", "executor"))
    )
    assert {"1840", "500", "highqueuelag"} <= examples.claim_facts  # read from the prompt
    tally = bench.measure([_cassette(tmp_path, examples.claims[0], EVIDENCE)], None)[
        "live-test.yaml"
    ]

    assert (tally.claims, tally.claim_facts, tally.any) == (1, 1, 1)


def test_prompts_without_examples_still_count_the_former_examples_subjects(
    bench: ModuleType, tmp_path: Path
) -> None:
    examples = bench.examples_of(
        *(PACKAGE_PROMPTS.joinpath(f"{a}.md").read_text("utf-8") for a in ("planner", "executor"))
    )
    assert (examples.plans, examples.calls, examples.claims) == ((), (), ())
    claim = "billing-gateway 当前存在 HighCPUUsage 告警"
    path = _cassette(tmp_path, claim, EVIDENCE, PACKAGE_PROMPTS)
    tally = bench.measure([path], None)["live-test.yaml"]

    assert (tally.claims, tally.subject_claims, tally.subject_any) == (0, 1, 1)
