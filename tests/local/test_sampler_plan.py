"""The local server's sampler chain and grammar windows, without llama.cpp."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_diageval.local.sampler_plan import (
    GRAMMAR_STEP,
    SAMPLING_WINDOW,
    WIDE_WINDOW,
    Step,
    probe_widths,
    sampler_steps,
)

# Llama._init_sampler's defaults in llama-cpp-python 0.3.36 (the shim fills them in from the
# stock signature; here they are spelled out so the expected chains read as numbers).
STOCK = {
    "top_k": 40,
    "top_p": 0.95,
    "min_p": 0.05,
    "typical_p": 1.0,
    "temp": 0.8,
    "repeat_penalty": 1.0,
    "frequency_penalty": 0.0,
    "presence_penalty": 0.0,
    "mirostat_mode": 0,
    "mirostat_eta": 0.1,
    "mirostat_tau": 5.0,
}
PENALTIES = Step(
    "add_penalties",
    kwargs={
        "n_vocab": 262144,
        "penalty_last_n": 64,
        "penalty_repeat": 1.1,
        "penalty_freq": 0.0,
        "penalty_present": 0.0,
    },
)


def steps(**settings: Any) -> list[Step]:
    merged = {**STOCK, "repeat_penalty": 1.1, **settings}
    return sampler_steps(merged, n_vocab=262144, last_n=64, seed=7)


def test_sampling_keeps_the_stock_truncation_chain_with_the_grammar_after_the_penalties() -> None:
    assert steps(temp=0.8, top_k=20, top_p=0.9, min_p=0.1) == [
        PENALTIES,
        Step(GRAMMAR_STEP),
        Step("add_top_k", (20,)),
        Step("add_typical", (1.0, 1)),
        Step("add_top_p", (0.9, 1)),
        Step("add_min_p", (0.1, 1)),
        Step("add_temp", (0.8,)),
        Step("add_dist", (7,)),
    ]


def test_greedy_ends_in_greedy_and_a_negative_temperature_in_a_seeded_dist() -> None:
    assert steps(temp=0.0) == [PENALTIES, Step(GRAMMAR_STEP), Step("add_greedy")]
    assert steps(temp=-1.0) == [PENALTIES, Step(GRAMMAR_STEP), Step("add_dist", (7,))]


def test_mirostat_replaces_the_truncation_chain() -> None:
    assert steps(mirostat_mode=1)[2:] == [Step("add_mirostat", (262144, 7, 5.0, 0.1, 100))]
    assert steps(mirostat_mode=2, mirostat_tau=3.0)[2:] == [Step("add_mirostat_v2", (7, 3.0, 0.1))]


@pytest.mark.parametrize(
    ("temp", "top_k", "widths"),
    [
        (0.0, 40, (1, WIDE_WINDOW)),  # greedy: the best token, then the best 256
        (0.8, 40, (SAMPLING_WINDOW, WIDE_WINDOW)),
        (0.8, 0, (SAMPLING_WINDOW, WIDE_WINDOW)),  # top_k 0 keeps all: the window stays 40
        (0.8, 100, (100, WIDE_WINDOW)),  # never narrower than what top_k keeps
        (0.8, 1000, (1000,)),
        (-1.0, 40, (SAMPLING_WINDOW, WIDE_WINDOW)),
    ],
)
def test_probe_widths(temp: float, top_k: int, widths: tuple[int, ...]) -> None:
    assert probe_widths(temp, top_k) == widths
