"""The one door every evidence-tool call goes through: call, time, and persist one row.

``ToolInvocationRecorder.call`` runs a tool of the session's ``Toolbox`` and, for an evidence
tool (``EVIDENCE_TOOLS``), writes exactly one ``tool_invocation`` row: input, measured
duration, success, a bounded ``output_preview`` (truncation marked), ``error_message`` on
failure and ``retrieval_details`` (evidence status, ``lookup_knowledge`` retrieval fields and
the ``evidence_refs``). Helper tools (``get_current_time``) run without a row.

``extract_evidence_refs`` turns a tool output into claim-addressable refs: one per usable
item, ``raw_path`` exactly ``$.alerts[i]`` / ``$.logs[i]`` / ``$.evidence_blocks[i]`` with
``i`` the index in the output list, and a ``text`` that copies concrete fields of that item
and nothing else. The text is never cut: the gatekeeper compares quotes with it, and a true
quote from past a cut would look forged. The refs are stored in ``retrieval_details``, so a
truncated preview loses no evidence; an item's size is bounded by its tool (``limit``,
``top_k``, one runbook section per block).

Error policy:

- ``ToolFailure`` (``ToolTimeout`` / ``ToolExecutionError``, and an output that says
  ``"success": false``): a row with ``success=False``, ``evidence_status="failed"`` and an
  ``error_message`` of the form ``"<kind>: <detail>"``; returned, not raised.
- ``ToolArgumentError``: it is an evidence call that failed, so it is recorded as a failed
  row (kind ``argument_error``) and then re-raised for the agent layer to report to the model.
- ``UnknownToolError``: not an evidence call at all, so no row; it propagates.
- Any other exception is a bug in a tool: recorded as a failed row (kind ``exception``) so the
  audit trail shows it, then re-raised so it is never hidden.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pytest_diageval.core.contract.contracts import (
    EVIDENCE_TOOLS,
    EvidenceItem,
    EvidenceRef,
    EvidenceStatus,
    RetrievalDetails,
    ToolInvocation,
)
from pytest_diageval.core.contract.evidence_tools import (
    EVIDENCE_TOOL_TABLE,
    LOOKUP_KNOWLEDGE,
    QUERY_LOGS,
    QUERY_METRICS,
)
from pytest_diageval.core.evidence.store import Store, stable_json
from pytest_diageval.core.evidence.tools import ToolArgumentError, ToolFailure, ToolTimeout

__all__ = [
    "DEFAULT_PREVIEW_CHARS",
    "EVIDENCE_LIST_KEYS",
    "RecordedCall",
    "ToolCaller",
    "ToolInvocationRecorder",
    "extract_evidence_items",
    "extract_evidence_refs",
]

DEFAULT_PREVIEW_CHARS = 2000
"""Default bound of ``output_preview``: ``stable_json(output)`` cut at this many characters."""

EVIDENCE_LIST_KEYS: dict[str, str] = {tool.name: tool.list_key for tool in EVIDENCE_TOOL_TABLE}
"""Which list of an evidence tool's output holds its citable items (``$.<key>[i]``)."""


