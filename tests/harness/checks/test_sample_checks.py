"""pass@k, pass^k and flaky over repeated samples: the estimators on known values, and one
outcome from the outcomes of every sample."""

from __future__ import annotations

from math import comb

import pytest

from pytest_diageval.harness.checks.outcome import CheckOutcome
from pytest_diageval.harness.checks.pass_at_k import (
    SampleStats,
    pass_at,
    pass_hat,
    sampled_outcome,
)


@pytest.mark.parametrize(
    ("k", "samples", "held", "at", "hat"),
    [
        (1, 5, 2, 0.4, 0.4),  # pass@1 = pass^1 = c/n
        (2, 5, 2, 1 - 3 / 10, 1 / 10),  # 1 - C(3,2)/C(5,2); C(2,2)/C(5,2)
        (3, 3, 2, 1.0, 0.0),
        (3, 3, 3, 1.0, 1.0),
        (3, 3, 0, 0.0, 0.0),
        (4, 10, 7, 1 - comb(3, 4) / comb(10, 4), comb(7, 4) / comb(10, 4)),
    ],
)
def test_the_unbiased_estimators_on_known_values(
    k: int, samples: int, held: int, at: float, hat: float
) -> None:
    assert pass_at(k, samples, held) == pytest.approx(at)
    assert pass_hat(k, samples, held) == pytest.approx(hat)


@pytest.mark.parametrize(("k", "samples", "held"), [(0, 3, 1), (4, 3, 1), (2, 3, 4), (1, 3, -1)])
def test_impossible_counts_are_refused(k: int, samples: int, held: int) -> None:
    with pytest.raises(ValueError, match="need 1 <= k <= samples"):
        pass_at(k, samples, held)


def test_flaky_is_held_on_some_samples_only() -> None:
    assert SampleStats(3, 2).flaky
    assert not SampleStats(3, 3).flaky
    assert not SampleStats(3, 0).flaky
    assert SampleStats(3, 1).passed("any")
    assert not SampleStats(3, 1).passed("all")


def _outcome(passed: bool, got: str) -> CheckOutcome:
    return CheckOutcome(passed, "PASS", got, details=[f"why {got}"])


def test_one_outcome_names_each_sample_and_the_evidence_of_the_first_miss() -> None:
    outcomes = [_outcome(True, "PASS"), _outcome(False, "REJECT"), _outcome(False, "LOW_CONFID")]

    outcome, stats = sampled_outcome(outcomes, "all")

    assert (stats.samples, stats.held) == (3, 1)
    assert not outcome.passed
    assert outcome.headline("verdict") == (
        "verdict: expected PASS, got flaky, held on 1 of 3 samples (sample 2: got REJECT)"
    )
    assert outcome.actual == "held on 1 of 3 samples (pass@3 = 1, pass^3 = 0): flaky"
    assert outcome.details == [
        "sample 1: held: PASS",
        "sample 2: missed: REJECT",
        "sample 3: missed: LOW_CONFID",
        "sample 2, evidence:",
        "  why REJECT",
    ]
    assert sampled_outcome(outcomes, "any")[0].passed


def test_an_expectation_held_by_every_sample_passes_and_is_not_flaky() -> None:
    outcome, stats = sampled_outcome([_outcome(True, "PASS")] * 2, "all")

    assert outcome.passed
    assert not stats.flaky
    assert stats.as_dict() == {
        "samples": 2,
        "held": 2,
        "pass@1": 1.0,
        "pass@2": 1.0,
        "pass^2": 1.0,
        "flaky": False,
    }
