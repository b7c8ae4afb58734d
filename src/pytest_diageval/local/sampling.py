"""Greedy grammar sampling that checks the best token first: llama.cpp's own shortcut.

Server-only, like :mod:`pytest_diageval.local.shim` (it imports ``llama_cpp``). llama-cpp-python
0.3.36 puts the grammar sampler in the chain before everything else, so every token checks
the grammar against the whole vocabulary: Gemma 3's 262,144 tokens, about one second per
token here under a JSON-schema grammar, so a contract of a few hundred tokens took minutes.
llama.cpp's own sampler (``common_sampler_sample``) avoids that: it samples without the
grammar, keeps the token when the grammar accepts it, and only otherwise applies the grammar to
every candidate and samples again. For greedy decoding (temperature 0, what recordings use)
that gives exactly the token the full check would give: the best-scoring token the grammar
accepts.

:func:`install` replaces ``Llama._init_sampler`` for that one case (a grammar, temperature 0,
no logits processor): the chain becomes penalties → :class:`_GrammarFirst` → greedy, where
:class:`_GrammarFirst` checks the best candidate against the grammar on a one-element array
and masks every other candidate, or, when the grammar rejects it, applies the grammar to the
whole array (the stock cost, paid only then). Its ``accept`` advances the grammar with the
token sampled. Every other case keeps the stock sampler.
"""

from __future__ import annotations

import ctypes
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import _internals
from llama_cpp.llama import Llama

__all__ = ["install"]

_TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)
_stock_init_sampler = Llama._init_sampler
# The best token first, then the best 256: only when neither holds a token the grammar accepts
# is the grammar applied to the whole vocabulary. Greedy, each step gives the same token.
_PROBE_WIDTHS = (1, 256)


class _GrammarFirst:
    """A llama sampler (C interface from Python) that applies a grammar best-candidate-first."""

    def __init__(self, model: Any, grammar: Any) -> None:
        self.grammar = llama_cpp.llama_sampler_init_grammar(
            model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        interface = llama_cpp.llama_sampler_i()
        self._apply = llama_cpp.llama_sampler_i_apply(lambda _smpl, cur_p: self.apply(cur_p))
        self._accept = llama_cpp.llama_sampler_i_accept(
            lambda _smpl, token: llama_cpp.llama_sampler_accept(self.grammar, token)
        )
        interface.apply = self._apply
        interface.accept = self._accept
        interface.name = llama_cpp.llama_sampler_i_name(0)
        interface.reset = llama_cpp.llama_sampler_i_reset(0)
        interface.clone = llama_cpp.llama_sampler_i_clone(0)
        interface.free = llama_cpp.llama_sampler_i_free(0)
        self._interface = interface
        self.sampler = llama_cpp.llama_sampler()
        self.sampler.iface = ctypes.pointer(interface)
        self.sampler.ctx = None

    def apply(self, cur_p: Any) -> None:
        array = cur_p.contents
        buffer = (llama_cpp.llama_token_data * array.size).from_address(
            ctypes.addressof(array.data.contents)
        )
        candidates = np.frombuffer(buffer, dtype=_TOKEN_DATA)
        logits = candidates["logit"]
        for width in _PROBE_WIDTHS:
            if width >= len(logits):
                break
            best = self._best_accepted(candidates, width)
            if best is not None:
                kept = logits[best]
                logits[:] = -np.inf
                logits[best] = kept
                return
        llama_cpp.llama_sampler_apply(self.grammar, cur_p)  # the whole vocabulary

    def _best_accepted(self, candidates: Any, width: int) -> int | None:
        """Index of the best-scoring candidate the grammar accepts among the top ``width``."""
        logits = candidates["logit"]
        top = np.argpartition(-logits, width - 1)[:width] if width > 1 else [np.argmax(logits)]
        top = sorted(top, key=lambda index: -logits[index])
        probe = (llama_cpp.llama_token_data * width)(
            *(
                llama_cpp.llama_token_data(int(candidates["id"][i]), float(logits[i]), 0.0)
                for i in top
            )
        )
        view = llama_cpp.llama_token_data_array(data=probe, size=width, selected=-1, sorted=False)
        llama_cpp.llama_sampler_apply(self.grammar, ctypes.byref(view))
        for position, index in enumerate(top):
            if np.isfinite(probe[position].logit):
                return int(index)
        return None

    def free(self) -> None:
        llama_cpp.llama_sampler_free(self.grammar)


# Typed as Any: llama_cpp's internals are untyped, and mypy runs with and without the extra.
_sampler_chain: Any = _internals.LlamaSampler


def _init_sampler(self: Llama, **kwargs: Any) -> Any:
    grammar = kwargs.get("grammar")
    if grammar is None or kwargs.get("temp") != 0.0 or kwargs.get("logits_processor"):
        return _stock_init_sampler(self, **kwargs)
    chain: Any = _sampler_chain()
    chain.add_penalties(
        n_vocab=self._n_vocab,
        penalty_last_n=self.last_n_tokens_size,
        penalty_repeat=kwargs.get("repeat_penalty", 1.0),
        penalty_freq=kwargs.get("frequency_penalty", 0.0),
        penalty_present=kwargs.get("presence_penalty", 0.0),
    )
    grammar_first = _GrammarFirst(self._model, grammar)
    llama_cpp.llama_sampler_chain_add(chain.sampler, ctypes.pointer(grammar_first.sampler))
    # As add_custom does: the chain must not free a sampler it does not own.
    custom: list[Any] = chain.custom_samplers
    custom.append((llama_cpp.llama_sampler_chain_n(chain.sampler) - 1, grammar_first))
    chain._exit_stack.callback(grammar_first.free)
    chain.add_greedy()
    return chain


def install() -> None:
    """Use :class:`_GrammarFirst` for greedy grammar sampling in this process."""
    # setattr: llama_cpp's types differ with and without the extra installed (mypy runs both).
    setattr(Llama, "_init_sampler", _init_sampler)  # noqa: B010
