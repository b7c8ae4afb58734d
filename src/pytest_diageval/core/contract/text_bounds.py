"""How long a model's free text may be, and what follows from it: the grammar's bound, the
tokens an answer needs, and which fields an answer filled to their bound.

A *free-text* string is one the model writes freely: a string of a stage's schema with no
``enum``, ``const``, ``pattern`` or ``format`` (a claim's text, an excerpt, a plan step, a
rationale). Each has a bound in characters, read from its property's name
(:data:`TEXT_BOUNDS`, else :data:`DEFAULT_TEXT_CHARS`; a schema's own ``maxLength`` lowers it):

* the local model server writes the bound into its grammar
  (:mod:`pytest_diageval.local.chat`), so a small model that repeats a phrase ends the string at
  its bound instead of at ``max_tokens``. The bound is the server's: the schema a request sends
  is unchanged, so a hosted endpoint sees what it always saw and no cassette goes stale by it;
* :func:`answer_char_bound` is the longest answer the bounded grammar admits, in characters.
  A token is at least one character, so it bounds the tokens too: the client sends it as
  ``max_tokens`` (``agents.llm``), and a bounded answer is never cut mid-string;
* :func:`texts_at_bound` names the fields of an answer that reached their bound: the parse
  status says a bound cut them (a hosted model that wrote exactly that many characters is
  named too; the bound is then only a length).

Bounds are multiples of :data:`TEXT_BLOCK`: the grammar carries a bound of ``n`` characters as
up to ``n / 16 - 1`` blocks of 16 and a tail of at most 16, about ``n / 16 + 16`` rules shared by
every field of that bound, where a ``maxLength`` would expand into ``n`` rules per field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = [
    "DEFAULT_TEXT_CHARS",
    "MESSAGE_CHARS",
    "TEXT_BLOCK",
    "TEXT_BOUNDS",
    "answer_char_bound",
    "functions_char_bound",
    "is_free_text",
    "text_bound",
    "texts_at_bound",
]

TEXT_BLOCK = 16
DEFAULT_TEXT_CHARS = 128
MESSAGE_CHARS = 256
"""A plain message (an answer with no function call) on the local server."""

TEXT_BOUNDS: dict[str, int] = {
    # planner
    "plan": 128,
    "steps": 96,
    # executor's contract
    "claim_text": 128,
    "evidence_excerpt": 160,
    "diagnosis_summary": 128,
    "user_facing_answer": 256,
    "hypothesis_text": 128,
    "missing_info": 96,
    "action_text": 96,
    "reason": 96,
    "description": 96,
    # verifier
    "fact": 128,
    "rationale": 128,
    "detail": 96,
    "trace_ref": 64,
    "claim_id": 32,
    # grader
    "reasons": 192,
}
"""Characters per free-text property, by its name; an array of strings by the array's name.

