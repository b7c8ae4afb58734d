"""The mock world the evidence tools read: alerts, logs, runbooks and injected failures.

A world is plain data, validated by pydantic models that forbid unknown keys:

- ``now``: a fixed, timezone-aware timestamp (what ``get_current_time`` answers).
- ``alerts``: ``Alert`` entries (what ``query_metrics`` searches).
- ``logs``: ``LogEntry`` entries (what ``query_logs`` searches).
- ``knowledge``: ``KnowledgeDoc`` runbooks made of titled ``sections`` (what
  ``lookup_knowledge`` searches; a section is the unit of lexical ranking).
- ``failures``: evidence-tool name -> ``"timeout"`` | ``"error"``, so that failure paths
  can be exercised (``failures: {query_logs: timeout}``).
- ``aliases``: service -> the other names people call it
  (``aliases: {order-service: [订单服务, order service]}``): a claim that names a service by
  an alias is judged as naming the service (the subject rules of ``core.judge``).

``load_world`` accepts a packaged world name (``"default"`` ->
``pytest_diageval/worlds/default.yaml``), a YAML file path, or an inline mapping. Every
validation problem becomes one ``WorldError`` that names the file, the field path
(``alerts[2].state``), the line where the YAML has one, the bad value and what is allowed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails

from pytest_diageval.core.contract.contracts import EVIDENCE_TOOLS
from pytest_diageval.core.contract.evidence_tools import ToolName
from pytest_diageval.core.evidence.yaml_limits import (
    YamlLimitError,
    path_problem,
    read_limited,
    safe_load_limited,
)

__all__ = [
    "LOG_LEVELS",
    "Alert",
    "AlertState",
    "FailureKind",
    "KnowledgeDoc",
    "KnowledgeSection",
    "LogEntry",
    "LogLevel",
    "World",
    "WorldError",
    "available_worlds",
    "default_world",
    "load_world",
    "normalise_log_level",
]

AlertState = Literal["firing", "pending", "resolved"]
LogLevel = Literal["DEBUG", "INFO", "WARN", "ERROR"]
FailureKind = Literal["timeout", "error"]
FailingTool = ToolName

LOG_LEVELS: tuple[str, ...] = get_args(LogLevel)

_LEVEL_ALIASES = {"WARNING": "WARN", "ERR": "ERROR", "FATAL": "ERROR", "CRITICAL": "ERROR"}


def normalise_log_level(value: Any) -> Any:
    """``"warning"`` -> ``"WARN"``: upper-case plus common aliases; other values unchanged."""
    if not isinstance(value, str):
        return value
    upper = value.strip().upper()
    return _LEVEL_ALIASES.get(upper, upper)


class WorldError(ValueError):
    """A world that cannot be loaded; the message names file, field path, line and value."""


class _WorldModel(BaseModel):
    # Frozen: default_world() is cached and shared, so nobody may change it in place.
    model_config = ConfigDict(extra="forbid", frozen=True)


class Alert(_WorldModel):
    """One alert as the monitoring system reports it; values are strings with their unit."""

    alert_name: str = Field(min_length=1)
    service: str = Field(min_length=1)
    state: AlertState
    current: str
    threshold: str
    duration: str
    description: str
    severity: Literal["critical", "warning", "info"] | None = None
    samples: list[float] | None = None
    apis: list[str] | None = None


class LogEntry(_WorldModel):
    timestamp: AwareDatetime
    level: LogLevel
    service: str = Field(min_length=1)
    message: str = Field(min_length=1)

    @field_validator("level", mode="before")
    @classmethod
    def _normalise_level(cls, value: Any) -> Any:
        return normalise_log_level(value)


class KnowledgeSection(_WorldModel):
    """One titled part of a runbook (触发条件, 排查步骤, 常见原因, 处置建议, …)."""

    heading: str = Field(min_length=1)
    content: str = Field(min_length=1)


class KnowledgeDoc(_WorldModel):
    """A runbook: ``alert_name`` (when it belongs to one alert) enables exact L0 lookup."""

    title: str = Field(min_length=1)
    source: str = Field(min_length=1)
    alert_name: str | None = None
    sections: list[KnowledgeSection] = Field(min_length=1)


class World(_WorldModel):
    now: AwareDatetime = Field(
        description="The fixed clock, with its timezone (2026-07-08T11:20:00+08:00)."
    )
    description: str | None = Field(default=None, description="Free text for the reader.")
    alerts: list[Alert] = Field(default_factory=list, description="What query_metrics searches.")
    logs: list[LogEntry] = Field(default_factory=list, description="What query_logs searches.")
    knowledge: list[KnowledgeDoc] = Field(
        default_factory=list,
        description="Runbooks of titled sections: what lookup_knowledge"
        " searches (guidance, never a current fact).",
    )
    failures: dict[FailingTool, FailureKind] = Field(
        default_factory=dict,
        description="Evidence tool -> timeout | error: every call of that tool fails so,"
        " to exercise failed calls ({query_logs: timeout}).",
    )
    aliases: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Service -> the other names people call it (订单服务, order service): a"
        " claim naming an alias is judged as naming the service. One service per alias.",
    )

    @field_validator("aliases")
    @classmethod
    def _aliases_name_one_service_each(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        owner: dict[str, str] = {}
        for service, names in value.items():
            for name in names:
                key = " ".join(name.casefold().split())
                if not key or not service.strip():
                    raise ValueError(f"aliases.{service}: an empty name")
                if owner.setdefault(key, service) != service:
                    raise ValueError(f"alias {name!r} names both {owner[key]} and {service}")
        return value

    def entity_aliases(self) -> dict[str, str]:
        """Each alias (casefolded) -> the service it names."""
        return {
            " ".join(name.casefold().split()): service.lower()
            for service, names in self.aliases.items()
            for name in names
        }


# --------------------------------------------------------------------------- error messages

# Which model a mapping sits in, by the name of the list that holds it; "" is the top level.
_MODEL_BY_PARENT: dict[str, type[BaseModel]] = {
    "": World,
    "alerts": Alert,
    "logs": LogEntry,
    "knowledge": KnowledgeDoc,
    "sections": KnowledgeSection,
}
_KEY_MARKER = "[key]"


def _format_path(loc: Sequence[int | str]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path or "<top level>"


def _line_of(root: yaml.Node | None, loc: Sequence[int | str]) -> int | None:
    """1-based line of the deepest YAML node that ``loc`` reaches (a key's own line)."""
    node, line = root, None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next((pair for pair in node.value if pair[0].value == part), None)
            if match is None:
                break
            line, node = match[0].start_mark.line + 1, match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if not 0 <= part < len(node.value):
                break
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    if line is None and root is not None:
        line = root.start_mark.line + 1
    return line


def _allowed_keys(loc: Sequence[int | str]) -> str:
    parent = next((part for part in reversed(loc[:-1]) if isinstance(part, str)), "")
    model = _MODEL_BY_PARENT.get(parent, World)
    return ", ".join(model.model_fields)


def _describe(error: ErrorDetails, root: yaml.Node | None, at: Sequence[str] = ()) -> str:
    loc = list(error["loc"])
    if loc and loc[-1] == _KEY_MARKER:
        # Only `failures` has constrained keys: point at the key and list the tools allowed.
        loc = loc[:-1]
        allowed = error.get("ctx", {}).get("expected", ", ".join(EVIDENCE_TOOLS))
        text = f"unknown tool {loc[-1]!r}; allowed tools: {allowed}"
    elif error["type"] == "extra_forbidden":
        text = f"unknown key {loc[-1]!r}; allowed keys: {_allowed_keys(loc)}"
    elif error["type"] == "missing":
        text = f"missing required key {loc[-1]!r}"
    else:
        text = f"{error['msg']}; got {error['input']!r}"
    line = _line_of(root, [*at, *loc])
    where = _format_path([*at, *loc]) + (f" (line {line})" if line is not None else "")
    return f"{where}: {text}"


def _validation_error(
    source: str, error: ValidationError, text: str | None, at: Sequence[str] = ()
) -> WorldError:
    # The node tree is composed only on failure: the happy path parses the YAML once.
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader) if text is not None else None
    except yaml.YAMLError:  # an inline world's file that changed since it was read
        root = None
    problems = "\n".join(f"  - {_describe(detail, root, at)}" for detail in error.errors())
    count = error.error_count()
    return WorldError(f"invalid world {source}: {count} problem(s)\n{problems}")


