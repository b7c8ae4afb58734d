"""The local server's sampler chain and grammar windows, without llama.cpp (tested in CI).

:mod:`pytest_diageval.local.sampling` builds the chain llama-cpp-python 0.3.36's stock
``Llama._init_sampler`` builds, with one change: the grammar sampler checks the best candidates
first. What it builds is decided here, without the model:

* :func:`sampler_steps`: the chain as ``LlamaSampler`` method calls, in the stock order and
  with the stock arguments (penalties, the grammar, then greedy, a seeded ``dist``, mirostat,
  or top_k → typical → top_p → min_p → temp → dist), so a request samples as it would have
  without the shim; a test compares it with what the stock method calls;
* :func:`probe_widths`: how many of the best candidates the grammar sees first. Greedy takes
  the best token, then the best 256; sampling takes the best :data:`SAMPLING_WINDOW` (or
  ``top_k`` when larger), then the best 256. Only when none of those is accepted does the
  grammar see the whole vocabulary (Gemma 3: 262,144 tokens, the stock cost of every token).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "GRAMMAR_STEP",
    "MIROSTAT_M",
    "SAMPLING_WINDOW",
    "WIDE_WINDOW",
    "Step",
    "probe_widths",
    "sampler_steps",
]

GRAMMAR_STEP = "add_grammar"  # the step the shim replaces with its best-first grammar sampler
# llama.cpp's common_sampler checks the sampled token first; the best 40 are the stock top_k,
# so a window this wide holds every token the stock chain would keep whenever it holds top_k
# accepted tokens.
SAMPLING_WINDOW = 40
WIDE_WINDOW = 256  # the second try before the whole vocabulary
MIROSTAT_M = 100  # what the stock chain passes to mirostat (v1)
MIN_KEEP = 1  # the stock chain's min_keep (n_probs is 0 there)


@dataclass(frozen=True)
class Step:
    """One ``LlamaSampler`` method call: its name and arguments."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


def sampler_steps(
    settings: Mapping[str, Any], *, n_vocab: int, last_n: int, seed: int
) -> list[Step]:
    """The stock chain for ``settings`` (every ``_init_sampler`` keyword, defaults filled in)
    with a grammar: ``Llama._init_sampler`` without a logits processor, step for step."""
    temp = float(settings["temp"])
    steps = [
        Step(
            "add_penalties",
            kwargs={
                "n_vocab": n_vocab,
                "penalty_last_n": last_n,
                "penalty_repeat": settings["repeat_penalty"],
                "penalty_freq": settings["frequency_penalty"],
                "penalty_present": settings["presence_penalty"],
            },
        ),
        Step(GRAMMAR_STEP),
    ]
    if temp < 0.0:
        return [*steps, Step("add_dist", (seed,))]
    if temp == 0.0:
        return [*steps, Step("add_greedy")]
    tau, eta = settings["mirostat_tau"], settings["mirostat_eta"]
    if settings["mirostat_mode"] == 1:
        return [*steps, Step("add_mirostat", (n_vocab, seed, tau, eta, MIROSTAT_M))]
    if settings["mirostat_mode"] == 2:
        return [*steps, Step("add_mirostat_v2", (seed, tau, eta))]
    return [
        *steps,
        Step("add_top_k", (settings["top_k"],)),
        Step("add_typical", (settings["typical_p"], MIN_KEEP)),
        Step("add_top_p", (settings["top_p"], MIN_KEEP)),
        Step("add_min_p", (settings["min_p"], MIN_KEEP)),
        Step("add_temp", (temp,)),
        Step("add_dist", (seed,)),
    ]


def probe_widths(temp: float, top_k: int) -> tuple[int, ...]:
    """How many of the best candidates the grammar sees, one try after another, before the
    whole vocabulary. Greedy needs only the best accepted token; sampling keeps every accepted
    token of the window, so the window is at least as wide as ``top_k``."""
    if temp == 0.0:
        return (1, WIDE_WINDOW)
    window = max(SAMPLING_WINDOW, top_k)
    return (window, WIDE_WINDOW) if window < WIDE_WINDOW else (window,)
