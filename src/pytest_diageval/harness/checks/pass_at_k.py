"""One expectation over repeated samples: pass@k, pass^k, and whether it is flaky.

A scenario recorded N times (``--diageval-repeat N``) is checked on every sample; each
expectation item then reads the outcomes of all N:

* **pass@k** — the chance that at least one of k samples drawn from the N holds it; for k = N
  that is 1 when any sample held it. **pass^k** — the chance that all k drawn hold it; for
  k = N, 1 only when every sample held it. Both are the unbiased estimators of Chen et al.
  (2021) and of τ-bench (2024), computed from N samples of which c held:
  pass@k = 1 − C(N−c, k)/C(N, k), pass^k = C(c, k)/C(N, k). pass@1 is c/N.
* **flaky** — held on some samples and not on others: neither a pass nor a failure of the
  prompt, and shown as such wherever the expectation is listed.

Which of them decides the item is the run's choice (``--diageval-require-samples``): ``all``
(pass^N, the default: CI stays red while any sample misses) or ``any`` (pass@N).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import comb
from typing import Any, Literal, get_args

from pytest_diageval.harness.checks.outcome import CheckOutcome

__all__ = [
    "SAMPLE_RULES",
    "SampleRule",
    "SampleStats",
    "pass_at",
    "pass_hat",
    "sampled_outcome",
]

SampleRule = Literal["all", "any"]
SAMPLE_RULES: tuple[SampleRule, ...] = get_args(SampleRule)


def pass_at(k: int, samples: int, held: int) -> float:
    """pass@k from ``samples`` samples of which ``held`` held: at least one of k holds."""
    _check_counts(k, samples, held)
    return 1.0 - comb(samples - held, k) / comb(samples, k)


def pass_hat(k: int, samples: int, held: int) -> float:
    """pass^k from ``samples`` samples of which ``held`` held: all k hold."""
    _check_counts(k, samples, held)
    return comb(held, k) / comb(samples, k)


def _check_counts(k: int, samples: int, held: int) -> None:
    if not 1 <= k <= samples or not 0 <= held <= samples:
        raise ValueError(f"need 1 <= k <= samples and 0 <= held <= samples: {k}, {samples}, {held}")


@dataclass(frozen=True)
class SampleStats:
    """How one expectation fared over a scenario's samples."""

    samples: int
    held: int

    @property
    def flaky(self) -> bool:
        return 0 < self.held < self.samples

    def passed(self, rule: SampleRule) -> bool:
        return self.held == self.samples if rule == "all" else self.held > 0

    def as_dict(self) -> dict[str, Any]:
        """What the JSON report and the HTML page show (k is the number of samples)."""
        k = self.samples
        return {
            "samples": k,
            "held": self.held,
            "pass@1": round(self.held / k, 4),
            f"pass@{k}": pass_at(k, k, self.held),
            f"pass^{k}": pass_hat(k, k, self.held),
            "flaky": self.flaky,
        }

    def summary(self) -> str:
        """``held on 2 of 3 samples (pass@3 = 1, pass^3 = 0): flaky``."""
        k = self.samples
        text = (
            f"held on {self.held} of {k} samples"
            f" (pass@{k} = {pass_at(k, k, self.held):g}, pass^{k} = {pass_hat(k, k, self.held):g})"
        )
        return f"{text}: flaky" if self.flaky else text


def sampled_outcome(
    outcomes: Sequence[CheckOutcome], rule: SampleRule
) -> tuple[CheckOutcome, SampleStats]:
    """One outcome from the outcomes of every sample (in sample order), decided by ``rule``,
    and the counts it was decided from.

    The details name each sample with its own line, and repeat the evidence of the first
    sample that missed, so a failure reads without the JSON report.
    """
    stats = SampleStats(len(outcomes), sum(outcome.passed for outcome in outcomes))
    first = outcomes[0]
    missed = [(n, outcome) for n, outcome in enumerate(outcomes, 1) if not outcome.passed]
    details = [_sample_line(n, outcome) for n, outcome in enumerate(outcomes, 1)]
    reason = ""
    if missed:
        n, outcome = missed[0]
        reason = f"sample {n}: got {outcome.got or outcome.actual}"
        details += [f"sample {n}, evidence:", *("  " + line for line in outcome.details)]
    label = "flaky, " if stats.flaky else ""
    outcome = CheckOutcome(
        passed=stats.passed(rule),
        expected=first.expected,
        actual=stats.summary(),
        details=details,
        got=f"{label}held on {stats.held} of {stats.samples} samples",
        reason=reason,
    )
    return outcome, stats


def _sample_line(sample: int, outcome: CheckOutcome) -> str:
    mark = "held" if outcome.passed else "missed"
    return f"sample {sample}: {mark}: {outcome.got or outcome.actual}"
