"""Every llama-cpp-python name outside its documented API that the local server uses: the
sampler chain ``Llama`` builds and the private state it is built from, the grammar's text, the
request types the server validates against, and the prompt cache the server builds.

Server-only (it imports ``llama_cpp``). The ``local`` extra pins llama-cpp-python to
:data:`CHECKED_VERSIONS`, the release this module was read against, and
``tests/local/test_llama_adapter.py`` fails on any other release and names each name below
that is gone. No other module of the package touches a private ``llama_cpp`` name
(``tests/test_private_names.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, NamedTuple, NotRequired

import llama_cpp
import llama_cpp.llama_types as llama_types
from llama_cpp import _internals
from llama_cpp.llama import Llama
from llama_cpp.llama import LlamaState as SavedState  # the state a cache keeps

__all__ = [
    "CHECKED_VERSIONS",
    "RELIED_ON",
    "LeanRAMCache",
    "LlamaState",
    "SamplerChain",
    "accept_openai_request_forms",
    "close_with",
    "grammar_rules",
    "llama_state",
    "replace_init_sampler",
    "stock_init_sampler",
    "use_lean_prompt_cache",
]

CHECKED_VERSIONS = "==0.3.36"
"""The llama-cpp-python release this module was checked against; the ``local`` extra pins it."""

RELIED_ON = (
    ("llama_cpp.llama.Llama", "_init_sampler"),
    ("llama_cpp.llama.Llama", "_model"),
    ("llama_cpp.llama.Llama", "_n_vocab"),
    ("llama_cpp.llama.Llama", "_seed"),
    ("llama_cpp._internals", "LlamaSampler"),
    ("llama_cpp._internals.LlamaSampler", "_exit_stack"),
    ("llama_cpp._internals.LlamaSampler", "custom_samplers"),
    ("llama_cpp._internals.LlamaSampler", "sampler"),
    ("llama_cpp.llama_grammar.LlamaGrammar", "_grammar"),
    ("llama_cpp.llama_grammar.LlamaGrammar", "_root"),
    ("llama_cpp.llama_types.ChatCompletionRequestAssistantMessage", "__annotations__"),
    ("llama_cpp.llama_types.ChatCompletionRequestResponseFormat", "__annotations__"),
    ("llama_cpp", "LlamaRAMCache"),
    ("llama_cpp.llama", "LlamaState"),
)
"""``(module or class, name)`` of each llama-cpp-python name used here beyond its documented
API: what to re-read in a new release before changing :data:`CHECKED_VERSIONS`."""

stock_init_sampler = Llama._init_sampler
"""``Llama``'s own sampler-chain builder, as it was before :func:`replace_init_sampler`."""

# Typed as Any: llama_cpp's internals are untyped, and mypy runs with and without the extra.
SamplerChain: Any = _internals.LlamaSampler
"""The sampler chain class ``Llama._init_sampler`` builds and returns."""


class LlamaState(NamedTuple):
    """What ``Llama._init_sampler`` reads of its model besides its keyword arguments."""

    model: Any
    n_vocab: int
    seed: int


def llama_state(llama: Llama) -> LlamaState:
    """The loaded model, its vocabulary size and its seed."""
    return LlamaState(llama._model, llama._n_vocab, llama._seed)


def grammar_rules(grammar: Any) -> tuple[str, str]:
    """A ``LlamaGrammar``'s GBNF text and the name of its root rule."""
    return grammar._grammar, grammar._root


def close_with(chain: Any, free: Callable[[], None]) -> None:
    """Have ``free`` called when the sampler chain is closed."""
    chain._exit_stack.callback(free)


def replace_init_sampler(init_sampler: Callable[..., Any]) -> None:
    """Make ``init_sampler`` build the sampler chain of every ``Llama`` in this process."""
    # setattr: llama_cpp's types differ with and without the extra installed (mypy runs both).
    setattr(Llama, "_init_sampler", init_sampler)  # noqa: B010


def accept_openai_request_forms() -> None:
    """Let the server's request models accept what the OpenAI SDK sends: an assistant message
    without ``content``, and OpenAI's structured-output form ``{"type": "json_schema",
    "json_schema": {"schema": …}}`` next to llama.cpp's ``{"type": "json_object", "schema":
    …}``. Called before ``llama_cpp.server`` builds its request models from these TypedDicts."""
    llama_types.ChatCompletionRequestAssistantMessage.__annotations__["content"] = NotRequired[
        str | None
    ]
    response_format: dict[str, Any] = (
        llama_types.ChatCompletionRequestResponseFormat.__annotations__
    )
    response_format["type"] = Literal["text", "json_object", "json_schema"]
    response_format["json_schema"] = NotRequired[dict[str, Any]]


_RAMCache: Any = getattr(llama_cpp, "LlamaRAMCache")  # noqa: B009 (untyped without the extra)


class LeanRAMCache(_RAMCache):  # type: ignore[misc,unused-ignore]
    """llama-cpp-python's RAM prompt cache without the logits it need not keep.

    ``Llama.save_state`` copies the model's whole score buffer with every state: 512 rows of
    Gemma's 262,144 logits, 512 MB a state, outside the cache's own size count (it counts the
    KV state only). Two states a request filled 24 GB in seven requests and the kernel killed
    the server. Without ``logits_all`` nothing reads those rows (sampling reads the context's
    own logits, and a prefix hit always evaluates the prompt's last token again), so a state
    keeps the last row only; ``load_state`` broadcasts it back into the buffer."""

    def __setitem__(self, key: Any, value: Any) -> None:
        lean = SavedState(
            input_ids=value.input_ids,
            scores=value.scores[-1:].copy(),
            n_tokens=value.n_tokens,
            llama_state=value.llama_state,
            llama_state_size=value.llama_state_size,
            seed=value.seed,
        )
        super().__setitem__(key, lean)


def use_lean_prompt_cache() -> None:
    """Make the server build :class:`LeanRAMCache` for ``--cache true --cache_type ram``
    (``llama_cpp.server`` looks the class up as ``llama_cpp.LlamaRAMCache`` when it starts)."""
    setattr(llama_cpp, "LlamaRAMCache", LeanRAMCache)  # noqa: B010
