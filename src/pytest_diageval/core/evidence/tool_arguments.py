"""Argument models of the tools and the OpenAI ``tools`` list generated from them.

One pydantic model per tool (``extra="forbid"``) is the single source of truth: it
validates every call (``parse_tool_arguments`` -> ``ToolArgumentError`` naming the tool,
the argument and the allowed arguments) and generates ``TOOL_DEFINITIONS``. Inputs that
models commonly send are tolerated where the meaning is unambiguous: ``""`` means "no
filter", a keywords string is split on commas, ``warning`` is the ``WARN`` level.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from pytest_diageval.core.contract.evidence_tools import (
    EVIDENCE_TOOL_TABLE,
    LOOKUP_KNOWLEDGE,
    QUERY_LOGS,
    QUERY_METRICS,
)
from pytest_diageval.core.contract.scope_contract import DecodingScope
from pytest_diageval.core.evidence.tool_search import normalise_query
from pytest_diageval.core.evidence.world import LogLevel, World, normalise_log_level

__all__ = [
    "TOOL_ARGUMENT_MODELS",
    "TOOL_DEFINITIONS",
    "TOOL_NAMES",
    "GetCurrentTimeArgs",
    "LookupKnowledgeArgs",
    "QueryLogsArgs",
    "QueryMetricsArgs",
    "ToolArgs",
    "ToolArgumentError",
    "constrained_tool_definitions",
    "parse_tool_arguments",
    "services_named_in",
]


class ToolArgumentError(ValueError):
    """Arguments a tool does not accept; names the tool, the argument and the allowed ones."""


def _blank_to_none(value: Any) -> Any:
    # Models often send "" for "no filter"; that must not become a filter that matches nothing.
    return None if isinstance(value, str) and not value.strip() else value


def _keyword_list(value: Any) -> Any:
    """A list of keywords; a single string is split on commas, semicolons, 、 and |."""
    value = _blank_to_none(value)
    if isinstance(value, str):
        value = re.split(r"[,，;；、|\n]", value)
    if isinstance(value, list):
        value = [item.strip() if isinstance(item, str) else item for item in value]
        value = [item for item in value if item != ""] or None
    return value


KEYWORDS_OFFERED = 5
"""How many keywords the tools' schema offers per call (the parser takes more). Recorded under a
grammar with no bound, Gemma 3 270M wrote ``["HMM", "HMM", …]`` until the token cap: 2,054
tokens, about 70 s a call, three times in one session."""
_KEYWORDS_SCHEMA: dict[str, Any] = {"maxItems": KEYWORDS_OFFERED}

OptionalName = Annotated[str | None, BeforeValidator(_blank_to_none)]
Keywords = Annotated[list[str] | None, BeforeValidator(_keyword_list)]
OptionalLevel = Annotated[
    LogLevel | None, BeforeValidator(lambda v: normalise_log_level(_blank_to_none(v)))
]


class ToolArgs(BaseModel):
    """Base of the argument models: unknown arguments are errors, strings are stripped."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, frozen=True)


class QueryMetricsArgs(ToolArgs):
    service: OptionalName = Field(default=None, description="服务名，精确匹配 / exact service name")
    alert_name: OptionalName = Field(
        default=None, description="告警名，精确匹配 / exact alert name"
    )
    keywords: Keywords = Field(
        default=None,
        description="关键词列表，任一命中即可（OR），大小写不敏感，支持同义词 / keywords, OR-ed",
        json_schema_extra=_KEYWORDS_SCHEMA,
    )


class QueryLogsArgs(ToolArgs):
    service: OptionalName = Field(default=None, description="服务名，精确匹配 / exact service name")
    keywords: Keywords = Field(
        default=None,
        description=(
            "关键词列表，任一命中即可（OR），大小写不敏感，支持同义词"
            " / keywords, OR-ed, case-insensitive, synonym-aware"
        ),
        json_schema_extra=_KEYWORDS_SCHEMA,
    )
    level: OptionalLevel = Field(default=None, description="日志级别 / log level")
    limit: int = Field(default=20, ge=1, le=200, description="最多返回条数 / max logs returned")


