"""The scripted model's token usage: one token per four characters of JSON, rounded up.

Only an estimate (no tokenizer is involved), but a deterministic one, so a scripted
scenario's token budget catches a prompt that grows. A request's prompt tokens are the
estimate of its ``messages`` and ``tools``; an answer's completion tokens that of its message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_diageval.core.evidence.store import stable_json

__all__ = ["PROMPT_KEYS", "estimated_tokens", "prompt_tokens"]

PROMPT_KEYS = ("messages", "tools")
"""The members of a request that its prompt tokens count."""


def estimated_tokens(value: Any) -> int:
    """One token per four characters of ``stable_json(value)``, rounded up."""
    return -(-len(stable_json(value)) // 4)


def prompt_tokens(text: str, body: Mapping[str, Any]) -> int:
    """``estimated_tokens({"messages": …, "tools": …})`` of a request, read off its text.

    ``text`` is the request as the openai SDK sends it: compact JSON (``ensure_ascii=False``,
    separators ``,`` and ``:``) of ``body``. Text like that is exactly as long as
    ``stable_json`` of the same value, because sorting keys moves characters and never adds
    any; so the estimate's text is the request's length minus its other members (model,
    max_tokens, tool_choice: a few short values). The messages and tools, most of a request
    and longer with every executor turn, are not serialised again.
    """
    if not body:
        return estimated_tokens(dict.fromkeys(PROMPT_KEYS))
    # An object is '{', its members joined by ',', '}'; a member is '"key":' and its value.
    counted = len(text) - 2 - (len(body) - 1)
    counted -= _members_length({k: v for k, v in body.items() if k not in PROMPT_KEYS})
    absent = {key: None for key in PROMPT_KEYS if key not in body}
    length = 2 + len(PROMPT_KEYS) - 1 + counted + _members_length(absent)
    return -(-length // 4)


def _members_length(members: Mapping[str, Any]) -> int:
    """The characters of an object's members in compact JSON: all but braces and commas."""
    if not members:
        return 0
    return len(stable_json(members)) - 2 - max(len(members) - 1, 0)