def _validate(data: Any, source: str, text: str | None, at: Sequence[str] = ()) -> World:
    if not isinstance(data, Mapping):
        raise WorldError(
            f"invalid world {source}: the top level must be a mapping with keys"
            f" {', '.join(World.model_fields)}; got {type(data).__name__}"
        )
    try:
        return World.model_validate(dict(data))
    except ValidationError as error:
        raise _validation_error(source, error, text, at) from None


# --------------------------------------------------------------------------- loading

_WORLD_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def available_worlds() -> list[str]:
    """Names of the worlds packaged with pytest-diageval (``worlds/<name>.yaml``)."""
    folder = resources.files("pytest_diageval").joinpath("worlds")
    return sorted(
        entry.name.removesuffix(".yaml")
        for entry in folder.iterdir()
        if entry.name.endswith(".yaml")
    )


def _is_world_name(spec: str) -> bool:
    return _WORLD_NAME.fullmatch(spec) is not None and not spec.endswith((".yaml", ".yml"))


@functools.cache
def _load_packaged(name: str) -> World:
    """Parsed once per process: scenarios name the same packaged world again and again."""
    names = available_worlds()
    if name not in names:
        raise WorldError(f"unknown world name {name!r}; available worlds: {', '.join(names)}")
    entry = resources.files("pytest_diageval").joinpath("worlds", f"{name}.yaml")
    return _load_text(entry.read_text(encoding="utf-8"), f"'{name}' ({entry})")


