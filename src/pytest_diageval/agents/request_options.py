"""Request options per stage: ``temperature``, ``max_tokens`` and extra body parameters.

Every request of a stage (planner, executor, verifier, grader) sends the stage's
``temperature`` (default 0.0) and ``max_tokens`` (default :data:`FROM_SCHEMA`: the longest
answer the functions it offers admit, their free text at its bounds, see
:mod:`pytest_diageval.core.contract.text_bounds`); a reasoning model may reject both, and
repeated samples need a temperature above 0. The plugin's ``--diageval-temperature`` /
``--diageval-max-tokens`` / ``--diageval-extra-body`` (and their ini) change them, per stage or
for all stages, as :class:`RequestOptions`; a recording writes them into the cassette's
metadata and a replay sends them again.

Imports nothing but the standard library: the plugin parses the options at startup, in runs
that never load openai or pydantic.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

__all__ = [
    "CLIENT_BODY_KEYS",
    "DEFAULT_TEMPERATURE",
    "FROM_SCHEMA",
    "OMIT",
    "OPTION_FLAGS",
    "STAGES",
    "STAGE_MAX_TOKENS",
    "OptionKind",
    "RequestOptions",
    "RequestOptionsError",
    "Stage",
    "StageOptions",
    "configured_options",
    "parse_entries",
    "split_ini_entries",
]

Stage = Literal["planner", "executor", "verifier", "grader"]
STAGES: tuple[Stage, ...] = get_args(Stage)

STAGE_MAX_TOKENS: dict[Stage, int] = {
    "planner": 512,
    "executor": 2048,
    "verifier": 1536,
    "grader": 512,
}
"""``max_tokens`` of a stage's request that offers no function under :data:`FROM_SCHEMA` (the
default): a model that runs away in free text is cut by the server instead of generating until
its context is full. Every request of the shipped agents offers functions, so their bound
comes from the functions' schemas instead."""

FROM_SCHEMA = "schema"
"""The default ``max_tokens``: the longest answer the request's functions admit, with every free
text at its bound (:func:`~pytest_diageval.core.contract.text_bounds.answer_char_bound`, a token
being at least one character), so an answer within its bounds is never cut. It follows the
schema: a contract offering more citable invocations may be longer."""

DEFAULT_TEMPERATURE = 0.0
OMIT = "omit"
"""The value that leaves ``temperature`` or ``max_tokens`` out of the request."""

OptionKind = Literal["temperature", "max_tokens", "extra_body"]
OPTION_FLAGS: dict[OptionKind, str] = {
    "temperature": "--diageval-temperature",
    "max_tokens": "--diageval-max-tokens",
    "extra_body": "--diageval-extra-body",
}

CLIENT_BODY_KEYS: dict[str, str] = {
    "model": "the client sends the recorded or configured model",
    "messages": "the client builds the conversation",
    "tools": "the client sends the stage's tools",
    "tool_choice": "the client chooses the tool call",
    "response_format": "structured answers go through a forced tool call",
    "stream": "answers are read whole",
    "n": "the pipeline reads one answer",
    "temperature": "use --diageval-temperature",
    "max_tokens": "use --diageval-max-tokens",
}
"""Keys an extra body may not set, with the reason its error gives."""

# What an entry's value may be, per option, for the error messages.
_ALLOWED: dict[OptionKind, str] = {
    "temperature": f"a number >= 0 or {OMIT}",
    "max_tokens": f"a whole number >= 1, {FROM_SCHEMA} or {OMIT}",
    "extra_body": "a JSON object",
}

Target = Stage | None
"""A stage, or None: every stage (an entry without ``STAGE=``)."""


class RequestOptionsError(ValueError):
    """An option entry (or a cassette's recorded options) the plugin cannot use."""


@dataclass(frozen=True)
class StageOptions:
    """What one stage's requests send: None leaves ``temperature`` / ``max_tokens`` out;
    ``max_tokens`` :data:`FROM_SCHEMA` is computed per request (``agents.llm``)."""

    temperature: float | None
    max_tokens: int | str | None
    extra_body: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def params(self) -> dict[str, Any]:
        """The request's ``temperature`` and ``max_tokens`` (those not left out; a
        :data:`FROM_SCHEMA` bound is the caller's to compute)."""
        found = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        return {
            key: value for key, value in found.items() if value is not None and value != FROM_SCHEMA
        }


