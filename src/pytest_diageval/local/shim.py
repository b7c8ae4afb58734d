"""``python -m pytest_diageval.local.shim``: llama-cpp-python's server, conformant and bounded.

Runs only inside the local model server's process (the ``local`` extra); nothing else imports
it. llama-cpp-python 0.3.36's ``chatml-function-calling`` handler cannot carry an agent loop:
it drops tools sent without ``tool_choice``, renders ``role: tool`` messages empty,
HTML-escapes every message, rejects ``tool_choice: "required"``, generates the arguments of an
``"auto"`` call without any token limit (and then loops for more calls), ignores an integer's
``minimum``/``maximum`` in its grammar and has no time bound; its ChatML turn markers are
ordinary text to Gemma, and it never shows the model a tool's description. This module
registers its own handler, ``diageval-gemma-tools``, and starts the stock server with it. The
handler prompts in Gemma 3's own chat template with the tools described in the first user
turn; everything it decides without the model is in :mod:`pytest_diageval.local.chat` (tested
in CI):

* no tools or ``tool_choice: "none"``: a plain completion (``response_format`` is honoured by a
  grammar: OpenAI's ``json_schema``, llama.cpp's ``json_object`` with or without a
  ``schema``);
* ``"auto"`` (also tools without a choice, OpenAI's default): a grammar makes the model pick
  ``functions.<name>:`` or ``message:``, then it generates that;
* ``"required"``: the same pick among the offered functions only;
* ``{"type": "function", "function": {"name": …}}``: that function;
* a call's arguments are generated under the grammar ``LlamaGrammar.from_json_schema`` makes
  of the parameters, with small bounded integers and numbers bounded within [0, 1] turned into
  enums (the converter ignores the bounds), every free-text string bounded in length
  (``core.contract.text_bounds``: a model repeating a phrase ends the string there) and a
  string's characters JSON's own (the converter's strings take raw control characters,
  newlines too), and the answer carries exactly one tool call (id ``call_1``);
* a plain message (``message:``, or no tools and no grammar) is bounded too, at
  ``MESSAGE_CHARS`` characters.

Every generation is bounded twice: the request's ``max_tokens``, capped at
:data:`MAX_TOKENS`, and a wall-clock deadline of ``DIAGEVAL_GENERATION_TIMEOUT`` seconds per
request (default 180, read at start), enforced by a llama ``stopping_criteria``. A bounded
answer reports ``finish_reason: "length"``. The request model also accepts an assistant turn
with ``content: null`` and ``tool_calls``, as OpenAI does (the stock one answers HTTP 500).
The requests a recording sends are exactly those sent to any hosted endpoint; only the server
behaves better.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from typing import Any

import llama_cpp.llama_chat_format as chat_format
from llama_cpp.llama import StoppingCriteriaList
from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar, json_schema_to_gbnf

from pytest_diageval.local import sampling as llama_sampling
from pytest_diageval.local.chat import (
    END_OF_TURN,
    MESSAGE_PREFIX,
    Envelope,
    ToolPlan,
    bounded_grammar,
    function_prefix,
    grammar_schema,
    message_grammar,
    message_response,
    name_choice_grammar,
    parse_choice,
    plan_tool_choice,
    render_prompt,
    strict_string_grammar,
    timeout_from_env,
    tool_call_response,
)
from pytest_diageval.local.llama_adapter import accept_openai_request_forms, use_lean_prompt_cache

__all__ = ["CHAT_FORMAT", "GENERATION_TIMEOUT", "MAX_TOKENS", "handler", "main"]

CHAT_FORMAT = "diageval-gemma-tools"
# An evidence contract needs several hundred tokens; an answer longer than this is never a
# better one (and under a JSON grammar a 270M model makes about one token a second here).
MAX_TOKENS = 2048
NAME_CHOICE_TOKENS = 32  # `functions.<name>:` is a handful of tokens
GENERATION_TIMEOUT = timeout_from_env(os.environ)
# What llama's completion takes from a chat request unchanged (the model: the name it reports).
COMPLETION_KEYS = (
    "model",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "typical_p",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "repeat_penalty",
    "tfs_z",
    "mirostat_mode",
    "mirostat_tau",
    "mirostat_eta",
    "logits_processor",
    "logit_bias",
)

# Greedy grammar sampling checks the best token first (llama.cpp's shortcut): see the module.
if os.environ.get("DIAGEVAL_STOCK_GRAMMAR_SAMPLER") != "1":  # 1: the stock sampler, to compare
    llama_sampling.install()

# Before llama_cpp.server builds its request models from these TypedDicts.
accept_openai_request_forms()
# Before the server builds its prompt cache (serve-local --prompt-cache-mb).
use_lean_prompt_cache()


class _Request:
    """One chat request: the sampler settings, the stop strings, the token cap and the deadline."""

    def __init__(self, llama: Any, kwargs: dict[str, Any], max_tokens: int | None) -> None:
        self.llama = llama
        self.sampling = {key: kwargs[key] for key in COMPLETION_KEYS if kwargs.get(key) is not None}
        stop = kwargs.get("stop") or []
        self.stop = [stop, END_OF_TURN] if isinstance(stop, str) else [*stop, END_OF_TURN]
        self.max_tokens = MAX_TOKENS if max_tokens is None else max(1, min(max_tokens, MAX_TOKENS))
        self.deadline = time.monotonic() + GENERATION_TIMEOUT
        self.generated_tokens = 0  # over every completion of this request, the name pick too

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def complete(
        self, prompt: str, grammar: Any, *, max_tokens: int | None = None, stop: Any = None
    ) -> dict[str, Any]:
        past_deadline = StoppingCriteriaList([lambda _ids, _logits: self.expired()])
        result: dict[str, Any] = self.llama.create_completion(
            prompt=prompt,
            max_tokens=max_tokens or self.max_tokens,
            stop=self.stop if stop is None else stop,
            grammar=grammar,
            stopping_criteria=past_deadline,
            stream=False,
            **self.sampling,
        )
        self.generated_tokens += int((result.get("usage") or {}).get("completion_tokens", 0))
        return result

    def answer(self, completion: dict[str, Any], text: str, name: str | None) -> dict[str, Any]:
        choice = completion["choices"][0]
        cut_off = choice.get("finish_reason") == "length" or self.expired()
        usage = completion.get("usage") or {}
        envelope = Envelope(
            completion_id=str(completion["id"]),
            created=int(completion["created"]),
            model=str(completion["model"]),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=self.generated_tokens,
        )
        if name is None:
            return message_response(text, cut_off=cut_off, envelope=envelope)
        return tool_call_response(name, text, cut_off=cut_off, envelope=envelope)


def _arguments_grammar(llama: Any, parameters: Any) -> Any:
    try:
        gbnf = json_schema_to_gbnf(json.dumps(grammar_schema(parameters)))
    except Exception:  # a schema the converter cannot take: any JSON still beats free text
        return LlamaGrammar.from_string(JSON_GBNF, verbose=llama.verbose)
    # Free text within its bound; the converter's strings take raw newlines (not JSON): JSON's
    # own string characters.
    return LlamaGrammar.from_string(
        strict_string_grammar(bounded_grammar(gbnf)), verbose=llama.verbose
    )


def _message_grammar(llama: Any) -> Any:
    return LlamaGrammar.from_string(message_grammar(), verbose=llama.verbose)


def _response_format_grammar(llama: Any, response_format: Any) -> Any:
    if not isinstance(response_format, dict):
        return None
    if response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema")
        return _arguments_grammar(llama, schema) if schema is not None else None
    if response_format.get("type") == "json_object":
        schema = response_format.get("schema")
        if schema is not None:
            return _arguments_grammar(llama, schema)
        return LlamaGrammar.from_string(JSON_GBNF, verbose=llama.verbose)
    return None


def _choose(request: _Request, prompt: str, plan: ToolPlan) -> str | None:
    """The function the model picks under the name grammar (``None``: a message)."""
    if plan.kind == "call":
        return plan.names[0]
    grammar = LlamaGrammar.from_string(
        name_choice_grammar(plan.names, allow_message=plan.allow_message),
        verbose=request.llama.verbose,
    )
    picked = request.complete(prompt, grammar, max_tokens=NAME_CHOICE_TOKENS, stop=[])
    return parse_choice(picked["choices"][0]["text"], plan)


def handler(
    llama: Any,
    messages: list[dict[str, Any]],
    functions: list[dict[str, Any]] | None = None,
    tools: list[dict[str, Any]] | None = None,
    tool_choice: Any = None,
    max_tokens: int | None = None,
    stream: bool = False,
    response_format: Any = None,
    grammar: Any = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """The ``diageval-gemma-tools`` chat handler (see the module docstring)."""
    if stream:
        raise ValueError(f"{CHAT_FORMAT} does not stream; send stream=false")
    if not tools and functions:
        tools = [{"type": "function", "function": function} for function in functions]
    request = _Request(llama, kwargs, max_tokens)
    plan = plan_tool_choice(tools, tool_choice)
    if plan.kind == "text":
        prompt = render_prompt(messages, None)
        text_grammar = (
            grammar or _response_format_grammar(llama, response_format) or _message_grammar(llama)
        )
        completion = request.complete(prompt, text_grammar)
        return request.answer(completion, completion["choices"][0]["text"], None)
    assert tools is not None  # a plan other than "text" has tools
    prompt = render_prompt(messages, tools)
    name = _choose(request, prompt, plan)
    if name is None:
        completion = request.complete(f"{prompt}{MESSAGE_PREFIX}\n", _message_grammar(llama))
        return request.answer(completion, completion["choices"][0]["text"], None)
    tool = next(tool for tool in tools if tool["function"]["name"] == name)
    completion = request.complete(
        f"{prompt}{function_prefix(name)}\n",
        _arguments_grammar(llama, tool["function"].get("parameters", {})),
    )
    return request.answer(completion, completion["choices"][0]["text"], name)


# Typed as Any: llama_cpp's handler protocol and server entry point are partly untyped, and
# mypy runs with and without llama_cpp installed.
_registry: Any = chat_format.LlamaChatCompletionHandlerRegistry
_registry().register_chat_completion_handler(CHAT_FORMAT, handler, overwrite=True)


def main() -> None:
    server: Any = importlib.import_module("llama_cpp.server.__main__")
    sys.argv[0] = "llama_cpp.server"
    server.main()


if __name__ == "__main__":
    main()