class LookupKnowledgeArgs(ToolArgs):
    query: str = Field(
        min_length=1, max_length=1000, description="检索问题或告警名 / question or alert name"
    )
    top_k: int = Field(default=3, ge=1, le=10, description="最多返回块数 / max blocks")

    @field_validator("query")
    @classmethod
    def _searchable(cls, query: str) -> str:
        if not normalise_query(query):
            raise ValueError("query must contain words, not only punctuation")
        return query


class GetCurrentTimeArgs(ToolArgs):
    pass


TOOL_ARGUMENT_MODELS: dict[str, type[ToolArgs]] = {
    QUERY_METRICS: QueryMetricsArgs,
    QUERY_LOGS: QueryLogsArgs,
    LOOKUP_KNOWLEDGE: LookupKnowledgeArgs,
    "get_current_time": GetCurrentTimeArgs,
}
TOOL_NAMES: tuple[str, ...] = tuple(TOOL_ARGUMENT_MODELS)

_TOOL_DESCRIPTIONS = {
    QUERY_METRICS: (
        "查询当前监控告警：告警名、服务、状态、当前值、阈值、持续时间、描述与采样点。"
        "不带参数返回全部告警。Query the current monitoring alerts; filter by exact service,"
        " exact alert name or keywords."
    ),
    QUERY_LOGS: (
        "查询应用日志（时间、级别、服务、消息）。service 精确匹配；keywords 任一命中即返回；"
        "无命中时返回空列表与“未找到匹配的日志”，这表示没有证据。Search application logs by exact"
        " service, keywords (OR, synonym-aware) and level; no hit returns an empty list."
    ),
    LOOKUP_KNOWLEDGE: (
        "检索运维知识库（runbook）：告警名或标题精确命中为 L0，否则按词法相关度返回章节（L1）。"
        "知识库是通用排查指导，不是当前现场的事实；同一会话内的重复查询会被去重。Look up runbooks;"
        " guidance on what to check, never evidence of what is happening now."
    ),
    "get_current_time": (
        "获取当前时间。辅助工具，结果不是证据。Return the current time; a helper, never evidence."
    ),
}


def _clean_schema(node: Any, *, is_properties: bool = False) -> Any:
    """A compact schema: no pydantic titles, ``X | None`` shown as ``X`` (it is optional)."""
    if isinstance(node, list):
        return [_clean_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    cleaned = {
        key: _clean_schema(value, is_properties=key == "properties" and not is_properties)
        for key, value in node.items()
        if is_properties or key != "title"
    }
    options = cleaned.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options and len(options) == 2:
        (kept,) = [option for option in options if option != {"type": "null"}]
        cleaned = {**kept, **{k: v for k, v in cleaned.items() if k != "anyOf"}}
        if cleaned.get("default", 0) is None:
            del cleaned["default"]
    return cleaned


def _tool_definition(name: str, model: type[BaseModel]) -> dict[str, Any]:
    schema = _clean_schema(model.model_json_schema())
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": schema.get("properties", {}),
        "required": schema.get("required", []),
        "additionalProperties": False,
    }
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": _TOOL_DESCRIPTIONS[name],
            "parameters": parameters,
        },
    }


TOOL_DEFINITIONS: list[dict[str, Any]] = [
    _tool_definition(name, model) for name, model in TOOL_ARGUMENT_MODELS.items()
]
"""The OpenAI function-calling ``tools`` list, in ``TOOL_NAMES`` order. Treat as read-only."""


_SERVICE_TOOLS = tuple(tool.name for tool in EVIDENCE_TOOL_TABLE if "service" in tool.arguments)
_SERVICE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.]*(?:-[A-Za-z0-9_.]+)*-service\b")


