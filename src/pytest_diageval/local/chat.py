"""The local server's chat logic, without llama.cpp: prompt, grammars and the OpenAI response.

:mod:`pytest_diageval.local.shim` runs inside the local model server and needs
``llama_cpp``; everything it decides that can be decided without a model lives here, so CI
tests it without the ``local`` extra:

* :func:`render_prompt`: the prompt in Gemma 3's own chat template (Google's
  ``tokenizer_config.json``; the GGUF carries no ``tokenizer.chat_template``):
  ``<start_of_turn>user\n…<end_of_turn>\n`` and ``<start_of_turn>model\n…``, each marker one
  special token to Gemma. Gemma has no system role: the system text opens the first user
  turn, followed by a blank line, as the template does; turns alternate (consecutive turns of
  one role are joined, tool results are user turns holding their text). The tools are
  described there too, after the system text: "You have access to the following functions",
  each tool's ``functions.<name>:`` line, its description and its parameters as JSON, then
  how to answer (``message:``, or ``functions.<name>:`` and the arguments as JSON). A function
  in :data:`LATE_FUNCTIONS` is named and described at the end of the last user turn instead,
  without its parameters: its schema lists this conversation's calls and changes after each
  one, and llama.cpp reads again only what follows the first change, so everything before it
  stays a prefix of the next turn's prompt. Its schema (types, enums and consts, no
  description of its own) is what the grammar enforces while it is written, so the prompt need
  not spell it out. Nothing is HTML-escaped; the prompt ends with the opened
  model turn the model completes. The tokenizer adds ``<bos>`` itself;
* :func:`plan_tool_choice`: what ``tool_choice`` asks for: plain text, a choice among the
  offered functions (``"required"``, and ``"message:"`` besides for ``"auto"``), or one function;
* :func:`name_choice_grammar` / :func:`parse_choice`: the GBNF that makes the model pick a
  function name (or ``message:``), and reading the pick back;
* :func:`grammar_schema`: the parameters schema as the grammar sees it. llama.cpp's JSON-schema
  converter ignores an integer's ``minimum``/``maximum`` (a model sent ``limit:
  2000000000000000``), so a bounded integer of at most :data:`MAX_ENUM_RANGE` values becomes an
  ``enum`` of them, and a number bounded within [0, 1] (a score) an ``enum`` of the tenths in
  its bounds; every free-text string a marker of its bound. The prompt keeps showing the
  schema as sent;
* :func:`bounded_grammar` / :func:`message_grammar`: every free-text string, and a plain
  message, ends at its bound (``core.contract.text_bounds``), carried by blocks of 16
  characters and a tail instead of a rule per character;
* :func:`strict_string_grammar`: the converter's grammar with JSON's own string characters.
  llama-cpp-python 0.3.36's converter (unlike llama.cpp's) lets a string hold any character but
  ``"`` and ``\\``, so a model wrote raw newlines into a string and the arguments were not JSON;
* :func:`tool_call_response` / :func:`message_response`: the ``chat.completion`` answer, with
  exactly one tool call (id ``call_1``) or one message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pytest_diageval.core.contract.contract_schema import SUBMIT_CONTRACT_FUNCTION
from pytest_diageval.core.contract.text_bounds import (
    MESSAGE_CHARS,
    TEXT_BLOCK,
    is_free_text,
    text_bound,
)

__all__ = [
    "DEFAULT_GENERATION_TIMEOUT",
    "END_OF_TURN",
    "GENERATION_TIMEOUT_ENV",
    "LATE_FUNCTIONS",
    "LAX_STRING_CHAR",
    "MAX_ENUM_RANGE",
    "MESSAGE_PREFIX",
    "NUMBER_ENUM_STEPS",
    "START_OF_TURN",
    "STRICT_STRING_CHAR",
    "TOOL_CALL_ID",
    "Envelope",
    "ToolPlan",
    "bounded_grammar",
    "bounded_text_rules",
    "function_prefix",
    "grammar_schema",
    "message_grammar",
    "message_response",
    "name_choice_grammar",
    "parse_choice",
    "plan_tool_choice",
    "render_prompt",
    "strict_string_grammar",
    "text_of",
    "timeout_from_env",
    "tool_call_response",
]

MAX_ENUM_RANGE = 256  # a wider integer range would make the grammar itself the bottleneck
NUMBER_ENUM_STEPS = 10  # a number bounded within [0, 1] takes the tenths in its bounds
MESSAGE_PREFIX = "message:"
# Gemma's turn markers: one special token each (ids 105 and 106 in Gemma 3's vocabulary).
START_OF_TURN = "<start_of_turn>"
END_OF_TURN = "<end_of_turn>"
TOOL_CALL_ID = "call_1"  # one call per response, so the id needs no randomness
# Seconds one request may generate before the server answers with what it has.
GENERATION_TIMEOUT_ENV = "DIAGEVAL_GENERATION_TIMEOUT"
DEFAULT_GENERATION_TIMEOUT = 180.0

# Functions whose schema grows with the conversation (the evidence contract cites its calls):
# described after the conversation, so a turn's prompt is the previous turn's plus the new turns.
LATE_FUNCTIONS = (SUBMIT_CONTRACT_FUNCTION,)
_LATE_TEXT = "You also have access to this function:\n"

# One call or one message per answer: the handler generates exactly one.
_FORMAT_TEXT = (
    "\nRespond with either one message or one function call."
    "\n\nTo respond with a message, begin with 'message:':"
    "\n\nmessage:"
    "\n<message>"
    "\n\nTo call a function, begin with 'functions.<function_name>:' and give its arguments"
    " as JSON:"
    "\n\nfunctions.<function_name>:"
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


def _tool_text(function: Mapping[str, Any], *, with_parameters: bool = True) -> str:
    description = str(function.get("description") or "").strip()
    parameters = json.dumps(function.get("parameters", {}), ensure_ascii=False)
    described = f"{description}\n" if description else ""
    listed = f"Parameters: {parameters}\n" if with_parameters else ""
    return f"\n{function_prefix(function['name'])}\n{described}{listed}"


def _tools_text(tools: Sequence[Mapping[str, Any]]) -> str:
    listed = "".join(_tool_text(tool["function"]) for tool in tools)
    return f"You have access to the following functions:\n{listed}{_FORMAT_TEXT}"


def _assistant_text(message: Mapping[str, Any], with_tools: bool) -> str:
    calls = message.get("tool_calls") or []
    if calls:
        return "\n".join(
            f"{function_prefix(call['function']['name'])}\n{call['function']['arguments']}"
            for call in calls
        )
    content = text_of(message.get("content"))
    return f"{MESSAGE_PREFIX}\n{content}" if with_tools else content


def _turns(messages: Sequence[Mapping[str, Any]], with_tools: bool) -> list[tuple[str, str]]:
    """``(role, text)`` in Gemma's roles, alternating: a turn of the same role as the one
    before it (two tool results, a tool result and the next question) joins that one."""
    turns: list[tuple[str, str]] = []
    for message in messages:
        if message["role"] == "assistant":
            role, text = "model", _assistant_text(message, with_tools)
        else:  # user, tool results and a later system message: what the model reads
            role, text = "user", text_of(message.get("content"))
        text = text.strip()  # the template trims every message
        if turns and turns[-1][0] == role:
            turns[-1] = (role, f"{turns[-1][1]}\n\n{text}")
        else:
            turns.append((role, text))
    return turns


def render_prompt(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
) -> str:
    """The Gemma prompt, ending with the opened model turn the model completes."""
    with_tools = bool(tools)
    system = ""
    if messages and messages[0]["role"] == "system":
        system, messages = text_of(messages[0].get("content")), messages[1:]
    early = [tool for tool in tools or () if tool["function"]["name"] not in LATE_FUNCTIONS]
    late = [tool for tool in tools or () if tool["function"]["name"] in LATE_FUNCTIONS]
    listed = _tools_text(early) if tools else ""
    opening = "\n\n".join(part for part in (system, listed) if part)
    turns = _turns(messages, with_tools)
    if opening:
        if not turns or turns[0][0] != "user":
            turns.insert(0, ("user", ""))
        # As Gemma's template: the system text, a blank line, then the first user message.
        first = f"{opening}\n\n{turns[0][1]}" if turns[0][1] else opening
        turns[0] = ("user", first)
    if late:
        if turns[-1][0] != "user":
            turns.append(("user", ""))
        described = "".join(_tool_text(t["function"], with_parameters=False) for t in late)
        turns[-1] = ("user", f"{turns[-1][1]}\n\n{_LATE_TEXT}{described}".strip("\n"))
    rendered = "".join(f"{START_OF_TURN}{role}\n{text}{END_OF_TURN}\n" for role, text in turns)
    return f"{rendered}{START_OF_TURN}model\n"


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


def _bounded_unit_number_enum(schema: Mapping[str, Any]) -> list[float] | None:
    if schema.get("type") != "number" or "enum" in schema or "const" in schema:
        return None
    low, high = _number(schema, "minimum"), _number(schema, "maximum")
    if low is None or high is None or not 0 <= low <= high <= 1:
        return None
    above, below = _number(schema, "exclusiveMinimum"), _number(schema, "exclusiveMaximum")
    values = [
        value
        for value in (step / NUMBER_ENUM_STEPS for step in range(NUMBER_ENUM_STEPS + 1))
        if low <= value <= high
        and (above is None or value > above)
        and (below is None or value < below)
    ]
    return values or None


def _number(schema: Mapping[str, Any], key: str) -> float | None:
    """``schema[key]`` when it is a number (not a boolean), else ``None``."""
    value = schema.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def grammar_schema(schema: Any, name: str = "") -> Any:
    """``schema`` as the grammar sees it, at any depth: every integer bounded to at most
    :data:`MAX_ENUM_RANGE` values an ``enum`` of them, every number bounded within [0, 1] an
    ``enum`` of the tenths within its bounds (``0.0``, ``0.1``, … ``1.0``), every free-text
    string a marker of its bound (``core.contract.text_bounds``) that :func:`bounded_grammar`
    turns into the bounded rule; everything else unchanged (a new object, the input is not
    modified). ``name`` is the property the schema is the value of (an array's items and a
    union's arms keep it)."""
    if isinstance(schema, list):
        return [grammar_schema(item, name) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    if is_free_text(schema):
        return {"type": "string", "const": _text_marker(text_bound(name, schema))}
    converted = {
        key: (
            {prop: grammar_schema(sub, prop) for prop, sub in value.items()}
            if key == "properties" and isinstance(value, Mapping)
            else grammar_schema(value, name if key in _SAME_NAME_KEYS else "")
        )
        for key, value in schema.items()
    }
    values: list[int] | list[float] | None = _bounded_integer_enum(schema)
    if values is None:
        values = _bounded_unit_number_enum(schema)
    if values is not None:
        for bound in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            converted.pop(bound, None)
        converted["enum"] = values
    return converted


# Keys whose value is the same property's schema (so it keeps the property's bound).
_SAME_NAME_KEYS = frozenset({"items", "anyOf", "oneOf", "allOf", "prefixItems"})
_MARKER = "@diageval-text-{}@"
_MARKER_LITERAL = re.compile(r'"\\"@diageval-text-(\d+)@\\""')


def _text_marker(bound: int) -> str:
    return _MARKER.format(bound)


def bounded_text_rules(bound: int) -> str:
    """The GBNF rules of a JSON string of at most ``bound`` characters (a multiple of
    :data:`TEXT_BLOCK`), named ``text-<bound>``: up to ``bound / 16 - 1`` blocks of 16 and a
    tail of at most 16, about ``bound / 16 + 16`` rules where a ``maxLength`` makes ``bound``."""
    if bound < TEXT_BLOCK or bound % TEXT_BLOCK:
        raise ValueError(f"a text bound is a positive multiple of {TEXT_BLOCK}, got {bound}")
    return f'text-{bound} ::= "\\"" {_up_to(bound, "text")} "\\"" text-space\n'


def _up_to(bound: int, prefix: str) -> str:
    """Zero to ``bound`` of ``<prefix>-char``: up to ``bound / 16 - 1`` of ``<prefix>-block``
    (16 characters), then a tail of up to 16 characters; nested optionals, the converter's own
    form (``(a (a (a)?)?)?``)."""

    def optional(item: str, count: int) -> str:
        return (f"({item} " * count).rstrip() + (")?" * count) if count else ""

    blocks = optional(f"{prefix}-block", bound // TEXT_BLOCK - 1)
    tail = optional(f"{prefix}-char", TEXT_BLOCK)
    return f"{blocks} {tail}".strip()


def _block_rule(prefix: str) -> str:
    return f"{prefix}-block ::= {' '.join([f'{prefix}-char'] * TEXT_BLOCK)}\n"


def bounded_grammar(gbnf: str) -> str:
    """The converter's GBNF ``gbnf`` with each free-text marker (:func:`grammar_schema`) made
    its bounded string rule, and the rules those need. Raises ``ValueError`` when a marker is
    left (another converter writes constants otherwise)."""
    bounds = sorted({int(found) for found in _MARKER_LITERAL.findall(gbnf)})
    bounded = _MARKER_LITERAL.sub(lambda match: f"text-{match.group(1)}", gbnf)
    if "@diageval-text-" in bounded:
        raise ValueError(
            "the grammar converter wrote a free-text marker in an unknown form (the local"
            " server patches llama-cpp-python 0.3.36's; install that release:"
            " pip install 'pytest-diageval[local]')"
        )
    if not bounds:
        return bounded
    rules = "".join(bounded_text_rules(bound) for bound in bounds)
    return (
        f"{bounded.rstrip()}\n{rules}{_block_rule('text')}"
        f'text-char ::= {STRICT_STRING_CHAR}\ntext-space ::= " "?\n'
    )


def message_grammar(bound: int = MESSAGE_CHARS) -> str:
    """GBNF of a plain message of at most ``bound`` characters (any but NUL)."""
    return (
        f"root ::= {_up_to(bound, 'message')}\n{_block_rule('message')}message-char ::= [^\\x00]\n"
    )


# One character of a JSON string as a GBNF rule body. llama-cpp-python 0.3.36's converter
# writes the lax one (its ``char`` rule): anything but `"` and `\`, raw newlines and other
# control characters too. The strict one is JSON's own (and llama.cpp's converter's): no control
# character (U+0000 to U+001F) and no DEL unescaped.
_STRING_ESCAPE = r'"\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'
LAX_STRING_CHAR = rf'[^"\\] | {_STRING_ESCAPE}'
STRICT_STRING_CHAR = rf'[^"\\\x7F\x00-\x1F] | {_STRING_ESCAPE}'


def strict_string_grammar(gbnf: str) -> str:
    """The converter's GBNF ``gbnf`` with every string character rule JSON's own: a string
    holds no raw control character (a newline is written ``\\n``), as JSON requires.

    Raises ``ValueError`` for a ``char`` rule that is neither: another converter's (another
    llama-cpp-python release) would otherwise keep its own rule without a word."""
    strict = gbnf.replace(LAX_STRING_CHAR, STRICT_STRING_CHAR)
    for rule in re.findall(r"^char ::= (.*)$", strict, flags=re.MULTILINE):
        if rule != STRICT_STRING_CHAR:
            raise ValueError(
                f"unknown string rule from the grammar converter: char ::= {rule} (the local"
                " server patches llama-cpp-python 0.3.36's; install that release:"
                " pip install 'pytest-diageval[local]')"
            )
    return strict


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
