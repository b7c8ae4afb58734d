"""The scripted model's token usage: a deterministic estimate of what a tokenizer would count.

No tokenizer is involved (the count must be the same on every machine, whichever packages are
installed), but the estimate reads the text a chat template shows the model, by kind of
character, instead of one token per four characters of request JSON (which undercounted
Chinese prompts about 1.5x and overcounted the JSON-heavy executor requests):

- a CJK character (ideographs, kana, full-width punctuation) is one token;
- a run of ASCII letters is one token, plus a quarter per letter beyond six (long words split);
- a digit is one token (tokenizers split numbers into digits);
- a newline is one token; a run of spaces or tabs costs nothing (it joins the next word);
- ASCII punctuation is half a token (``":``, ``",`` … merge in pairs); any other character one;
- each message costs 4 more (its role and the template's markers), each tool call 4 (the
  function's prefix), each tool offered 10.

The text of a request is its messages' roles and contents, its assistant tool calls (name and
arguments), and each tool's name and parameters as JSON (what the local server's ChatML
template showed when the live cassettes were recorded; descriptions are not counted, although
the Gemma template that replaced it shows them: recalibrate after the live suite is re-recorded).
An answer's completion tokens are the same count of its content and tool calls. Calibrated on
the prompts recorded from Gemma 3 270M in
``cassettes/live-*.yaml``: ``python benchmarks/bench_token_estimate.py`` prints the ratio of
recorded to estimated tokens (``benchmarks/README.md``). Counts are kept in quarter tokens,
integers only, and rounded up once.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["ESTIMATE_NAME", "PROMPT_KEYS", "estimated_tokens", "prompt_tokens", "text_tokens"]

ESTIMATE_NAME = "diageval-text-estimate-2"
"""Names this estimate in reports (a budget says which count it was judged on)."""
PROMPT_KEYS = ("messages", "tools")
"""The members of a request that its prompt tokens count."""

_CJK = re.compile(
    "[\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"
)
_WORD = re.compile(r"[A-Za-z]+")
_DIGIT = re.compile(r"[0-9]")
_PUNCTUATION = re.compile(r"[!-/:-@\[-`{-~]")
_BLANK = re.compile(r"[ \t\r]")
_QUARTER, _LONG_WORD = 4, 6
_PER_MESSAGE, _PER_CALL, _PER_TOOL = 4 * _QUARTER, 4 * _QUARTER, 10 * _QUARTER


def text_tokens(text: str) -> int:
    """The estimate of one text, rounded up to whole tokens."""
    return -(-_quarters(text) // _QUARTER)


@functools.lru_cache(maxsize=2048)
def _quarters(text: str) -> int:
    """Quarter tokens of ``text`` (cached: a conversation re-sends its earlier messages and
    the same prompts and tools with every request)."""
    cjk = len(_CJK.findall(text))
    words = _WORD.findall(text)
    letters = sum(len(word) for word in words)
    digits = len(_DIGIT.findall(text))
    newlines = text.count("\n")
    punctuation = len(_PUNCTUATION.findall(text))
    blanks = len(_BLANK.findall(text))
    other = len(text) - cjk - letters - digits - newlines - punctuation - blanks
    long_letters = sum(len(word) - _LONG_WORD for word in words if len(word) > _LONG_WORD)
    return (
        _QUARTER * (cjk + len(words) + digits + newlines + other)
        + long_letters
        + punctuation * _QUARTER // 2
    )


def estimated_tokens(message: Any) -> int:
    """The completion tokens of an answer ``message`` (its content and tool calls)."""
    if not isinstance(message, Mapping):
        return text_tokens(_json(message))
    return -(-_message_quarters(message) // _QUARTER)


def prompt_tokens(text: str, body: Mapping[str, Any]) -> int:
    """The prompt tokens of a request ``body`` (``text``, the request as sent, is not read:
    the estimate counts what the model is shown, not the JSON around it)."""
    del text
    quarters = 0
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else ():
        if isinstance(message, Mapping):
            quarters += _PER_MESSAGE + _message_quarters(message, role=True)
    tools = body.get("tools")
    for tool in tools if isinstance(tools, list) else ():
        quarters += _PER_TOOL
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping):
            quarters += _quarters(str(function.get("name", "")))
            quarters += _quarters(_json(function.get("parameters", {})))
    return -(-quarters // _QUARTER)


def _message_quarters(message: Mapping[str, Any], *, role: bool = False) -> int:
    calls = message.get("tool_calls")
    per_call = _PER_CALL * len(calls) if isinstance(calls, list) else 0
    return per_call + sum(_quarters(text) for text in _message_texts(message, role=role))


def _message_texts(message: Mapping[str, Any], *, role: bool = False) -> Iterator[str]:
    if role:
        yield str(message.get("role", ""))
    content = message.get("content")
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        yield from (str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping):
            yield str(function.get("name", ""))
            arguments = function.get("arguments", "")
            yield arguments if isinstance(arguments, str) else _json(arguments)


def _json(value: Any) -> str:
    """JSON as a chat template shows it (``json.dumps`` with its default separators)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