def services_named_in(text: str) -> list[str]:
    """The ``…-service`` names a user's question mentions, in order of appearance."""
    return list(dict.fromkeys(_SERVICE_NAME.findall(text)))


def constrained_tool_definitions(
    world: World, query: str, scope: DecodingScope | None = None
) -> list[dict[str, Any]]:
    """``TOOL_DEFINITIONS`` narrowed to one session, for servers that constrain decoding.

    ``service`` is required on ``query_metrics`` and ``query_logs`` and an ``enum`` of the
    services the world has plus those the question names (a question about a service the
    world lacks must still be searchable: its no-hit is the evidence); ``alert_name`` is an
    ``enum`` of the world's alert names. A narrow question's ``scope`` replaces either list by
    the services / alerts it names
    (:class:`~pytest_diageval.core.contract.scope_contract.DecodingScope`;
    ``None`` there keeps the full list), less what the question excludes; a narrow question
    naming an alert (``scope.by_alert``) makes ``query_metrics`` take the alert, required, and
    no keywords. Bounds (``limit``, ``top_k``) are the models' own ``minimum``/``maximum``. The
    tools themselves still validate every call as before: this only narrows what a
    schema-following model can generate.
    """
    services = _sorted_unique(
        [*(a.service for a in world.alerts), *(log.service for log in world.logs)]
    )
    services += [name for name in services_named_in(query) if name not in services]
    alert_names = _sorted_unique(alert.alert_name for alert in world.alerts)
    if scope is not None and scope.services is not None:
        services = _sorted_unique(scope.services)
    if scope is not None and scope.alerts is not None:
        alert_names = _sorted_unique(scope.alerts)
    if scope is not None:  # what the question excludes is never offered
        services = [name for name in services if not scope.excludes(name)]
        alert_names = [name for name in alert_names if not scope.excludes(name)]
    definitions = copy.deepcopy(TOOL_DEFINITIONS)
    for definition in definitions:
        function = definition["function"]
        if function["name"] not in _SERVICE_TOOLS:
            continue
        parameters = function["parameters"]
        if services:
            parameters["properties"]["service"]["enum"] = services
            parameters["required"] = ["service", *parameters["required"]]
        if "alert_name" in parameters["properties"] and alert_names:
            parameters["properties"]["alert_name"]["enum"] = alert_names
            if scope is not None and scope.by_alert:
                _by_alert(parameters)
    return definitions


def _by_alert(parameters: dict[str, Any]) -> None:
    """``query_metrics`` for a narrow question naming an alert (``DecodingScope.by_alert``):
    the alert by name, required, and no keywords."""
    del parameters["properties"]["keywords"]
    parameters["required"] = [*parameters["required"], "alert_name"]


def _sorted_unique(values: Iterable[str | None]) -> list[str]:
    return sorted({value for value in values if value})


def _argument_error(tool: str, error: ValidationError) -> ToolArgumentError:
    allowed = ", ".join(TOOL_ARGUMENT_MODELS[tool].model_fields) or "(none)"
    problems = []
    for detail in error.errors():
        argument = ".".join(str(part) for part in detail["loc"]) or "<arguments>"
        if detail["type"] == "extra_forbidden":
            problems.append(f"unknown argument {argument!r}")
        else:
            problems.append(f"argument {argument!r}: {detail['msg']} (got {detail['input']!r})")
    return ToolArgumentError(f"{tool}: {'; '.join(problems)}; allowed arguments: {allowed}")


def parse_tool_arguments(name: str, arguments: Mapping[str, Any] | str | None) -> ToolArgs:
    """Validate a call's arguments (a mapping or a model's JSON text) for tool ``name``."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as error:
            raise ToolArgumentError(f"{name}: arguments are not valid JSON: {error}") from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise ToolArgumentError(
            f"{name}: arguments must be an object, got {type(arguments).__name__}"
        )
    try:
        return TOOL_ARGUMENT_MODELS[name].model_validate(dict(arguments))
    except ValidationError as error:
        raise _argument_error(name, error) from None
