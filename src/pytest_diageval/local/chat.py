"""The local server's chat logic, without llama.cpp: prompt, grammars and the OpenAI response.

:mod:`pytest_diageval.local.shim` runs inside the local model server and needs
``llama_cpp``; everything it decides that can be decided without a model lives here, so CI
tests it without the ``local`` extra:

* :func:`render_prompt`: the ChatML function-calling prompt, the same shape as
  llama-cpp-python's stock ``chatml-function-calling`` template (the system prompt, then
  "You have access to the following functions" with each tool's ``functions.<name>:`` and its
  parameters as JSON), but tool results are user turns holding their text, nothing is
  HTML-escaped and the tools are shown even when there is no system message;
* :func:`plan_tool_choice`: what ``tool_choice`` asks for: plain text, a choice among the
  offered functions (``"required"``, and ``"message:"`` besides for ``"auto"``), or one function;
* :func:`name_choice_grammar` / :func:`parse_choice`: the GBNF that makes the model pick a
  function name (or ``message:``), and reading the pick back;
* :func:`grammar_schema`: the parameters schema as the grammar sees it. llama.cpp's JSON-schema
  converter ignores an integer's ``minimum``/``maximum`` (a model sent ``limit:
  2000000000000000``), so a bounded integer of at most :data:`MAX_ENUM_RANGE` values becomes an
  ``enum`` of them. The prompt keeps showing the schema as sent;
* :func:`tool_call_response` / :func:`message_response`: the ``chat.completion`` answer, with
  exactly one tool call (id ``call_1``) or one message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "DEFAULT_GENERATION_TIMEOUT",
    "GENERATION_TIMEOUT_ENV",
    "MAX_ENUM_RANGE",
    "MESSAGE_PREFIX",
    "TOOL_CALL_ID",
    "Envelope",
    "ToolPlan",
    "function_prefix",
    "grammar_schema",
    "message_response",
    "name_choice_grammar",
    "parse_choice",
    "plan_tool_choice",
    "render_prompt",
    "text_of",
    "timeout_from_env",
    "tool_call_response",
]

MAX_ENUM_RANGE = 256  # a wider integer range would make the grammar itself the bottleneck
MESSAGE_PREFIX = "message:"
TOOL_CALL_ID = "call_1"  # one call per response, so the id needs no randomness
# Seconds one request may generate before the server answers with what it has.
GENERATION_TIMEOUT_ENV = "DIAGEVAL_GENERATION_TIMEOUT"
DEFAULT_GENERATION_TIMEOUT = 180.0

_FORMAT_TEXT = (
    "\n\nYou can respond to users messages with either a single message or one or more"
    " function calls."
    "\n\nTo respond with a message begin the message with 'message:', use the following format:"
    "\n\nmessage:"
    "\n<message>"
    "\n\nTo respond with one or more function calls begin the message with"
    " 'functions.<function_name>:', use the following format:"
    "\n\nfunctions.<function_name>:"
    '\n{ "arg1": "value1", "arg2": "value2" }'
    "\nfunctions.<function_name>:"
    '\n{ "arg1": "value1", "arg2": "value2" }'
)


def timeout_from_env(environ: Mapping[str, str]) -> float:
    """The generation timeout from :data:`GENERATION_TIMEOUT_ENV`, or the default; a value that
    is not a positive number is a ``ValueError`` naming the variable."""
    raw = environ.get(GENERATION_TIMEOUT_ENV)
    if raw is None or raw.strip() == "":
        return DEFAULT_GENERATION_TIMEOUT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"{GENERATION_TIMEOUT_ENV}={raw!r}: expected a positive number of seconds")
    return seconds


# ------------------------------------------------------------------ prompt


def function_prefix(name: str) -> str:
    """``functions.<name>:``, the line that opens a call in the prompt and in the grammar."""
    return f"functions.{name}:"


def text_of(content: Any) -> str:
    """A message's text: a string as is, OpenAI content parts joined, ``None`` as empty."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return str(content)


def _tools_text(tools: Sequence[Mapping[str, Any]]) -> str:
    listed = "".join(
        f"\n{function_prefix(tool['function']['name'])}\n"
        f"{json.dumps(tool['function'].get('parameters', {}), ensure_ascii=False)}\n"
        for tool in tools
    )
    return f"\n\nYou have access to the following functions:\n{listed}{_FORMAT_TEXT}"


def _assistant_text(message: Mapping[str, Any], with_tools: bool) -> str:
    calls = message.get("tool_calls") or []
    if calls:
        return "\n".join(
            f"{function_prefix(call['function']['name'])}\n{call['function']['arguments']}"
            for call in calls
        )
    content = text_of(message.get("content"))
    return f"{MESSAGE_PREFIX}\n{content}" if with_tools else content


def _turn(role: str, text: str) -> str:
    return f"<|im_start|>{role}\n{text}<|im_end|>\n"


