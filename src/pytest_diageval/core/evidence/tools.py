"""The evidence tools over a mock ``World``: ``query_metrics``, ``query_logs``,
``lookup_knowledge`` and the helper ``get_current_time``.

One ``Toolbox`` serves one diagnosis session (it holds the ``lookup_knowledge`` dedup state).
Every call is validated by its pydantic argument model (``tool_arguments``, which also
generates ``TOOL_DEFINITIONS``, the OpenAI ``tools`` list), then the world's injected
``failures`` are applied, then the tool runs. Outputs are JSON-serialisable and
deterministic for a given world.

- ``query_metrics`` / ``query_logs``: ``service`` is exact (casefolded equality, never a
  substring and never a fallback to another service); ``keywords`` are OR-ed (a model lists
  alternative phrasings, any of them is a hit) and synonym-aware (``tool_search``);
  ``service``, ``alert_name``, ``level`` and the keywords are AND-ed with each other.
  A log search without a hit is exactly ``NO_LOG_HIT``: never a placeholder log.
- ``query_logs`` returns the most recent ``limit`` matches, oldest first (a trend reads in
  order); when more matched, ``matched_total`` and a ``message`` say so.
- ``lookup_knowledge``: L0 / L1 / none retrieval (``tool_search.KnowledgeIndex``). A second
  query with the same ``normalise_query`` form in one toolbox runs no search and answers the
  deduped result (``retrieval_layer: "dedup"``, with ``dedup_reason``), whatever ``top_k``.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pytest_diageval.core.contract.evidence_tools import LOOKUP_KNOWLEDGE, QUERY_LOGS, QUERY_METRICS
from pytest_diageval.core.evidence.tool_arguments import (
    TOOL_ARGUMENT_MODELS,
    TOOL_DEFINITIONS,
    TOOL_NAMES,
    GetCurrentTimeArgs,
    LookupKnowledgeArgs,
    QueryLogsArgs,
    QueryMetricsArgs,
    ToolArgumentError,
    parse_tool_arguments,
)
from pytest_diageval.core.evidence.tool_search import (
    KnowledgeIndex,
    fold,
    keyword_terms,
    normalise_query,
)
from pytest_diageval.core.evidence.world import Alert, LogEntry, World

__all__ = [
    "NO_LOG_HIT",
    "TOOL_DEFINITIONS",
    "TOOL_NAMES",
    "ToolArgumentError",
    "ToolExecutionError",
    "ToolFailure",
    "ToolTimeout",
    "Toolbox",
    "UnknownToolError",
    "knowledge_index",
]

NO_LOG_HIT: dict[str, Any] = {
    "success": True,
    "logs": [],
    "total": 0,
    "message": "未找到匹配的日志",
}
_NO_ALERT_MESSAGE = "未找到匹配的告警"
_NO_KNOWLEDGE_MESSAGE = "未找到相关知识"


class UnknownToolError(ValueError):
    """A tool name that the toolbox does not have; the message lists the allowed ones."""


class ToolFailure(RuntimeError):
    """A tool call that failed (injected by the world's ``failures``)."""

    def __init__(self, tool_name: str, message: str) -> None:
        super().__init__(message)
        self.tool_name = tool_name


class ToolTimeout(ToolFailure):
    """The tool did not answer in time."""


class ToolExecutionError(ToolFailure):
    """The tool answered with an error."""


# --------------------------------------------------------------------------- the toolbox


@dataclass(frozen=True)
class _Row:
    """One searchable world entry: its index, folded service and folded search text."""

    index: int
    service: str
    haystack: str


def _matcher(keywords: list[str] | None) -> Callable[[str], bool]:
    """Substring test for any term of any keyword (one regex alternation: one scan per row)."""
    terms = keyword_terms(keywords)
    if terms is None:
        return lambda haystack: True
    pattern = re.compile("|".join(re.escape(term) for term in terms))
    return lambda haystack: pattern.search(haystack) is not None


def _log_dict(log: LogEntry) -> dict[str, Any]:
    return {
        "timestamp": log.timestamp.isoformat(),
        "level": log.level,
        "service": log.service,
        "message": log.message,
    }


def _alert_dict(alert: Alert) -> dict[str, Any]:
    # Optional concrete fields (samples, apis, severity) appear only where the world has them.
    return alert.model_dump(mode="json", exclude_none=True)


# One index per world object: worlds are frozen and a packaged world is loaded once per
# process, so every session over it can search the same (immutable) index.
_INDEXES: dict[int, tuple[weakref.ref[World], KnowledgeIndex]] = {}


def knowledge_index(world: World) -> KnowledgeIndex:
    """The search index of ``world``'s runbooks, built once per world object."""
    key = id(world)
    cached = _INDEXES.get(key)
    if cached is not None and cached[0]() is world:
        return cached[1]
    index = KnowledgeIndex(world.knowledge)
    _INDEXES[key] = (weakref.ref(world, lambda _: _INDEXES.pop(key, None)), index)
    return index


class Toolbox:
    """The tools of one session over one world (see the module docstring)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self._knowledge = knowledge_index(world)
        self._seen_queries: dict[str, str] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ dispatch

    def call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> dict[str, Any]:
        """Run tool ``name``. ``arguments`` is a mapping, or the JSON text a model sent."""
        if name not in TOOL_ARGUMENT_MODELS:
            raise UnknownToolError(f"unknown tool {name!r}; allowed tools: {', '.join(TOOL_NAMES)}")
        args = parse_tool_arguments(name, arguments)
        self._raise_injected_failure(name)
        if isinstance(args, QueryMetricsArgs):
            return self._query_metrics(args)
        if isinstance(args, QueryLogsArgs):
            return self._query_logs(args)
        if isinstance(args, LookupKnowledgeArgs):
            return self._lookup_knowledge(args)
        assert isinstance(args, GetCurrentTimeArgs)
        return {"now": self.world.now.isoformat()}

    def _raise_injected_failure(self, name: str) -> None:
        kind = next((kind for tool, kind in self.world.failures.items() if tool == name), None)
        if kind == "timeout":
            raise ToolTimeout(name, f"{name} timed out (world failures: {name}: timeout)")
        if kind == "error":
            raise ToolExecutionError(
                name, f"{name} failed with a backend error (world failures: {name}: error)"
            )

    # ------------------------------------------------------------------ public methods

    def query_metrics(
        self,
        service: str | None = None,
        alert_name: str | None = None,
        keywords: list[str] | str | None = None,
    ) -> dict[str, Any]:
        return self.call(
            QUERY_METRICS, {"service": service, "alert_name": alert_name, "keywords": keywords}
        )

    def query_logs(
        self,
        service: str | None = None,
        keywords: list[str] | str | None = None,
        level: str | None = None,
        limit: int = 20,
    ) -> dict[str, Any]:
        return self.call(
            QUERY_LOGS,
            {"service": service, "keywords": keywords, "level": level, "limit": limit},
        )

    def lookup_knowledge(self, query: str, top_k: int = 3) -> dict[str, Any]:
        return self.call(LOOKUP_KNOWLEDGE, {"query": query, "top_k": top_k})

    def get_current_time(self) -> dict[str, Any]:
        return self.call("get_current_time", {})

    # ------------------------------------------------------------------ tools

    @cached_property
    def _log_rows(self) -> tuple[_Row, ...]:
        # Folded once per toolbox and kept in time order, so a query is one filtered scan.
        rows = (
            _Row(index, fold(log.service), fold(f"{log.service} {log.message}"))
            for index, log in enumerate(self.world.logs)
        )
        return tuple(
            sorted(rows, key=lambda row: (self.world.logs[row.index].timestamp, row.index))
        )

    @cached_property
    def _alert_rows(self) -> tuple[_Row, ...]:
        return tuple(
            _Row(
                index,
                fold(a.service),
                fold(
                    " ".join([a.alert_name, a.service, a.description, a.current, *(a.apis or [])])
                ),
            )
            for index, a in enumerate(self.world.alerts)
        )

    def _query_metrics(self, args: QueryMetricsArgs) -> dict[str, Any]:
        matches = _matcher(args.keywords)
        service = fold(args.service) if args.service else None
        name = fold(args.alert_name) if args.alert_name else None
        alerts = [
            _alert_dict(self.world.alerts[row.index])
            for row in self._alert_rows
            if (service is None or row.service == service)
            and (name is None or fold(self.world.alerts[row.index].alert_name) == name)
            and matches(row.haystack)
        ]
        message = f"找到 {len(alerts)} 条告警" if alerts else _NO_ALERT_MESSAGE
        return {"success": True, "alerts": alerts, "total": len(alerts), "message": message}

    def _query_logs(self, args: QueryLogsArgs) -> dict[str, Any]:
        matches = _matcher(args.keywords)
        service = fold(args.service) if args.service else None
        logs = self.world.logs
        matched = [
            row.index
            for row in self._log_rows
            if (service is None or row.service == service)
            and (args.level is None or logs[row.index].level == args.level)
            and matches(row.haystack)
        ]
        if not matched:
            return dict(NO_LOG_HIT)
        # The most recent `limit` matches, shown oldest first so a trend reads naturally.
        kept = matched[-args.limit :]
        result: dict[str, Any] = {
            "success": True,
            "logs": [_log_dict(logs[index]) for index in kept],
            "total": len(kept),
        }
        if len(matched) > len(kept):
            result["matched_total"] = len(matched)
            result["message"] = (
                f"共匹配 {len(matched)} 条日志，按 limit={args.limit}"
                f" 仅返回时间最近的 {len(kept)} 条"
            )
        return result

    def _lookup_knowledge(self, args: LookupKnowledgeArgs) -> dict[str, Any]:
        key = normalise_query(args.query)
        with self._lock:
            first = self._seen_queries.get(key)
            if first is None:
                self._seen_queries[key] = args.query
        if first is not None:
            return _deduped(key, first)
        found = self._knowledge.search(args.query, args.top_k)
        result: dict[str, Any] = {
            "success": True,
            "evidence_blocks": [block.as_dict() for block in found.blocks],
            "total": len(found.blocks),
            "retrieval_layer": found.layer,
            "l0_count": found.l0_count,
            "l1_count": found.l1_count,
            "relevance_level": found.relevance_level,
        }
        if not found.blocks:
            result["message"] = _NO_KNOWLEDGE_MESSAGE
        return result


def _deduped(key: str, first: str) -> dict[str, Any]:
    reason = (
        f"本会话已检索过相同的知识库查询（规范化后为 {key!r}，首次查询为 {first!r}），"
        "未重新检索；请使用首次检索返回的结果"
    )
    return {
        "success": True,
        "evidence_blocks": [],
        "total": 0,
        "deduped": True,
        "dedup_reason": reason,
        "retrieval_layer": "dedup",
        "l0_count": 0,
        "l1_count": 0,
    }
