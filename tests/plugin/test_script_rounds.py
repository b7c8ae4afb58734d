"""A scripted scenario that runs out of entries because round 1 asked for a retry round: the
failure says round 1's verdict and score, why it was retried, and what a retry round needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir


def _no_evidence_round(scenarios: ScenarioDir) -> dict[str, object]:
    """The example, but the verifier finds no evidence for the critical fact: LOW_CONFID 0."""
    data = scenarios.example()
    data["id"] = "one-round-script"
    verifier = next(e for e in data["llm"]["script"] if e["stage"] == "verifier")["content"]
    verifier["verdict"] = "LOW_CONFID"
    verifier["groundedness_score"] = 0.0
    verifier["facts_checked"][0]["verification"] = "no_evidence"
    data["expect"] = {"verdict": "LOW_CONFID"}
    return data


def test_a_retry_round_without_script_entries_says_why_it_was_asked(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/one-round.yaml", _no_evidence_round(scenarios))

    result = pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            # The headline: what --tb=line, JUnit and the short summary show.
            "verdict: the scenario did not run: ScriptExhaustedError: scripted model: request 5"
            " from stage 'planner' came after the last script entry (the script has 4 entries;"
            " entry 5 (1-based) does not exist): round 1 ended LOW_CONFID with score 0, so the"
            " pipeline asked for a retry round (round 2), which the script has no entries for",
            "*Why round 2 was asked: LOW_CONFID with score 0.0 < 0.5 in round 1 of 2: one more"
            " round to gather evidence.",
            "*The retry is told: 1 critical fact(s) without evidence.",
            "*A retry round needs its own script entries after round 1's (its first request"
            " came from stage 'planner'), in order: planner (one entry; two when its answer is"
            " malformed and re-asked); executor (one entry per turn: each tool-call turn, then"
            " the contract); verifier (one entry; two when re-asked). Or make round 1 end in"
            " one round: PASS, REJECT, or LOW_CONFID with a score of at least 0.5.",
        ]
    )


def test_the_retry_rounds_own_entries_make_the_scenario_pass(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    data = _no_evidence_round(scenarios)
    script = data["llm"]["script"]
    assert isinstance(script, list)
    script.extend([dict(entry) for entry in script])  # round 2 answers like round 1
    data["expect"] = {"verdict": "LOW_CONFID", "rounds": 2}
    scenarios.write("scenarios/two-rounds.yaml", data)

    result = pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=2)


def test_a_script_short_of_round_1_says_nothing_of_a_retry(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    data = scenarios.example()
    del data["llm"]["script"][-1]  # no verifier answer
    scenarios.write("scenarios/short.yaml", data)

    result = pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=len(data["expect"]))
    result.stdout.fnmatch_lines(
        ["*scripted model: request 4 from stage 'verifier' came after the last script entry*"]
    )
    assert not any("retry round" in line for line in result.outlines)
