"""The confirmed part of an answer: the cited evidence itself, rendered by code.

The model points, the code speaks (seed 004: "Composer 只表达 Verifier 允许输出的内容"). A claim
the composer uses (:mod:`.verified_claims`) contributes the items its passed bindings cite, and
each item is rendered from its own fields as the tool returned them
(:class:`~pytest_diageval.core.contract.contracts.EvidenceItem`), never from the claim's text:

* an alert: its name, state, severity, current value, threshold and duration, each labelled;
* a log: its time (in the world's zone), level and message, verbatim;
* a runbook block: its title, source and content, as knowledge, never as a confirmed fact;
* a cited empty search (a no-hit, which backs a negative observation): the search's own
  arguments (tool, service, keywords, alert name, level) and "no results".

Lines are grouped by service, one per item, duplicates merged (the same item cited twice, or
the same content returned by two calls); each names its source (tool, invocation id, raw
path). Nothing a model wrote appears: a claim's text, id, type and label are not read here,
only which claim is used and which of its bindings the gatekeeper passed. An item whose own
text would show raw machine output (a JSON object in a log message) is withheld and counted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any, Literal

from pytest_diageval.core.answer.answer_templates import strip_control
from pytest_diageval.core.answer.wording import Wording
from pytest_diageval.core.contract.contracts import (
    CheckedBinding,
    EvidenceItem,
    GatekeeperResult,
    ToolInvocation,
)
from pytest_diageval.core.contract.evidence_tools import LOOKUP_KNOWLEDGE, QUERY_LOGS, QUERY_METRICS
from pytest_diageval.core.contract.gatekeeper_rules import NO_HIT_RAW_PATHS

__all__ = ["SOURCE_TAG_RE", "ConfirmedEvidence", "render_confirmed"]

_ALL_SERVICES = ""  # the group of a search over every service (and of items naming none)

SOURCE_TAG_RE = re.compile(r"[（(](?:来源|source)[:：]\s*[^()（）]*[)）]")
"""A rendered line's source tag; the composer's raw-output check reads the answer without
these (a raw path is what a source tag names on purpose)."""


_Kind = Literal["item", "search", "knowledge"]


@dataclass
class _Line:
    service: str
    kind: _Kind
    text: str
    sources: list[str] = field(default_factory=list)
    timed: bool = False  # shows a time (converted to the world's zone)


@dataclass
class ConfirmedEvidence:
    """The rendered evidence of the used claims (see the module docstring)."""

    groups: dict[str, list[str]]
    """Service -> its items' lines, in order of first citation ("" is every service)."""
    searches: list[str]
    """Cited searches that found nothing (what a negative observation rests on)."""
    knowledge: list[str]
    """Runbook blocks the used claims cite: guidance, never listed as confirmed."""
    per_claim: dict[str, list[str]]
    """A used claim's id -> the lines its bindings gave (for the report, beside its wording)."""
    withheld: int = 0
    """Cited items not shown: off the question's scope, or raw machine output."""
    timed: bool = False
    """Some line shows a time (the answer then says the zone once)."""

    @property
    def claims_shown(self) -> list[str]:
        return [claim_id for claim_id, lines in self.per_claim.items() if lines]

    def sections(self, wording: Wording, heading: str) -> list[str]:
        """The confirmed part: ``heading`` above the items by service, then the searches that
        found nothing under their own heading ([] when nothing was rendered)."""
        out: list[str] = []
        if self.groups:
            out.append(heading)
            for service, lines in self.groups.items():
                out.append(f"{service or wording.all_services}{wording.colon}".rstrip())
                out.extend(f"- {line}" for line in lines)
        if self.searches:
            out.append(wording.no_hit_heading)
            out.extend(f"- {line}" for line in self.searches)
        return out


def render_confirmed(
    used: Sequence[str],
    gatekeeper: GatekeeperResult,
    invocations: Iterable[ToolInvocation],
    wording: Wording,
    *,
    zone: tzinfo | None = None,
    presentable: Callable[[str], bool] = lambda _text: True,
) -> ConfirmedEvidence:
    """Render the items the passed bindings of the ``used`` claims cite (claim ids, in order).

    ``presentable`` screens an item's own text (the templates' raw-output screen)."""
    rows = {row.id: row for row in invocations}
    lines: dict[tuple[_Kind, str, str], _Line] = {}
    per_claim: dict[str, list[tuple[_Kind, str, str]]] = {}
    withheld: set[tuple[int, str]] = set()
    for claim_id in used:
        keys: list[tuple[_Kind, str, str]] = []
        for binding in gatekeeper.checked_bindings:
            if binding.claim_id != claim_id or binding.status != "pass":
                continue
            rendered = _render_binding(binding, rows, wording, zone)
            if rendered is None:
                continue
            where, line = rendered
            if not presentable(line.text):
                withheld.add(where)
                continue
            key = (line.kind, line.service, line.text)
            kept = lines.setdefault(key, line)
            kept.sources.extend(s for s in line.sources if s not in kept.sources)
            if key not in keys:
                keys.append(key)
        per_claim[claim_id] = keys
    groups: dict[str, list[str]] = {}
    searches: list[str] = []
    knowledge: list[str] = []
    for line in lines.values():
        if line.kind == "item":
            groups.setdefault(line.service, []).append(_with_sources(line, wording))
        else:
            (searches if line.kind == "search" else knowledge).append(_with_sources(line, wording))
    by_claim = {
        claim_id: [_with_sources(lines[key], wording) for key in keys]
        for claim_id, keys in per_claim.items()
    }
    timed = any(line.timed for line in lines.values())
    return ConfirmedEvidence(groups, searches, knowledge, by_claim, len(withheld), timed)


