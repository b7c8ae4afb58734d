"""``python -m pytest_diageval.llama_shim``: llama-cpp-python's server, made OpenAI-conformant.

Runs only inside the local model server's process (the ``local`` extra); nothing else imports
it. llama-cpp-python 0.3.36's ``chatml-function-calling`` handler departs from the OpenAI
protocol in four ways that make an agent loop impossible, so this module registers a
corrected handler, ``diageval-chatml-tools``, and starts the stock server with it:

1. tools sent without ``tool_choice`` are left out of the prompt (OpenAI's default is
   ``"auto"``): the handler defaults it to ``"auto"``;
2. ``role: tool`` messages render empty, so the model never sees a tool result: they are
   passed as user messages holding the same text;
3. the chat template HTML-escapes every message (``<user_query>`` arrives as
   ``&lt;user_query&gt;``): autoescape is switched off;
4. an assistant turn with ``content: null`` and ``tool_calls`` is rejected with HTTP 500:
   the request model accepts ``null``, as OpenAI does.

It also caps each completion at :data:`MAX_TOKENS` tokens: a 270M model under a JSON grammar
generates about one token a second here, and an answer that long is never a better answer.
The requests a recording sends are exactly those sent to any hosted endpoint; only the
server behaves better.
"""

from __future__ import annotations

import sys
from typing import Any, NotRequired

import jinja2
import llama_cpp.llama_chat_format as chat_format
import llama_cpp.llama_types as llama_types

__all__ = ["CHAT_FORMAT", "MAX_TOKENS", "handler", "main"]

CHAT_FORMAT = "diageval-chatml-tools"
MAX_TOKENS = 384

# Before llama_cpp.server builds its request models from these TypedDicts.
llama_types.ChatCompletionRequestAssistantMessage.__annotations__["content"] = NotRequired[
    str | None
]


class _Jinja2WithoutAutoescape:
    """The jinja2 module as the chat format sees it, with autoescape always off."""

    def __getattr__(self, name: str) -> Any:
        return getattr(jinja2, name)

    @staticmethod
    def select_autoescape(*args: Any, **kwargs: Any) -> bool:
        return False


chat_format.jinja2 = _Jinja2WithoutAutoescape()
_stock_handler = chat_format.chatml_function_calling


def handler(
    llama: Any,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    tool_choice: Any = None,
    max_tokens: int | None = None,
    **kwargs: Any,
) -> Any:
    if tools and tool_choice is None:
        tool_choice = "auto"
    messages = [
        {"role": "user", "content": message.get("content") or ""}
        if message["role"] == "tool"
        else message
        for message in messages
    ]
    capped = MAX_TOKENS if max_tokens is None else min(max_tokens, MAX_TOKENS)
    return _stock_handler(
        llama, messages, tools=tools, tool_choice=tool_choice, max_tokens=capped, **kwargs
    )


chat_format.LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(
    CHAT_FORMAT, handler, overwrite=True
)


def main() -> None:
    from llama_cpp.server.__main__ import main as server_main

    sys.argv[0] = "llama_cpp.server"
    server_main()


if __name__ == "__main__":
    main()