def _load_file(path: Path) -> World:
    problem = path_problem(path)
    if problem is not None:
        raise WorldError(f"world file {str(path)[:200]!r} cannot be opened: {problem}")
    if not path.is_file():
        raise WorldError(f"world file not found: {path}")
    return _load_text(_read_utf8(path), str(path))


def _read_utf8(path: Path) -> str:
    """The file's text; a file that is not UTF-8 or cannot be read is a WorldError."""
    try:
        raw = read_limited(path)
    except YamlLimitError as error:
        raise WorldError(f"world file {path}: {error}") from None
    except OSError as error:
        raise WorldError(f"world file {path} cannot be read: {error.strerror}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise WorldError(
            f"world file {path} is not UTF-8 text (line {line}, byte {error.start}:"
            f" {error.reason}); save it as UTF-8"
        ) from None


def _load_text(text: str, source: str) -> World:
    try:
        data = safe_load_limited(text)
    except YamlLimitError as error:
        raise WorldError(f"invalid world {source}: {error}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise WorldError(f"invalid world {source}{where}: not valid YAML: {error}") from None
    return _validate(data, source, text)


def load_world(
    spec: str | Path | Mapping[str, Any],
    base_dir: Path | None = None,
    *,
    label: str | None = None,
    yaml_text: str | None = None,
    yaml_at: Sequence[str] = (),
) -> World:
    """Load and validate a world.

    ``spec`` is a packaged world name (``"default"``), a path to a YAML file (relative paths
    are resolved against ``base_dir``, default the working directory), or an inline mapping.
    ``label`` names an inline mapping in error messages (for example the scenario file that
    holds it); ``yaml_text`` is the YAML that holds it and ``yaml_at`` the keys that lead to
    it there (``("world",)`` in a scenario file), so that each problem names its field and
    line in that file (``world.alerts[0].state (line 9)``). Raises ``WorldError``.
    """
    if isinstance(spec, Mapping):
        return _validate(spec, label or "<inline world>", yaml_text, yaml_at)
    if isinstance(spec, str) and _is_world_name(spec):
        return _load_packaged(spec)
    path = Path(spec)
    if not path.is_absolute():
        path = (base_dir or Path.cwd()) / path
    return _load_file(path)


@functools.cache
def default_world() -> World:
    """The packaged default world, loaded once (worlds are frozen, so sharing is safe)."""
    return load_world("default")