def _with_sources(line: _Line, wording: Wording) -> str:
    gap = "" if wording.language == "zh" else " "
    return f"{line.text}{gap}{wording.source_tag(wording.source_separator.join(line.sources))}"


def _render_binding(
    binding: CheckedBinding,
    rows: Mapping[int, ToolInvocation],
    wording: Wording,
    zone: tzinfo | None,
) -> tuple[tuple[int, str], _Line] | None:
    row = rows.get(binding.source_invocation_id) if binding.source_invocation_id else None
    if row is None or binding.raw_path is None or row.retrieval_details is None:
        return None
    path = binding.raw_path.strip()
    source = f"{row.tool_name} #{row.id}"
    if path == NO_HIT_RAW_PATHS.get(row.tool_name):
        line = _no_hit(row, wording)
        line.sources.append(source)
        return (row.id, path), line
    item = _item(row, path)
    if item is None:
        return None
    line = _ITEM_RENDERERS[row.tool_name](item.fields, wording, zone)
    line.sources.append(f"{source} {path}")
    return (row.id, path), line


def _item(row: ToolInvocation, raw_path: str) -> EvidenceItem | None:
    details = row.retrieval_details
    items = details.evidence_items if details is not None else None
    return next((i for i in items or () if i.raw_path == raw_path), None)


# --------------------------------------------------------------------------- items


def _text(fields: Mapping[str, Any], key: str) -> str | None:
    """One field as one line of text (lists joined), control characters stripped."""
    value = fields.get(key)
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, list):
        value = ", ".join(str(v) for v in value)
    text = " ".join(strip_control(str(value)).split())
    return text or None


def _alert(fields: Mapping[str, Any], wording: Wording, _zone: tzinfo | None) -> _Line:
    name = _text(fields, "alert_name") or "?"
    state = _text(fields, "state")
    parts = [wording.states.get(state, state) if state else None]
    labelled = [
        (wording.severity, _text(fields, "severity")),
        (wording.current, _text(fields, "current")),
        (wording.threshold, _text(fields, "threshold")),
        (wording.duration, _text(fields, "duration")),
        (wording.samples, _text(fields, "samples")),
        (wording.apis, _text(fields, "apis")),
    ]
    parts += [f"{label} {value}" for label, value in labelled if value]
    body = wording.comma.join(p for p in parts if p)
    text = f"{wording.alert} {name}{wording.colon}{body}" if body else f"{wording.alert} {name}"
    return _Line(_text(fields, "service") or _ALL_SERVICES, "item", text)


def _log(fields: Mapping[str, Any], wording: Wording, zone: tzinfo | None) -> _Line:
    time = _time(_text(fields, "timestamp"), zone)
    head = " ".join(part for part in (wording.log, time, _text(fields, "level")) if part)
    message = _text(fields, "message") or ""
    service = _text(fields, "service") or _ALL_SERVICES
    return _Line(service, "item", f"{head}{wording.colon}{message}", timed=time is not None)


def _block(fields: Mapping[str, Any], wording: Wording, _zone: tzinfo | None) -> _Line:
    title, source = _text(fields, "title"), _text(fields, "source")
    label = wording.quote_title(title or "")
    if source:
        label += f"（{source}）" if wording.language == "zh" else f" ({source})"
    content = _text(fields, "content")
    text = f"{label}{wording.colon}{content}" if content else label
    return _Line(_ALL_SERVICES, "knowledge", text)


_ITEM_RENDERERS: dict[str, Callable[[Mapping[str, Any], Wording, tzinfo | None], _Line]] = {
    QUERY_METRICS: _alert,
    QUERY_LOGS: _log,
    LOOKUP_KNOWLEDGE: _block,
}


def _time(value: str | None, zone: tzinfo | None) -> str | None:
    """An ISO time in the world's zone, ``2026-07-08 11:02:00``; other text as it is."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    if moment.tzinfo is not None and zone is not None:
        moment = moment.astimezone(zone)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _no_hit(row: ToolInvocation, wording: Wording) -> _Line:
    """A search that found nothing, from its own arguments."""
    params = row.input_params
    service = _text(params, "service")
    keywords = params.get("keywords")
    if isinstance(keywords, str):
        keywords = [keywords]
    terms = [t for k in keywords or () if (t := " ".join(strip_control(str(k)).split()))]
    if row.tool_name == LOOKUP_KNOWLEDGE:
        query = _text(params, "query")
        return _Line(_ALL_SERVICES, "knowledge", wording.no_hit_knowledge(query or ""))
    text = wording.no_hit(
        "logs" if row.tool_name == QUERY_LOGS else "alerts",
        service=service,
        alert_name=_text(params, "alert_name"),
        keywords=terms,
        level=_text(params, "level"),
    )
    return _Line(service or _ALL_SERVICES, "search", text)
