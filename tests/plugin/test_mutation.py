"""``--diageval-mutate`` through pytest: items, outcomes, the summary, the JSON report.

The scenarios are the documented example (``high-memory-positive``, a PASS with two bindings)
and its LOW_CONFID variant, written into a pytester directory. What a mutant derives is pure
(51 mutants, 12 equivalent, tests/harness/mutation/test_mutants.py, then the two scope kinds of
issue 25, one of them equivalent); whether the guards of today kill
each one is not pinned here, except for the citation forgeries the gatekeeper must always
catch. A conftest seam that removes the gatekeeper's excerpt check shows what a weak guard
looks like in the report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_diageval.harness.format.loader import load_scenario
from pytest_diageval.harness.runner import run_scenario
from pytest_diageval.harness.settings import RunSettings
from support.fake_openai_server import FakeOpenAIServer

if TYPE_CHECKING:
    from conftest import ScenarioDir

NODE = "scenarios/memory.yaml::high-memory-positive"
LEAN = ("-p", "no:hypothesispytest", "--assert=plain")
ALWAYS_KILLED = (
    "other-invocation-claim-1-0",
    "index-plus-one-claim-1-0",
    "digit-first-claim-1-0",
    "digit-last-claim-1-1",
    "tool-swap-claim-1-1",
    "negation-flip-claim-1-0",
)
EQUIVALENT = (
    "other-path-claim-1-0",
    "runbook-quote-claim-1-0",
    "runbook-quote-claim-1-1",
    "other-service-claim-1-0",
    "other-service-claim-1-1",
    "statement-modality-claim-1-text",
    "statement-timestamp-claim-1-answer",
    "statement-timestamp-claim-1-text",
    "statement-label-claim-1-answer",
    "statement-label-claim-1-text",
    "statement-zone-claim-1-answer",
    "statement-zone-claim-1-text",
)
# The test-only seam: a gatekeeper whose excerpt check accepts every quote.
WEAK_EXCERPT_CHECK = """
import pytest
from pytest_diageval.core.judge import citation
from pytest_diageval.core.judge.excerpt_match import ExcerptMatch

_patch = pytest.MonkeyPatch()


def pytest_configure(config):
    def accept_everything(excerpt, text):
        return ExcerptMatch("matched", 100.0, "seam: the excerpt check is removed", text)

    _patch.setattr(citation, "match_excerpt", accept_everything)


def pytest_unconfigure(config):
    _patch.undo()
