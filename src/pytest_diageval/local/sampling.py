"""Grammar sampling that checks the best candidates first: llama.cpp's own shortcut.

Server-only, like :mod:`pytest_diageval.local.shim` (it imports ``llama_cpp``). llama-cpp-python
0.3.36 puts the grammar sampler in the chain right after the penalties, so every token checks
the grammar against the whole vocabulary: Gemma 3's 262,144 tokens, up to a second per token
here under a JSON-schema grammar, so a contract of a few hundred tokens took minutes.
llama.cpp's own sampler (``common_sampler_sample``) avoids that by checking the token it would
sample first and applying the grammar to every candidate only when that one is rejected.

:func:`install` replaces ``Llama._init_sampler`` whenever a grammar is given without a logits
processor: the chain is the stock one for the request's settings
(:func:`~pytest_diageval.local.sampler_plan.sampler_steps`: penalties, grammar, then greedy,
mirostat or top_k → typical → top_p → min_p → temp → seeded dist) with the grammar sampler
replaced by :class:`_GrammarFirst`. That one shows the grammar only the best candidates, on a
small array of their own (:func:`~pytest_diageval.local.sampler_plan.probe_widths`: greedy the
best one, then the best 256; sampling the best 40 or ``top_k``, then the best 256) and masks
every other candidate; only when none of them is accepted does it apply the grammar to the
whole array (the stock cost, paid only then). Its ``accept`` advances the grammar with the
token sampled.

Greedy, that is exactly the stock token: the best-scoring token the grammar accepts. Sampling,
the later samplers see the accepted tokens of the window instead of every accepted token: the
same candidates whenever the window holds ``top_k`` accepted tokens (the stock top_k keeps no
more). When it holds fewer, the accepted tokens ranked below the window are left out, so a
seed can pick another token than the stock sampler would (as llama.cpp's own shortcut, this
trades that for speed); the seed still decides the answer.
"""

from __future__ import annotations

import ctypes
import inspect
from collections.abc import Sequence
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp.llama import Llama

from pytest_diageval.local import llama_adapter
from pytest_diageval.local.sampler_plan import GRAMMAR_STEP, probe_widths, sampler_steps

__all__ = ["install"]

_TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)
_stock_init_sampler = llama_adapter.stock_init_sampler
# The stock defaults, for the keywords a caller leaves out (Llama.sample leaves out none).
_STOCK_DEFAULTS = {
    name: parameter.default
    for name, parameter in inspect.signature(_stock_init_sampler).parameters.items()
    if parameter.default is not inspect.Parameter.empty
}


class _GrammarFirst:
    """A llama sampler (C interface from Python) that applies a grammar best-candidates-first.

    ``widths``: the windows tried in turn (:func:`probe_widths`); ``keep_all``: keep every
    accepted token of the window (sampling) or only the best (greedy).
    """

    def __init__(self, model: Any, grammar: Any, widths: Sequence[int], *, keep_all: bool) -> None:
        rules, root = llama_adapter.grammar_rules(grammar)
        self.grammar = llama_cpp.llama_sampler_init_grammar(
            model.vocab, rules.encode("utf-8"), root.encode("utf-8")
        )
        self.widths = tuple(widths)
        self.keep_all = keep_all
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
        for width in self.widths:
            if width >= len(logits):
                break
            accepted = self._accepted(candidates, width)
            if accepted:
                kept = accepted if self.keep_all else accepted[:1]
                values = logits[kept]
                logits[:] = -np.inf
                logits[kept] = values
                return
        llama_cpp.llama_sampler_apply(self.grammar, cur_p)  # the whole vocabulary

    def _accepted(self, candidates: Any, width: int) -> list[int]:
        """Indices of the candidates the grammar accepts among the top ``width``, best first."""
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
        return [
            int(index) for position, index in enumerate(top) if np.isfinite(probe[position].logit)
        ]

    def free(self) -> None:
        llama_cpp.llama_sampler_free(self.grammar)


_sampler_chain: Any = llama_adapter.SamplerChain


def _add_grammar_first(chain: Any, grammar_first: _GrammarFirst) -> None:
    llama_cpp.llama_sampler_chain_add(chain.sampler, ctypes.pointer(grammar_first.sampler))
    # As add_custom does: the chain must not free a sampler it does not own.
    custom: list[Any] = chain.custom_samplers
    custom.append((llama_cpp.llama_sampler_chain_n(chain.sampler) - 1, grammar_first))
    llama_adapter.close_with(chain, grammar_first.free)


def _init_sampler(self: Llama, **kwargs: Any) -> Any:
    grammar = kwargs.get("grammar")
    if grammar is None or kwargs.get("logits_processor"):
        return _stock_init_sampler(self, **kwargs)
    settings = {**_STOCK_DEFAULTS, **kwargs}
    temp = float(settings["temp"])
    chain: Any = _sampler_chain()
    state = llama_adapter.llama_state(self)
    for step in sampler_steps(
        settings, n_vocab=state.n_vocab, last_n=self.last_n_tokens_size, seed=state.seed
    ):
        if step.method == GRAMMAR_STEP:
            widths = probe_widths(temp, int(settings["top_k"]))
            grammar_first = _GrammarFirst(state.model, grammar, widths, keep_all=temp != 0.0)
            _add_grammar_first(chain, grammar_first)
        else:
            getattr(chain, step.method)(*step.args, **step.kwargs)
    return chain


def install() -> None:
    """Use :class:`_GrammarFirst` for grammar sampling in this process."""
    llama_adapter.replace_init_sampler(_init_sampler)
