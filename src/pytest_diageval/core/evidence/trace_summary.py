"""The verifier-facing ``tool_trace_summary``, built from persisted ``tool_invocation`` rows only.

Rules (seeds 000 / 003 / 004):

- Only evidence tools (``EVIDENCE_TOOLS``); helper tools never appear.
- Rows of the same tool, round and *topic* are merged into one entry. Topics, from
  ``input_params``, normalised (NFKC, case-folded, whitespace collapsed):
  ``query_metrics``: service + alert_name (keywords only when neither is given);
  ``query_logs``: service + the set of keyword synonym groups of ``tool_search``
  (HikariCP ≡ HikariPool ≡ 连接池耗尽 …), so rephrasings of one topic merge;
  ``lookup_knowledge``: ``normalise_query(query)``, the key the session dedup uses, so a
  deduped repeat merges with its original.
- Entries are numbered ``trace-1``, ``trace-2`` … over the whole session, in the order of each
  entry's first invocation id; every contributing id is kept in ``source_invocation_ids``.
- Evidence level of a row: ``direct`` when a supported row has evidence refs from
  ``query_metrics`` / ``query_logs`` (facts of the incident); ``indirect`` for a
  ``lookup_knowledge`` hit (runbook guidance, not a fact of this incident); ``none`` for
  failed, no-hit and deduped rows. An entry keeps the strongest level of its rows, so no-hit
  and deduped rows never raise it.
- ``success`` of an entry: at least one of its calls completed (a no-hit call completed; its
  gap shows as ``evidence_level="none"`` and the no-hit count). An entry of failed calls only
  is unsuccessful and its ``output_summary`` says why (``调用失败: timeout: …``).
- ``output_summary`` is bounded by ``OUTPUT_SUMMARY_CHARS``. It is built from the rows'
  ``evidence_refs`` texts (copies of tool output items that survive preview truncation), the
  first effective hit first, then the gap notes (no-hit / deduped / failed counts). It never
  names anything the outputs do not contain. Legacy rows without refs fall back to the
  complete items that can be read from the (possibly truncated) preview.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pytest_diageval.core.contract.contracts import (
    EVIDENCE_TOOLS,
    EvidenceLevel,
    EvidenceRef,
    ToolInvocation,
    ToolTraceSummaryItem,
)
from pytest_diageval.core.contract.evidence_tools import (
    EVIDENCE_TOOL_TABLE,
    GUIDANCE_TOOLS,
    LOOKUP_KNOWLEDGE,
    QUERY_LOGS,
)
from pytest_diageval.core.evidence.recorder import EVIDENCE_LIST_KEYS, extract_evidence_refs
from pytest_diageval.core.evidence.store import Store, stable_json
from pytest_diageval.core.evidence.tool_search import SYNONYM_GROUPS, fold, normalise_query

__all__ = [
    "FACT_CHARS",
    "INPUT_SUMMARY_CHARS",
    "OUTPUT_SUMMARY_CHARS",
    "QUERY_SAMPLE_CHARS",
    "QUERY_SAMPLE_LIMIT",
    "ToolTraceSummaryService",
    "summarize_invocations",
    "topic_key",
]

OUTPUT_SUMMARY_CHARS = 800
"""Hard bound of one entry's ``output_summary`` (characters)."""
FACT_CHARS = 240
"""Bound of one fact (one evidence ref text) inside ``output_summary``, so one long runbook
section cannot crowd out the other facts."""
INPUT_SUMMARY_CHARS = 160
"""Bound of ``input_summary``."""
QUERY_SAMPLE_LIMIT = 3
"""At most this many distinct ``query_samples`` per entry, each bounded by
``QUERY_SAMPLE_CHARS``."""
QUERY_SAMPLE_CHARS = 80

_FACT_PREFIX: dict[str, str] = {tool.name: tool.fact_prefix for tool in EVIDENCE_TOOL_TABLE}
_LEVEL_RANK: dict[EvidenceLevel, int] = {"none": 0, "indirect": 1, "direct": 2}
_ERROR_NOTE_CHARS = 160
_ELLIPSIS = "…"
_FACT_SEPARATOR = " | "

Outcome = Literal["hit", "no_hit", "deduped", "failed"]


@dataclass(frozen=True)
class _RowView:
    """One row as the summary sees it: its outcome, its refs and its evidence level."""

    row: ToolInvocation
    outcome: Outcome
    refs: tuple[EvidenceRef, ...]
    level: EvidenceLevel


# --------------------------------------------------------------------------- helpers


def _bound(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - len(_ELLIPSIS)] + _ELLIPSIS