Each is below what the parser accepts (``limits.CONTRACT_TEXT_CHARS``, ``PLAN_TEXT_CHARS``,
the grader's 200), so a bounded answer always parses. An excerpt quotes an evidence item's
text (an alert's line with its fields runs to about 120 characters; a shorter quote still
matches)."""

# JSON a value needs besides its content: quotes, and a key's `"name": ` with its comma.
_QUOTES = 2
_NUMBER_CHARS = 24  # an unbounded JSON number (the converter's integer or float)


def is_free_text(schema: Any) -> bool:
    """Whether ``schema`` is a string the model writes freely (see the module)."""
    return (
        isinstance(schema, Mapping)
        and schema.get("type") == "string"
        and not any(key in schema for key in ("enum", "const", "pattern", "format"))
    )


def text_bound(name: str, schema: Mapping[str, Any]) -> int:
    """The bound of the free-text property ``name``: its table entry, lowered by the schema's
    own ``maxLength`` (to a multiple of :data:`TEXT_BLOCK`, at least one block)."""
    bound = TEXT_BOUNDS.get(name, DEFAULT_TEXT_CHARS)
    limit = schema.get("maxLength")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit < bound:
        bound = max(TEXT_BLOCK, limit - limit % TEXT_BLOCK)
    return bound


def answer_char_bound(schema: Mapping[str, Any]) -> int:
    """The longest JSON answer, in characters, that ``schema`` admits with every free text at
    its bound (``$ref`` into ``$defs`` resolved; one separating space after each key and
    comma). An unbounded array counts as one item."""
    defs = schema.get("$defs") or schema.get("definitions") or {}
    return _chars(schema, "", defs, frozenset())


def functions_char_bound(tools: Sequence[Mapping[str, Any]], *, message: bool) -> int:
    """The longest answer to a request offering ``tools`` (OpenAI ``tools`` entries): the
    longest arguments any of them admits, or a plain message when ``message`` (``tool_choice``
    ``"auto"``) and that is longer."""
    longest = MESSAGE_CHARS if message else 0
    for tool in tools:
        function = tool.get("function") or {}
        parameters = function.get("parameters") or {}
        longest = max(longest, answer_char_bound(parameters))
    return longest


def texts_at_bound(value: Any, schema: Mapping[str, Any]) -> list[str]:
    """``path (N characters)`` for each free text of ``value`` (an answer under ``schema``)
    that reached its bound, in document order."""
    defs = schema.get("$defs") or schema.get("definitions") or {}
    return [
        f"{path} ({bound} characters)"
        for path, text, bound in _texts(value, schema, "", "", defs)
        if len(text) >= bound
    ]


# --------------------------------------------------------------------------- internals


def _resolved(schema: Any, defs: Mapping[str, Any]) -> Any:
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str):
        schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
    return schema


def _chars(schema: Any, name: str, defs: Mapping[str, Any], seen: frozenset[str]) -> int:
    ref = schema.get("$ref") if isinstance(schema, Mapping) else None
    if isinstance(ref, str):
        if ref in seen:  # a recursive schema: one level is the honest estimate
            return 0
        return _chars(_resolved(schema, defs), name, defs, seen | {ref})
    if not isinstance(schema, Mapping):
        return _NUMBER_CHARS
    if "const" in schema:
        return len(json.dumps(schema["const"], ensure_ascii=False))
    if "enum" in schema:
        return max((len(json.dumps(v, ensure_ascii=False)) for v in schema["enum"]), default=0)
    for union in ("anyOf", "oneOf"):
        if union in schema:
            return max((_chars(s, name, defs, seen) for s in schema[union]), default=0)
    kind = schema.get("type")
    if isinstance(kind, list):
        return max((_chars({**schema, "type": k}, name, defs, seen) for k in kind), default=0)
    return _typed_chars(schema, kind, name, defs, seen)


def _typed_chars(
    schema: Mapping[str, Any], kind: Any, name: str, defs: Mapping[str, Any], seen: frozenset[str]
) -> int:
    if kind == "string":
        if is_free_text(schema):
            return text_bound(name, schema) + _QUOTES
        return DEFAULT_TEXT_CHARS + _QUOTES  # a pattern or format: the default's length
    if kind == "array":
        items = schema.get("maxItems", 1) if isinstance(schema.get("maxItems"), int) else 1
        item = _chars(schema.get("items", {}), name, defs, seen)
        return 2 + items * (item + 2)
    if kind == "object" or "properties" in schema:
        properties: Mapping[str, Any] = schema.get("properties") or {}
        return 2 + sum(
            len(json.dumps(key, ensure_ascii=False)) + 4 + _chars(sub, key, defs, seen)
            for key, sub in properties.items()
        )
    return {"boolean": len("false"), "null": len("null")}.get(str(kind), _NUMBER_CHARS)


def _texts(
    value: Any, schema: Any, name: str, path: str, defs: Mapping[str, Any]
) -> Iterator[tuple[str, str, int]]:
    schema = _arm(value, _resolved(schema, defs), defs)
    if not isinstance(schema, Mapping):
        return
    if isinstance(value, str) and is_free_text(schema):
        yield path, value, text_bound(name, schema)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _texts(item, schema.get("items", {}), name, f"{path}[{index}]", defs)
    elif isinstance(value, Mapping):
        properties = schema.get("properties") or {}
        for key, sub in properties.items():
            if key in value:
                yield from _texts(value[key], sub, key, f"{path}.{key}" if path else key, defs)


def _arm(value: Any, schema: Any, defs: Mapping[str, Any]) -> Any:
    """The arm of a union ``schema`` that ``value`` fits (``schema`` itself when no union)."""
    if not isinstance(schema, Mapping):
        return schema
    for union in ("anyOf", "oneOf"):
        for option in schema.get(union) or []:
            option = _resolved(option, defs)
            if _fits(value, option):
                return _arm(value, option, defs)
    return schema


def _fits(value: Any, schema: Any) -> bool:
    """Whether ``value`` has the JSON type ``schema`` asks for (enough to pick a union arm)."""
    if not isinstance(schema, Mapping):
        return False
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    checks = {
        "string": isinstance(value, str),
        "array": isinstance(value, list),
        "object": isinstance(value, Mapping),
        "null": value is None,
        "boolean": isinstance(value, bool),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
    }
    if kind is None:
        return "properties" in schema and isinstance(value, Mapping)
    return any(checks.get(str(k), False) for k in kinds)