class ToolCaller(Protocol):
    """What the recorder needs of a ``Toolbox``: one dispatching call."""

    def call(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class RecordedCall:
    """The outcome of one recorded call, as the agent layer needs it.

    ``invocation_id`` is the ``tool_invocation`` row id, ``None`` for helper tools;
    ``evidence_status`` is ``None`` for helper tools too (they are never evidence).
    ``output`` is ``None`` when the tool raised, and the tool's own answer otherwise (also
    when that answer reported ``"success": false``).
    """

    invocation_id: int | None
    tool_name: str
    success: bool
    output: dict[str, Any] | None
    error_message: str | None
    evidence_status: EvidenceStatus | None
    evidence_refs: tuple[EvidenceRef, ...] = ()


# --------------------------------------------------------------------------- evidence refs


def _format_value(value: Any) -> str:
    """Render one output field as written: strings verbatim, numbers as JSON writes them."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return ", ".join(_format_value(item) for item in value)
    return stable_json(value)


def _present(item: Mapping[str, Any], key: str) -> str | None:
    value = item.get(key)
    if value is None or value == "" or value == []:
        return None
    return _format_value(value)


def _alert_text(alert: Mapping[str, Any]) -> str | None:
    """``HighMemoryUsage firing, service=…, current=…, threshold=…, duration=…; <description>``,
    then ``; samples=…`` and ``; apis=…`` where the alert has them."""
    name = _present(alert, "alert_name")
    if name is None:
        return None
    head = " ".join(part for part in (name, _present(alert, "state")) if part)
    fields = [
        f"{key}={value}"
        for key in ("service", "current", "threshold", "duration")
        if (value := _present(alert, key)) is not None
    ]
    parts = [", ".join([head, *fields])]
    description = _present(alert, "description")
    if description is not None:
        parts.append(description)
    # Samples and APIs are copied as listed: the trend and the affected endpoints are
    # concrete facts the verifier needs (seed 004 lost them in a summary).
    parts.extend(f"{key}={value}" for key in ("samples", "apis") if (value := _present(alert, key)))
    return "; ".join(parts)


def _log_text(log: Mapping[str, Any]) -> str | None:
    """``[<timestamp>][<level>][<service>] <message>``, each part copied verbatim."""
    message = _present(log, "message")
    if message is None:
        return None
    tags = "".join(
        f"[{value}]"
        for key in ("timestamp", "level", "service")
        if (value := _present(log, key)) is not None
    )
    return f"{tags} {message}" if tags else message


def _block_text(block: Mapping[str, Any]) -> str | None:
    """``<title> (<source>): <content>``."""
    title, source, content = (_present(block, key) for key in ("title", "source", "content"))
    if title is None and content is None:
        return None
    label = " ".join(part for part in (title, f"({source})" if source else None) if part)
    if content is None:
        return label
    return f"{label}: {content}" if label else content


_TEXT_BUILDERS: dict[str, Callable[[Mapping[str, Any]], str | None]] = {
    QUERY_METRICS: _alert_text,
    QUERY_LOGS: _log_text,
    LOOKUP_KNOWLEDGE: _block_text,
}


def _usable_items(tool_name: str, output: Any) -> list[tuple[str, Mapping[str, Any], str]]:
    """``(raw_path, item, ref text)`` of each usable item of an evidence tool's output."""
    key = EVIDENCE_LIST_KEYS.get(tool_name)
    if key is None or not isinstance(output, Mapping):
        return []
    items = output.get(key)
    if not isinstance(items, list):
        return []
    build = _TEXT_BUILDERS[tool_name]
    usable = []
    for index, item in enumerate(items):
        text = build(item) if isinstance(item, Mapping) else None
        if text:
            usable.append((f"$.{key}[{index}]", item, text))
    return usable


def extract_evidence_items(tool_name: str, output: Any) -> list[EvidenceItem]:
    """The fields of the items :func:`extract_evidence_refs` makes refs of, by the same path
    (JSON values, as ``stable_json`` writes them back)."""
    return [
        EvidenceItem(raw_path=path, fields=json.loads(stable_json(dict(item))))
        for path, item, _ in _usable_items(tool_name, output)
    ]


def extract_evidence_refs(tool_name: str, output: Any) -> list[EvidenceRef]:
    """One ``EvidenceRef`` per usable item of an evidence tool's output list.

    An item is usable when it is an object carrying its primary field (alert: ``alert_name``;
    log: ``message``; block: ``title`` or ``content``). ``i`` in the raw path is the item's
    index in the output list, so skipped items leave gaps rather than renumbering. The text
    copies concrete fields only, in full. Helper or unknown tools and outputs without the
    expected list give ``[]``.
    """
    return [
        EvidenceRef(raw_path=path, text=text) for path, _, text in _usable_items(tool_name, output)
    ]


# --------------------------------------------------------------------------- retrieval details


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _source_documents(output: Mapping[str, Any]) -> list[str]:
    """Distinct block sources in output order."""
    blocks = output.get("evidence_blocks")
    sources: list[str] = []
    for block in blocks if isinstance(blocks, list) else []:
        source = block.get("source") if isinstance(block, Mapping) else None
        if isinstance(source, str) and source and source not in sources:
            sources.append(source)
    return sources


def _evidence_status(output: Mapping[str, Any], refs: Sequence[EvidenceRef]) -> EvidenceStatus:
    """A completed call: deduped if the tool says so, else supported exactly when refs exist."""
    if output.get("deduped") is True:
        return "deduped"
    return "supported" if refs else "no_evidence"


def _knowledge_fields(output: Mapping[str, Any]) -> dict[str, Any]:
    """The ``lookup_knowledge`` retrieval fields, copied when present and well-typed."""
    return {
        "retrieval_layer": _str_or_none(output.get("retrieval_layer")),
        "l0_count": _int_or_none(output.get("l0_count")),
        "l1_count": _int_or_none(output.get("l1_count")),
        "relevance_level": _str_or_none(output.get("relevance_level")),
        "dedup_reason": _str_or_none(output.get("dedup_reason")),
        "source_documents": _source_documents(output),
    }


def _success_details(
    tool_name: str, output: Mapping[str, Any], refs: Sequence[EvidenceRef]
) -> RetrievalDetails:
    extra = _knowledge_fields(output) if tool_name == LOOKUP_KNOWLEDGE else {}
    return RetrievalDetails(
        evidence_status=_evidence_status(output, refs),
        evidence_refs=list(refs),
        evidence_items=extract_evidence_items(tool_name, output),
        total=_int_or_none(output.get("total")),
        **extra,
    )


def _failure_kind(error: BaseException) -> str:
    if isinstance(error, ToolTimeout):
        return "timeout"
    if isinstance(error, ToolFailure):
        return "error"
    if isinstance(error, ToolArgumentError):
        return "argument_error"
    return "exception"


def _reported_failure(output: Mapping[str, Any]) -> str | None:
    """An output that reports ``"success": false`` is a failure, whatever else it holds."""
    if output.get("success") is not False:
        return None
    detail = output.get("error") or output.get("message") or "tool reported success=false"
    return f"error: {_format_value(detail)}"


# --------------------------------------------------------------------------- recorder


@dataclass(frozen=True)
class _Row:
    """What a row holds about the outcome of one evidence call."""

    success: bool
    error_message: str | None
    output_preview: str | None
    output_truncated: bool
    retrieval_details: RetrievalDetails


@dataclass(frozen=True)
class _Pending:
    """One evidence call in flight: what the row needs besides the outcome."""

    tool_name: str
    params: dict[str, Any]
    round: int
    started: float


class ToolInvocationRecorder:
    """Runs tools for one session and persists every evidence call as one row.

    ``clock`` returns seconds (``time.perf_counter`` by default); it is injectable so that a
    test can pin ``duration_ms``. The duration is audit data only: it never reaches a model
    request.
    """

    def __init__(
        self,
        store: Store,
        toolbox: ToolCaller,
        session_id: str,
        *,
        preview_chars: int = DEFAULT_PREVIEW_CHARS,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        if preview_chars < 1:
            raise ValueError(f"preview_chars must be a positive integer, got {preview_chars!r}")
        self._store = store
        self._toolbox = toolbox
        self._session_id = session_id
        self._preview_chars = preview_chars
        self._clock = clock
        self._rows: list[ToolInvocation] | None = None  # the session's rows, once read

    def invocations(self) -> list[ToolInvocation]:
        """Every evidence call of this session so far, as stored (all rounds).

        The store is read once; from then on each row this recorder writes is added as it is
        written, so the executor's turns (each offers a submit schema built from these) do not
        re-read and re-parse the session's rows. The recorder is the session's one writer of
        tool rows; a test holds this view equal to the store's after whole runs.
        """
        if self._rows is None:
            self._rows = self._store.list_invocations(self._session_id)
        return list(self._rows)

    def call(self, tool_name: str, arguments: Mapping[str, Any], *, round: int) -> RecordedCall:
        """Run ``tool_name``; write a row if it is an evidence tool (see the module policy)."""
        if tool_name not in EVIDENCE_TOOLS:
            # Helper tools are never evidence; unknown names raise UnknownToolError here.
            output = self._toolbox.call(tool_name, arguments)
            return RecordedCall(None, tool_name, True, output, None, None)
        pending = _Pending(tool_name, dict(arguments), round, self._clock())
        try:
            output = self._toolbox.call(tool_name, pending.params)
        except ToolFailure as error:
            return self._write_failure(pending, f"{_failure_kind(error)}: {error}", None)
        except Exception as error:
            self._write_failure(pending, f"{_failure_kind(error)}: {error}", None)
            raise
        failure = _reported_failure(output)
        if failure is not None:
            return self._write_failure(pending, failure, output)
        return self._write_success(pending, output)

    def _elapsed_ms(self, pending: _Pending) -> int:
        return max(0, round((self._clock() - pending.started) * 1000))

    def _write_success(self, pending: _Pending, output: dict[str, Any]) -> RecordedCall:
        duration_ms = self._elapsed_ms(pending)
        refs = extract_evidence_refs(pending.tool_name, output)
        details = _success_details(pending.tool_name, output, refs)
        full = stable_json(output)
        row = _Row(
            success=True,
            error_message=None,
            output_preview=full[: self._preview_chars],
            output_truncated=len(full) > self._preview_chars,
            retrieval_details=details,
        )
        invocation_id = self._insert(pending, duration_ms, row)
        return RecordedCall(
            invocation_id,
            pending.tool_name,
            True,
            output,
            None,
            details.evidence_status,
            tuple(refs),
        )

    def _write_failure(
        self, pending: _Pending, message: str, output: dict[str, Any] | None
    ) -> RecordedCall:
        # A failed call has no usable output: a NULL preview is the explicit no-output state.
        row = _Row(
            success=False,
            error_message=message,
            output_preview=None,
            output_truncated=False,
            retrieval_details=RetrievalDetails(evidence_status="failed", evidence_refs=[]),
        )
        invocation_id = self._insert(pending, self._elapsed_ms(pending), row)
        return RecordedCall(invocation_id, pending.tool_name, False, output, message, "failed")

    def _insert(self, pending: _Pending, duration_ms: int, row: _Row) -> int:
        """Write the row; add it to the session's rows when they have been read already."""
        fields = {
            "session_id": self._session_id,
            "round": pending.round,
            "tool_name": pending.tool_name,
            "duration_ms": duration_ms,
            **vars(row),
        }
        invocation_id = self._store.insert_invocation(input_params=pending.params, **fields)
        if self._rows is not None:
            # The parameters as the store gives them back: JSON, keys in stable_json's order.
            params = json.loads(stable_json(pending.params))
            self._rows.append(ToolInvocation(id=invocation_id, input_params=params, **fields))
        return invocation_id
