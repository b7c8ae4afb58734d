"""The ``planted-injection`` mutant: an order written into the evidence a PASS rests on.

An attacker who can write a log line or an alert description does not need to forge a
citation: the model quotes the item truly, and the item tells the model (or the verifier) what
to conclude. For each binding of a PASS, this kind appends one injection phrasing to the cited
item *in the world* (a log's message, an alert's description, a runbook section's content),
so the citation stays true and the excerpt still matches; the verifier's answer stays the
PASS it gave. The gatekeeper must find the order (``evidence.instruction_like``) and keep it
from carrying the PASS.

The phrasings are ``planted_injections.jsonl`` beside this module: two of each technique of
the labelled corpus (``tests/data/injection_corpus/injections.jsonl``, same ids and texts:
homoglyphs, zero-width and full-width characters, letters spaced out, encodings, role
tokens, other languages, readers of any kind, displaced verdicts …). Which one a binding gets
is fixed by the cited text, so a run is reproducible and the suite's bindings spread over every
technique. The corpus's ``split_rows`` and ``split_fields`` techniques need two rows or two
fields, which one planted line is not: split rows are attacked by their own scenario, split
fields are read by ``instruction_like.fields_signals``.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from pytest_diageval.core.contract.contracts import ToolInvocation
from pytest_diageval.core.evidence.world import World
from pytest_diageval.harness.mutation.citation_edits import text_at

__all__ = ["PlantedInjection", "plant", "planted_variant", "planting", "variants"]


@dataclass(frozen=True)
class PlantedInjection:
    """One phrasing: its corpus id, its technique and its text."""

    id: str
    group: str
    text: str


@cache
def variants() -> tuple[PlantedInjection, ...]:
    """The shipped phrasings, in file order."""
    lines = resources.files(__package__).joinpath("planted_injections.jsonl").read_text("utf-8")
    return tuple(PlantedInjection(**json.loads(line)) for line in lines.splitlines() if line)


def planted_variant(cited_text: str, label: str) -> PlantedInjection:
    """The phrasing planted into the item whose text is ``cited_text`` (for binding
    ``label``): fixed by both, so every run plants the same one."""
    shipped = variants()
    return shipped[zlib.crc32(f"{label}\n{cited_text}".encode()) % len(shipped)]


def planting(
    cited: ToolInvocation | None, raw_path: object, label: str
) -> tuple[str, tuple[str, str]] | str:
    """What the mutant of binding ``label`` changes and (cited text, injection); or why it
    has nothing to plant into."""
    text = None if cited is None else text_at(cited, raw_path)[2]
    if not text:
        return "the binding cites no item of the session's evidence"
    variant = planted_variant(text, label)
    change = f"{variant.id} ({variant.group}) appended to the cited item in the world"
    return change, (text, variant.text)


def plant(world: World, cited_text: str, injection: str) -> World | None:
    """``world`` with ``injection`` appended to the item(s) whose text ``cited_text`` is;
    ``None`` when no alert, log or runbook section of the world is that item."""
    changed = False

    def appended(text: str) -> str:
        nonlocal changed
        changed = True
        return f"{text} {injection}"

    logs = [
        log.model_copy(update={"message": appended(log.message)})
        if log.message in cited_text and log.service in cited_text
        else log
        for log in world.logs
    ]
    alerts = [
        alert.model_copy(update={"description": appended(alert.description)})
        if alert.alert_name in cited_text and alert.service in cited_text and alert.description
        else alert
        for alert in world.alerts
    ]
    knowledge = [
        doc.model_copy(
            update={
                "sections": [
                    section.model_copy(update={"content": appended(section.content)})
                    if section.content in cited_text
                    else section
                    for section in doc.sections
                ]
            }
        )
        for doc in world.knowledge
    ]
    if not changed:
        return None
    return world.model_copy(update={"logs": logs, "alerts": alerts, "knowledge": knowledge})