def render_prompt(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
) -> str:
    """The ChatML prompt, ending with the opened assistant turn the model completes."""
    with_tools = bool(tools)
    tools_text = _tools_text(tools) if tools else ""
    turns: list[str] = []
    if with_tools and not any(message["role"] == "system" for message in messages):
        turns.append(_turn("system", tools_text.lstrip("\n")))
    for message in messages:
        role = message["role"]
        if role == "system":
            turns.append(_turn("system", text_of(message.get("content")) + tools_text))
        elif role == "assistant":
            turns.append(_turn("assistant", _assistant_text(message, with_tools)))
        else:  # user, and tool results, which the model reads as the user's next turn
            turns.append(_turn("user", text_of(message.get("content"))))
    return "".join(turns) + "<|im_start|>assistant\n"


# ------------------------------------------------------------------ tool choice


@dataclass(frozen=True)
class ToolPlan:
    """What to generate: ``text``; ``choose`` among ``names`` (and a message if allowed); or
    ``call`` the one function in ``names``."""

    kind: Literal["text", "choose", "call"]
    names: tuple[str, ...] = ()
    allow_message: bool = False


def plan_tool_choice(tools: Sequence[Mapping[str, Any]] | None, tool_choice: Any) -> ToolPlan:
    """The plan for ``tools`` and ``tool_choice`` as OpenAI defines them (tools without a
    choice mean ``"auto"``); a choice naming no offered function is a ``ValueError``."""
    if not tools or tool_choice == "none":
        return ToolPlan("text")
    names = tuple(str(tool["function"]["name"]) for tool in tools)
    if tool_choice is None or tool_choice == "auto":
        return ToolPlan("choose", names, allow_message=True)
    if tool_choice == "required":
        return ToolPlan("choose", names)
    if isinstance(tool_choice, Mapping):
        name = (tool_choice.get("function") or {}).get("name")
        if name in names:
            return ToolPlan("call", (str(name),))
        raise ValueError(f"tool_choice names {name!r}, which is not among the tools {names}")
    raise ValueError(
        f"tool_choice {tool_choice!r} is not one of 'none', 'auto', 'required' or a function"
    )


def name_choice_grammar(names: Sequence[str], *, allow_message: bool) -> str:
    """GBNF whose only sentences are ``functions.<name>:`` (and ``message:`` if allowed)."""
    options = [json.dumps(function_prefix(name)) for name in names]
    if allow_message:
        options.append(json.dumps(MESSAGE_PREFIX))
    return f"root ::= {' | '.join(options)}\n"


def parse_choice(text: str, plan: ToolPlan) -> str | None:
    """The function the model picked, ``None`` for a message.

    Only a generation cut short by the deadline leaves a text that is neither; a ``choose``
    without a message then takes the first function, whose arguments stop at once and are
    reported as cut off.
    """
    picked = text.strip().removesuffix(":")
    for name in plan.names:
        if picked == function_prefix(name).removesuffix(":"):
            return name
    if plan.kind == "call" or not plan.allow_message:
        return plan.names[0]
    return None


# ------------------------------------------------------------------ grammar schema


def _bounded_integer_enum(schema: Mapping[str, Any]) -> list[int] | None:
    if schema.get("type") != "integer" or "enum" in schema or "const" in schema:
        return None
    low, high = schema.get("minimum"), schema.get("maximum")
    if not isinstance(low, int) or not isinstance(high, int) or high < low:
        return None
    if isinstance(schema.get("exclusiveMinimum"), int):
        low = max(low, schema["exclusiveMinimum"] + 1)
    if isinstance(schema.get("exclusiveMaximum"), int):
        high = min(high, schema["exclusiveMaximum"] - 1)
    if high - low + 1 > MAX_ENUM_RANGE or high < low:
        return None
    return list(range(low, high + 1))


def grammar_schema(schema: Any) -> Any:
    """``schema`` with every integer bounded to at most :data:`MAX_ENUM_RANGE` values turned into
    an ``enum`` of them, at any depth; everything else unchanged (a new object, the input is
    not modified)."""
    if isinstance(schema, list):
        return [grammar_schema(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    converted = {key: grammar_schema(value) for key, value in schema.items()}
    values = _bounded_integer_enum(schema)
    if values is not None:
        for bound in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            converted.pop(bound, None)
        converted["enum"] = values
    return converted


# ------------------------------------------------------------------ response


@dataclass(frozen=True)
class Envelope:
    """What an answer carries besides its message: llama.cpp's id, time and model, and the
    token counts."""

    completion_id: str
    created: int
    model: str
    prompt_tokens: int
    completion_tokens: int

    def completion(self, message: dict[str, Any], finish_reason: str) -> dict[str, Any]:
        """A ``chat.completion`` of one choice."""
        return {
            "id": f"chat{self.completion_id}",
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
            ],
            "usage": {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
            },
        }


def tool_call_response(
    name: str, arguments: str, *, cut_off: bool, envelope: Envelope
) -> dict[str, Any]:
    """A ``chat.completion`` with one call of ``name``; ``finish_reason`` is ``"length"`` when
    ``cut_off`` (token cap or deadline), as OpenAI reports truncated arguments."""
    call = {
        "id": TOOL_CALL_ID,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return envelope.completion(message, "length" if cut_off else "tool_calls")


def message_response(text: str, *, cut_off: bool, envelope: Envelope) -> dict[str, Any]:
    """A ``chat.completion`` whose answer is the message ``text``."""
    return envelope.completion(
        {"role": "assistant", "content": text}, "length" if cut_off else "stop"
    )
