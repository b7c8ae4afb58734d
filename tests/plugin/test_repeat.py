"""Repeated samples (``--diageval-repeat N``): N recordings per scenario, each expectation
checked on every sample, pass@k and pass^k, flaky expectations shown as such (real pytest
runs against the local fake server of tests/support; replays offline)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from support.fake_openai_server import FakeOpenAIServer

if TYPE_CHECKING:
    from conftest import ScenarioDir

SCENARIO = "scenarios/memory.yaml"
CASSETTES = "scenarios/cassettes"
KEYS = 11  # the full example's expectations
THREE_SAMPLE_FILES = ["memory.sample-2.yaml", "memory.sample-3.yaml", "memory.yaml"]


def _sample_files(scenarios: ScenarioDir) -> list[str]:
    return sorted(path.name for path in (scenarios.root / CASSETTES).glob("*.yaml"))


def _script_where_sample_2_is_low_confidence(scenarios: ScenarioDir) -> list[dict[str, Any]]:
    """Three runs' answers in a row: PASS, then LOW_CONFID (the verifier sees only indirect
    support), then PASS again. The fake server answers them in arrival order."""
    full = scenarios.full()
    low = scenarios.full()
    verifier = next(e for e in low["llm"]["script"] if e["stage"] == "verifier")["content"]
    verifier["facts_checked"][0]["verification"] = "indirect_support"
    return [*scenarios.script(full), *scenarios.script(low), *scenarios.script(full)]


def _record(
    pytester: pytest.Pytester,
    scenarios: ScenarioDir,
    script: list[dict[str, Any]],
    *args: str,
    transient_errors: dict[int, int] | None = None,
) -> pytest.RunResult:
    data = scenarios.full()
    data["llm"] = {"cassette": "cassettes/memory.yaml"}
    scenarios.write(SCENARIO, data)
    with FakeOpenAIServer(script, transient_errors=transient_errors) as server:
        return pytester.runpytest(
            *("--diageval-base-url", server.base_url, "--diageval-model", "m"), *args
        )


@pytest.fixture
def three_samples(pytester: pytest.Pytester, scenarios: ScenarioDir) -> ScenarioDir:
    """The example recorded three times; sample 2 reached LOW_CONFID."""
    script = _script_where_sample_2_is_low_confidence(scenarios)
    recorded = _record(
        pytester, scenarios, script, "--diageval-record=rewrite", "--diageval-repeat", "3"
    )
    assert "verdict" in recorded.stdout.str()
    return scenarios


def test_a_recording_of_three_samples_writes_the_cassette_and_two_sample_files(
    three_samples: ScenarioDir,
) -> None:
    assert _sample_files(three_samples) == THREE_SAMPLE_FILES


def test_a_replay_runs_every_sample_and_a_flaky_expectation_fails_with_its_counts(
    pytester: pytest.Pytester, three_samples: ScenarioDir
) -> None:
    replayed = pytester.runpytest("-rf")  # the server is gone: a replay needs no network

    outcomes = replayed.parseoutcomes()
    assert outcomes["failed"] >= 1  # the verdict, and what follows from it
    assert outcomes["passed"] + outcomes["failed"] == KEYS
    out = replayed.stdout.str()
    assert "verdict: expected PASS, got flaky, held on 2 of 3 samples" in out
    assert "sample 2: got LOW_CONFID" in out
    row = "*high-memory-positive*PASS*PASS/LOW_CONFID/PASS*2/3*8/11, 3 flaky"
    replayed.stdout.fnmatch_lines([row])
    # The tool calls are the same in every sample: that expectation is not flaky.
    assert "tool_calls: expected" not in out


@pytest.mark.parametrize(
    "options",
    [
        ("--diageval-require-samples", "any"),  # pass@3 decides: sample 2 alone misses
        ("--diageval-repeat", "1"),  # sample 1 only
    ],
)
def test_every_item_passes_when_pass_at_k_decides_or_sample_one_alone_runs(
    pytester: pytest.Pytester, three_samples: ScenarioDir, options: tuple[str, str]
) -> None:
    pytester.runpytest(*options).assert_outcomes(passed=KEYS)


def test_the_json_report_holds_pass_at_k_and_pass_hat_k_and_each_samples_verdict(
    pytester: pytest.Pytester, three_samples: ScenarioDir
) -> None:
    pytester.runpytest("--diageval-report", "report.json")

    entry = json.loads(Path(pytester.path, "report.json").read_text("utf-8"))["scenarios"][0]
    summary = entry["summary"]
    assert [sample["verdict"] for sample in summary["samples"]] == ["PASS", "LOW_CONFID", "PASS"]
    assert summary["agreement"] == "2/3"
    assert summary["verdict"] == "PASS"  # sample 1's, as for a one-sample scenario
    # The usage is that of all three runs: three times sample 1's requests.
    assert summary["usage"]["total"]["requests"] == 3 * 4
    verdict = next(check for check in entry["check_results"] if check["name"] == "verdict")
    assert verdict["outcome"] == "failed"
    assert verdict["samples"] == {
        "samples": 3,
        "held": 2,
        "pass@1": 0.6667,
        "pass@3": 1.0,
        "pass^3": 0.0,
        "flaky": True,
    }
    tools = next(check for check in entry["check_results"] if check["name"] == "tool_calls")
    assert tools["samples"]["flaky"] is False
    assert tools["samples"]["pass^3"] == 1.0


def test_a_replay_asking_for_more_samples_than_recorded_says_how_to_record_them(
    pytester: pytest.Pytester, three_samples: ScenarioDir
) -> None:
    replayed = pytester.runpytest("--diageval-repeat", "4")

    # A sample that is not recorded is the harness's problem, not a flaky model: every item
    # fails as a scenario that did not run, naming the sample.
    replayed.assert_outcomes(failed=KEYS)
    out = replayed.stdout.str()
    assert "the scenario did not run: sample 4 of 4: MissingSampleError: --diageval-repeat 4" in out
    assert "memory.sample-4.yaml is not recorded (3 sample(s) are)" in out
    command = next(line for line in out.splitlines() if "--diageval-record=once" in line)
    assert command.strip().endswith("--diageval-repeat 4")
    assert "flaky" not in out


def test_rewriting_with_fewer_samples_removes_the_surplus_sample_files(
    pytester: pytest.Pytester, three_samples: ScenarioDir
) -> None:
    scenarios = three_samples
    script = scenarios.script(scenarios.full()) * 2
    recorded = _record(
        pytester, scenarios, script, "--diageval-record=rewrite", "--diageval-repeat", "2"
    )

    recorded.assert_outcomes(passed=KEYS)
    assert _sample_files(scenarios) == ["memory.sample-2.yaml", "memory.yaml"]
    pytester.runpytest().assert_outcomes(passed=KEYS)


def test_a_recording_whose_sample_failed_removes_no_sample_file(
    pytester: pytest.Pytester, three_samples: ScenarioDir
) -> None:
    scenarios = three_samples
    sample_2 = scenarios.root / CASSETTES / "memory.sample-2.yaml"
    before = sample_2.read_bytes()
    # Sample 2's executor meets a 500 on its first try and both SDK retries: the session
    # errors, its recording is abandoned, and sample 3 must stay beside the old sample 2.
    script = scenarios.script(scenarios.full()) * 2
    errors = {6: 500, 7: 500, 8: 500}
    args = ("--diageval-record=rewrite", "--diageval-repeat", "2")
    _record(pytester, scenarios, script, *args, transient_errors=errors)

    assert sample_2.read_bytes() == before
    assert _sample_files(scenarios) == THREE_SAMPLE_FILES


def test_a_one_sample_cassette_replays_as_before_without_a_samples_column(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    _record(pytester, scenarios, scenarios.script(scenarios.full()), "--diageval-record=once")

    replayed = pytester.runpytest()

    replayed.assert_outcomes(passed=KEYS)
    assert _sample_files(scenarios) == ["memory.yaml"]
    assert "agree" not in replayed.stdout.str()


@pytest.mark.parametrize("value", ["0", "101", "three"])
def test_a_bad_repeat_value_is_a_usage_error_naming_it(
    pytester: pytest.Pytester, scenarios: ScenarioDir, value: str
) -> None:
    result = pytester.runpytest("--diageval-repeat", value)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--diageval-repeat*'{value}' is not a number of samples*"])


def test_the_html_page_and_the_ci_summary_show_the_samples_and_the_flaky_expectations(
    pytester: pytest.Pytester, three_samples: ScenarioDir
) -> None:
    pytester.runpytest("--diageval-html", "report.html", "--diageval-summary", "summary.md")

    page = Path(pytester.path, "report.html").read_text("utf-8")
    assert '<span class="samples">PASS/LOW_CONFID/PASS · agree 2/3</span>' in page
    assert "3 flaky</span>" in page
    assert "verdict agreement <b>2/3</b>" in page
    assert "<code>verdict</code> (held on 2 of 3)" in page
    # Per expectation: samples, held, pass@1, pass@3, pass^3.
    assert "<td>3</td><td>2</td><td>0.6667</td><td>1</td><td>0</td>" in page
    markdown = Path(pytester.path, "summary.md").read_text("utf-8")
    flaky = markdown.split("### Flaky expectations (held on some samples only)", 1)[1]
    assert "- `high-memory-positive::verdict held on 2 of 3`" in flaky
    assert "high-memory-positive::tool_calls" not in flaky
    assert "verdict: expected PASS, got flaky, held on 2 of 3 samples" in markdown