@dataclass(frozen=True)
class RequestOptions:
    """The entries given, per option: stage (None: all stages) -> value (None: omit).

    A staged entry wins over the entry for all stages; ``extra_body`` objects are merged key
    by key (the stage's keys win). No entry leaves the default.
    """

    temperature: Mapping[Target, float | None] = field(default_factory=dict, hash=False)
    max_tokens: Mapping[Target, int | str | None] = field(default_factory=dict, hash=False)
    extra_body: Mapping[Target, Mapping[str, Any]] = field(default_factory=dict, hash=False)

    def stage(self, stage: Stage, temperature: float = DEFAULT_TEMPERATURE) -> StageOptions:
        """The options of ``stage``'s requests (``temperature``: the default to fall back on)."""
        return StageOptions(
            temperature=_pick(self.temperature, stage, temperature),
            max_tokens=_pick(self.max_tokens, stage, FROM_SCHEMA),
            extra_body={**self.extra_body.get(None, {}), **self.extra_body.get(stage, {})},
        )

    def to_metadata(self) -> dict[str, dict[str, Any]]:
        """Every stage's effective options, as a cassette's metadata keeps them."""
        block: dict[str, dict[str, Any]] = {}
        for stage in STAGES:
            options = self.stage(stage)
            entry: dict[str, Any] = {
                "temperature": _shown(options.temperature),
                "max_tokens": _shown(options.max_tokens),
            }
            if options.extra_body:
                entry["extra_body"] = dict(options.extra_body)
            block[stage] = entry
        return block

    @classmethod
    def from_metadata(cls, block: object) -> RequestOptions:
        """The options a cassette's metadata recorded (a stage or field left out: the
        default); :class:`RequestOptionsError` names the field that is wrong."""
        if not isinstance(block, Mapping):
            raise RequestOptionsError(
                f"request_options: expected a mapping of stages, got {block!r}"
            )
        found: dict[OptionKind, dict[Target, Any]] = {kind: {} for kind in OPTION_FLAGS}
        for stage, entry in block.items():
            where = f"request_options.{stage}"
            if stage not in STAGES:
                raise RequestOptionsError(f"{where}: unknown stage; allowed: {', '.join(STAGES)}")
            if not isinstance(entry, Mapping):
                raise RequestOptionsError(f"{where}: expected a mapping, got {entry!r}")
            for kind, value in entry.items():
                if kind not in OPTION_FLAGS:
                    allowed = ", ".join(OPTION_FLAGS)
                    raise RequestOptionsError(f"{where}.{kind}: unknown field; allowed: {allowed}")
                found[kind][stage] = _value(kind, value, f"{where}.{kind}")
        return cls(found["temperature"], found["max_tokens"], found["extra_body"])

    def command_line(self) -> list[str]:
        """The options that give these requests again: only what differs from the defaults,
        one entry for all stages when they agree."""
        parts: list[str] = []
        effective = {stage: self.stage(stage) for stage in STAGES}
        for kind, flag in OPTION_FLAGS.items():
            values = {stage: getattr(options, kind) for stage, options in effective.items()}
            changed = [stage for stage in STAGES if not _is_default(kind, stage, values[stage])]
            shown = {stage: _entry_text(kind, values[stage]) for stage in changed}
            if len(changed) == len(STAGES) and len(set(shown.values())) == 1:
                parts += [flag, shown[STAGES[0]]]
                continue
            for stage in changed:
                parts += [flag, f"{stage}={shown[stage]}"]
        return parts


_DEFAULTS = RequestOptions()


def _is_default(kind: OptionKind, stage: Stage, value: Any) -> bool:
    """Whether ``value`` is what ``stage`` sends without the option: for ``max_tokens`` also the
    stage's number a recording made before :data:`FROM_SCHEMA` was the default kept in its
    metadata (so its re-record command asks for today's default, not the old constant)."""
    if kind == "max_tokens" and value == STAGE_MAX_TOKENS[stage]:
        return True
    return bool(value == getattr(_DEFAULTS.stage(stage), kind))


def _pick(entries: Mapping[Target, Any], stage: Stage, default: Any) -> Any:
    if stage in entries:
        return entries[stage]
    return entries.get(None, default)


def _shown(value: float | int | str | None) -> float | int | str:
    return OMIT if value is None else value


def _entry_text(kind: OptionKind, value: Any) -> str:
    if value is None:
        return OMIT
    if kind == "extra_body":
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if value == FROM_SCHEMA:
        return FROM_SCHEMA
    return repr(value)  # a float's repr reads back exactly (where :g would round it)