def _render(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ", ".join(_render(item) for item in value)
    return stable_json(value)


def _normalise(value: Any) -> str:
    return "" if value is None else " ".join(fold(_render(value)).split())


def _distinct(values: Iterable[str | None]) -> list[str]:
    """Distinct non-empty values in first-seen order (a dict keeps order and is O(1) per test)."""
    return [value for value in dict.fromkeys(values) if value]


# --------------------------------------------------------------------------- topics


def _keyword_labels(keywords: Any) -> list[str]:
    """Sorted distinct topic labels of a keyword argument (a string or a list of strings).

    A keyword labels itself by the synonym group it equals, else by the groups whose terms
    it contains (the same rule the tools match with), else by its own folded text; a
    group's first term is its label.
    """
    raw = keywords if isinstance(keywords, list) else [keywords]
    labels: set[str] = set()
    for keyword in raw:
        folded = _normalise(keyword)
        if not folded:
            continue
        groups = [g for g in SYNONYM_GROUPS if folded in g]
        groups = groups or [g for g in SYNONYM_GROUPS if any(term in folded for term in g)]
        if groups:
            labels.update(group[0] for group in groups)
        else:
            labels.add(folded)
    return sorted(labels)


def topic_key(row: ToolInvocation) -> str:
    """The topic of a row; rows of the same tool, round and topic merge into one entry."""
    params = row.input_params
    if row.tool_name == LOOKUP_KNOWLEDGE:
        query = params.get("query")
        return f"query={normalise_query(query) if isinstance(query, str) else _normalise(query)}"
    service = _normalise(params.get("service"))
    keywords = ",".join(_keyword_labels(params.get("keywords")))
    if row.tool_name == QUERY_LOGS:
        return f"service={service}|keywords={keywords}"
    alert = _normalise(params.get("alert_name"))
    if service or alert:
        return f"service={service}|alert={alert}"
    return f"keywords={keywords}"


# --------------------------------------------------------------------------- rows


def _refs_from_preview(tool_name: str, preview: str | None) -> list[EvidenceRef]:
    """Refs of a legacy row (no stored refs): the complete items readable from the preview.

    ``stable_json`` writes ``"<list>":[item,item,…`` without spaces, so the items before the
    cut of a truncated preview still decode one by one.
    """
    key = EVIDENCE_LIST_KEYS.get(tool_name)
    if key is None or not preview:
        return []
    try:
        return extract_evidence_refs(tool_name, json.loads(preview))
    except json.JSONDecodeError:
        pass
    marker = f'"{key}":['
    position = preview.find(marker)
    if position < 0:
        return []
    position += len(marker)
    decoder, items = json.JSONDecoder(), []
    while True:
        try:
            item, position = decoder.raw_decode(preview, position)
        except json.JSONDecodeError:
            break
        items.append(item)
        if preview[position : position + 1] != ",":
            break
        position += 1
    return extract_evidence_refs(tool_name, {key: items})


def _view(row: ToolInvocation) -> _RowView:
    details = row.retrieval_details
    status = None if details is None else details.evidence_status
    if not row.success or status == "failed":
        return _RowView(row, "failed", (), "none")
    if status == "deduped":
        return _RowView(row, "deduped", (), "none")
    if status == "no_evidence":
        return _RowView(row, "no_hit", (), "none")
    if details is not None and details.evidence_refs is not None:
        refs = details.evidence_refs
    else:
        refs = _refs_from_preview(row.tool_name, row.output_preview)
    if not refs:
        return _RowView(row, "no_hit", (), "none")
    level: EvidenceLevel = "indirect" if row.tool_name in GUIDANCE_TOOLS else "direct"
    return _RowView(row, "hit", tuple(refs), level)


# --------------------------------------------------------------------------- summaries


def _input_summary(views: Sequence[_RowView]) -> str:
    params = views[0].row.input_params
    parts = [f"{key}={_render(params[key])}" for key in sorted(params) if params[key] is not None]
    text = ", ".join(parts) or "(无参数)"
    if len(views) > 1:
        text += f" (合并 {len(views)} 次调用)"
    return _bound(text, INPUT_SUMMARY_CHARS)


def _gap_notes(views: Sequence[_RowView]) -> list[str]:
    notes = []
    no_hit = [v for v in views if v.outcome == "no_hit"]
    if no_hit:
        notes.append(f"{len(no_hit)} 次调用成功但无匹配结果")
    deduped = [v for v in views if v.outcome == "deduped"]
    if deduped:
        details = deduped[0].row.retrieval_details
        reason = details.dedup_reason if details is not None else None
        suffix = f" ({_bound(reason, _ERROR_NOTE_CHARS)})" if reason else ""
        notes.append(f"{len(deduped)} 次检索被会话去重, 无新证据{suffix}")
    failed = [v for v in views if v.outcome == "failed"]
    if failed:
        error = _bound(failed[0].row.error_message or "未知错误", _ERROR_NOTE_CHARS)
        notes.append(f"{len(failed)} 次调用失败 ({error})")
    return notes


def _fit_facts(facts: Sequence[str], budget: int) -> str:
    """As many facts as fit in ``budget``, in order, then how many were left out."""
    reserve = len(f"{_FACT_SEPARATOR}(+{len(facts)} 条未列出)")
    shown: list[str] = []
    used = 0
    for index, fact in enumerate(facts):
        bounded = _bound(fact, FACT_CHARS)
        cost = len(bounded) + (len(_FACT_SEPARATOR) if shown else 0)
        more_follow = index < len(facts) - 1
        if used + cost + (reserve if more_follow else 0) > budget:
            break
        shown.append(bounded)
        used += cost
    if not shown:
        # The first effective hit always shows, cut to what is left.
        shown = [_bound(facts[0], max(budget - reserve, 1))]
    text = _FACT_SEPARATOR.join(shown)
    omitted = len(facts) - len(shown)
    return f"{text}{_FACT_SEPARATOR}(+{omitted} 条未列出)" if omitted else text


def _output_summary(tool_name: str, views: Sequence[_RowView]) -> str:
    # Whitespace is collapsed so a runbook's line breaks do not spend the budget.
    facts = _distinct(" ".join(ref.text.split()) for view in views for ref in view.refs)
    notes = _gap_notes(views)
    if not facts:
        if all(view.outcome == "failed" for view in views):
            error = views[0].row.error_message or "未知错误"
            text = f"调用失败: {error}"
            if len(views) > 1:
                text += f" (共 {len(views)} 次失败)"
            return _bound(text, OUTPUT_SUMMARY_CHARS)
        return _bound("无证据: " + "; ".join(notes), OUTPUT_SUMMARY_CHARS)
    tail = f"; 另: {'; '.join(notes)}" if notes else ""
    head = f"{_FACT_PREFIX[tool_name]}: "
    # Facts come first; the gap notes take what is left, and are cut first if need be.
    budget = OUTPUT_SUMMARY_CHARS - len(head) - min(len(tail), OUTPUT_SUMMARY_CHARS // 4)
    return _bound(head + _fit_facts(facts, budget) + tail, OUTPUT_SUMMARY_CHARS)


def _query_samples(views: Sequence[_RowView]) -> list[str] | None:
    samples = []
    for view in views:
        params = view.row.input_params
        query = params.get("query") if params.get("query") else params.get("keywords")
        if query:
            samples.append(_bound(_render(query).strip(), QUERY_SAMPLE_CHARS))
    return _distinct(samples)[:QUERY_SAMPLE_LIMIT] or None


def _retrieval_lists(views: Sequence[_RowView]) -> dict[str, list[str] | None]:
    details = [view.row.retrieval_details for view in views if view.row.retrieval_details]
    documents = [doc for d in details for doc in (d.source_documents or [])]
    return {
        "retrieval_layers": _distinct(d.retrieval_layer for d in details) or None,
        "relevance_levels": _distinct(d.relevance_level for d in details) or None,
        "source_documents": _distinct(documents) or None,
    }


def _item(number: int, views: Sequence[_RowView]) -> ToolTraceSummaryItem:
    first = views[0].row
    level = max((view.level for view in views), key=_LEVEL_RANK.__getitem__)
    return ToolTraceSummaryItem(
        trace_ref=f"trace-{number}",
        tool_name=first.tool_name,
        source_invocation_ids=[view.row.id for view in views],
        success=any(view.outcome != "failed" for view in views),
        input_summary=_input_summary(views),
        output_summary=_output_summary(first.tool_name, views),
        evidence_level=level,
        invocation_count=len(views),
        no_hit_invocation_count=sum(view.outcome == "no_hit" for view in views),
        failed_invocation_count=sum(view.outcome == "failed" for view in views),
        deduped_invocation_count=sum(view.outcome == "deduped" for view in views),
        round=first.round,
        query_samples=_query_samples(views),
        **_retrieval_lists(views),
    )


def summarize_invocations(rows: Sequence[ToolInvocation]) -> list[ToolTraceSummaryItem]:
    """The summary of a session's rows (any order; they are taken in id order)."""
    groups: dict[tuple[str, int, str], list[_RowView]] = {}
    for row in sorted(rows, key=lambda r: r.id):
        if row.tool_name in EVIDENCE_TOOLS:
            key = (row.tool_name, row.round, topic_key(row))
            groups.setdefault(key, []).append(_view(row))
    # dicts keep insertion order: entries come out in order of their first invocation id.
    return [_item(number, views) for number, views in enumerate(groups.values(), start=1)]


class ToolTraceSummaryService:
    """Reads a session's rows from the store and summarises them."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def build(self, session_id: str) -> list[ToolTraceSummaryItem]:
        return summarize_invocations(self._store.list_invocations(session_id))