"""


def _report(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))


def _mutants(report: Any) -> dict[str, dict[str, Any]]:
    return {m["name"]: m for m in report["mutation"]["mutants"]}


def _section(lines: list[str], title: str) -> list[str]:
    start = next(i for i, line in enumerate(lines) if line.startswith("=") and f" {title} " in line)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("==")), len(lines))
    return lines[start + 1 : end]


def test_every_mutant_is_an_item_named_by_kind_claim_and_binding(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    scenarios.write("scenarios/low.yaml", scenarios.low_confidence())
    result = pytester.runpytest("--diageval-mutate", "--collect-only", "-q")
    ids = [line for line in result.outlines if "::mutant[" in line]
    assert len(ids) == 54  # the LOW_CONFID scenario has nothing to mutate
    assert ids[0] == f"{NODE}::mutant[other-invocation-claim-1-0]"
    assert ids[-4:-2] == [
        f"{NODE}::mutant[extra-sentence-answer-all]",
        f"{NODE}::mutant[prose-rewrite-answer-all]",
    ]
    assert ids[-2:] == [
        f"{NODE}::mutant[scope-service-claim-1-all]",
        f"{NODE}::mutant[scope-excluded-claim-1-all]",
    ]
    assert f"{NODE}::mutant[demoted-claim-1-all]" in ids
    assert f"{NODE}::mutant[planted-injection-claim-1-1]" in ids


def test_outcomes_summary_and_json_agree(pytester: pytest.Pytester, scenarios: ScenarioDir) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    result = pytester.runpytest("--diageval-mutate", "--diageval-report", "out.json")
    report = _report(pytester.path / "out.json")
    totals = report["mutation"]["totals"]
    outcomes = result.parseoutcomes()
    assert totals["equivalent"] == outcomes.get("skipped", 0) == 13
    assert totals["killed"] == outcomes.get("passed", 0)
    assert totals["survived"] + totals["error"] == outcomes.get("failed", 0)
    assert totals["tried"] == 41
    assert totals["error"] == 0
    mutants = _mutants(report)
    assert len(mutants) == 54
    for name in ALWAYS_KILLED:
        assert (mutants[name]["outcome"], mutants[name]["verdict"]) == ("killed", "REJECT"), name
    for name in EQUIVALENT:
        assert mutants[name]["outcome"] == "equivalent"
        assert mutants[name]["equivalent_reason"]
    assert report["mutation"]["by_kind"]["digit-first"] == {
        "tried": 2,
        "killed": 2,
        "survived": 0,
        "equivalent": 0,
        "error": 0,
    }
    section = _section(result.outlines, "diageval mutation")
    assert section[0].split("|")[0].strip() == "scenario"
    assert (
        "  high-memory-positive | digit-first         | 2     | 2      | 0        | 0          | 0"
        in section
    )
    survivors = [m for m in mutants.values() if m["outcome"] == "survived"]
    expected = f"surviving mutants ({len(survivors)}):" if survivors else "surviving mutants: none"
    assert expected in section


def test_a_weak_guard_is_reported_as_survivors_with_the_seed_rule(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    scenarios.write_text("conftest.py", WEAK_EXCERPT_CHECK)
    result = pytester.runpytest(
        "--diageval-mutate", "--diageval-report", "out.json", "-k", "digit- or negation"
    )
    report = _report(pytester.path / "out.json")
    mutants = _mutants(report)
    assert {name: m["outcome"] for name, m in mutants.items()} == {
        "digit-first-claim-1-0": "survived",
        "digit-last-claim-1-0": "survived",
        "negation-flip-claim-1-0": "survived",
        "digit-first-claim-1-1": "survived",
        "digit-last-claim-1-1": "survived",
        "negation-flip-claim-1-1": "survived",
    }
    result.assert_outcomes(failed=6)
    failures = scenarios.failures(result)
    header = failures.index(
        "scenario high-memory-positive — mutant[digit-first-claim-1-0] survived"
    )
    assert failures[header + 1 : header + 4] == [
        "  changed: first digit of the excerpt 9 → 0 (character 55)",
        "  reached: PASS (score 1.0, gatekeeper none, answer direct, rounds 1);"
        " code overrides: none",
        '  let through by: 000: "a claim with fabricated or missing evidence references SHALL'
        ' NOT be classified as `direct_evidence`"; 004 Gatekeeper: source_invocation_id,'
        " tool_name, raw_path and evidence_excerpt must match the real invocation",
    ]
    section = _section(result.outlines, "diageval mutation")
    assert "surviving mutants (6):" in section
    assert (
        f"  {NODE}::mutant[digit-first-claim-1-0]: PASS — first digit of the excerpt 9 → 0"
        " (character 55)"
    ) in section


def test_without_the_seam_the_same_forgeries_are_killed(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    result = pytester.runpytest("--diageval-mutate", "-k", "digit- or negation")
    result.assert_outcomes(passed=6)


def test_two_workers_report_the_same_totals(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    scenarios.write("scenarios/memory2.yaml", {**scenarios.full(), "id": "high-memory-again"})
    single = pytester.runpytest("--diageval-mutate", "--diageval-report", "single.json")
    parallel = pytester.runpytest_subprocess(
        *LEAN, "--diageval-mutate", "-n", "2", "--diageval-report", "parallel.json"
    )
    assert parallel.parseoutcomes() == single.parseoutcomes()
    assert _report(pytester.path / "parallel.json") == _report(pytester.path / "single.json")
    assert _report(pytester.path / "single.json")["mutation"]["totals"]["equivalent"] == 26


def test_mutation_never_records(pytester: pytest.Pytester, scenarios: ScenarioDir) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    result = pytester.runpytest("--diageval-mutate", "--diageval-record=once")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--diageval-mutate replays only and never touches the network;"
            " drop --diageval-record=once*"
        ]
    )


def test_a_cassette_scenario_is_mutated_offline(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    data = scenarios.full()
    path = scenarios.write(
        "scenarios/memory.yaml", {**data, "llm": {"cassette": "cassettes/memory.yaml"}}
    )
    cassette = pytester.path / "scenarios" / "cassettes" / "memory.yaml"
    with FakeOpenAIServer(scenarios.script(data)) as server:
        settings = RunSettings(record_mode="once", base_url=server.base_url, model="m")
        run = run_scenario(
            load_scenario(path), path, cassette=cassette, settings=settings, rerecord_command=""
        )
    assert run.result is not None, run.error
    # The server is gone: any request that left the process would fail its mutant as an error.
    result = pytester.runpytest("--diageval-mutate", "--diageval-report", "out.json")
    report = _report(pytester.path / "out.json")
    assert report["mutation"]["totals"]["error"] == 0
    assert report["mutation"]["totals"]["tried"] == 41
    mutants = _mutants(report)
    for name in ALWAYS_KILLED:
        assert mutants[name]["outcome"] == "killed", name
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)


def test_a_scenario_that_cannot_be_replayed_fails_one_setup_item(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    data = scenarios.full()
    data["llm"]["script"].append({"stage": "planner", "content": {"plan": "多余的回答"}})
    scenarios.write("scenarios/memory.yaml", data)
    result = pytester.runpytest("--diageval-mutate", "-q")
    result.assert_outcomes(failed=1)
    failures = scenarios.failures(result)
    assert (
        "scenario high-memory-positive cannot be mutated: the unmutated replay leaves 1"
        " answer(s) unused"
    ) in failures
    assert f"FAILED {NODE}::mutation-setup" in "\n".join(result.outlines)


def test_markers_select_mutants_and_junit_carries_their_outcome(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    low = scenarios.low_confidence()
    scenarios.write("scenarios/other.yaml", {**scenarios.full(), "id": "other", "tags": ["x"]})
    scenarios.write("scenarios/low.yaml", low)
    result = pytester.runpytest(
        "--diageval-mutate", "-m", "memory", "-k", "digit-first", "--junitxml", "junit.xml"
    )
    result.assert_outcomes(passed=2)
    junit = (pytester.path / "junit.xml").read_text("utf-8")
    assert junit.count('name="diageval_mutant_outcome" value="killed"') == 2
    assert junit.count('name="diageval_verdict" value="REJECT"') == 2
    assert "other::mutant" not in junit