def parse_entries(kind: OptionKind, entries: Sequence[str], source: str) -> dict[Target, Any]:
    """``[STAGE=]VALUE`` entries of one option; a later entry for the same stage wins (an
    extra body's keys are merged). ``source`` names the option or ini key in the errors (""
    where argparse names the option itself)."""
    parsed: dict[Target, Any] = {}
    for entry in entries:
        where = f"{source} {entry!r}".strip()
        target, text = _split_entry(entry, where)
        value = _value(kind, _from_text(kind, text, where), where)
        if kind == "extra_body":
            value = {**parsed.get(target, {}), **value}
        parsed[target] = value
    return parsed


def _split_entry(entry: str, where: str) -> tuple[Target, str]:
    """``executor=0.7`` -> (executor, "0.7"); ``0.7`` and a JSON object -> (None, entry)."""
    text = entry.strip()
    if text.startswith("{") or "=" not in text:
        return None, text
    name, _, value = text.partition("=")
    stage = name.strip()
    if stage not in STAGES:
        raise RequestOptionsError(
            f"{where}: unknown stage {stage!r}; allowed: {', '.join(STAGES)}"
            " (or no STAGE= for every stage)"
        )
    return stage, value.strip()


def _from_text(kind: OptionKind, text: str, where: str) -> object:
    """The entry's value as data: ``omit``, a number, or (extra body) the parsed JSON."""
    if kind == "extra_body":
        try:
            return json.loads(text)
        except ValueError as error:
            raise RequestOptionsError(
                f"{where}: not JSON ({error}); expected a JSON object"
            ) from None
    if text in (OMIT, FROM_SCHEMA):
        return text
    try:
        return int(text) if kind == "max_tokens" else float(text)
    except ValueError:
        raise RequestOptionsError(f"{where}: expected {_ALLOWED[kind]}") from None


def _value(kind: OptionKind, value: object, where: str) -> Any:
    """A value checked against what ``kind`` allows (``omit`` becomes None)."""
    if kind == "extra_body":
        return _extra_body(value, where)
    if value == OMIT:
        return None
    if kind == "max_tokens" and value == FROM_SCHEMA:
        return FROM_SCHEMA
    if kind == "temperature":
        number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
        if number is None or not math.isfinite(number) or number < 0:
            raise RequestOptionsError(f"{where}: {value!r} is not {_ALLOWED[kind]}")
        return float(number)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise RequestOptionsError(f"{where}: {value!r} is not {_ALLOWED[kind]}")
    return value


def _extra_body(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise RequestOptionsError(f"{where}: {value!r} is not {_ALLOWED['extra_body']}")
    for key in value:
        if key in CLIENT_BODY_KEYS:
            raise RequestOptionsError(
                f"{where}: the extra body may not set {key!r} ({CLIENT_BODY_KEYS[key]});"
                f" keys it may not set: {', '.join(CLIENT_BODY_KEYS)}"
            )
    return dict(value)


def split_ini_entries(lines: Sequence[str]) -> list[str]:
    """An ini value's entries: separated by whitespace, except inside a JSON object or string
    (whose spaces and quotes stay as written, where ``shlex`` would eat the quotes)."""
    return [entry for line in lines for entry in _split_line(line)]


def _split_line(line: str) -> list[str]:
    entries: list[str] = []
    current, depth, quoted, escaped = "", 0, False, False
    for char in line:
        if char.isspace() and not quoted and depth == 0:
            if current:
                entries.append(current)
            current = ""
            continue
        current += char
        if escaped:
            escaped = False
        elif quoted and char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif not quoted and char in "{[":
            depth += 1
        elif not quoted and char in "}]":
            depth = max(0, depth - 1)
    if current:
        entries.append(current)
    return entries


def configured_options(
    command_line: Mapping[OptionKind, Sequence[str] | None],
    ini: Mapping[OptionKind, Sequence[str]],
) -> RequestOptions:
    """The run's options: per option, the command line's entries when it gives any, else
    the ini's (the command line replaces the ini's entries, it does not add to them)."""
    found: dict[OptionKind, dict[Target, Any]] = {}
    for kind, flag in OPTION_FLAGS.items():
        given = command_line.get(kind)
        if given:
            found[kind] = parse_entries(kind, given, flag)
        else:
            entries = split_ini_entries(ini.get(kind, ()))
            found[kind] = parse_entries(kind, entries, f"ini diageval_{kind}")
    return RequestOptions(found["temperature"], found["max_tokens"], found["extra_body"])
