"""Small text edits of one citation that the mutation kinds are made of, and what a
citation points at in a session's rows.

Each edits a binding in place and returns ``(what changed, None, None)``, or a reason string
when there is nothing to edit (the mutant is then equivalent by construction).
"""

from __future__ import annotations

import re
from typing import Any

from pytest_diageval.core.contract.contracts import ToolInvocation
from pytest_diageval.core.contract.evidence_tools import INCIDENT_EVIDENCE_TOOLS
from pytest_diageval.core.text.excerpt_tokens import NEGATION_WORDS

__all__ = [
    "Edit",
    "change_digit",
    "describe_binding",
    "flip_negation",
    "index_plus_one",
    "is_incident",
    "refs",
    "subject",
    "text_at",
]

Data = dict[str, Any]
INCIDENT_TOOLS = INCIDENT_EVIDENCE_TOOLS
Edit = tuple[str, Data | None, Data | None] | str

_LAST_INDEX = re.compile(r"\[(\d+)\](?!.*\[\d+\])")
_LATIN_NEGATION = re.compile(
    r"\b("
    + "|".join(sorted((w for w in NEGATION_WORDS if w.isascii()), key=len, reverse=True))
    + r")\b\s*",
    re.IGNORECASE,
)
_CJK_NEGATION = re.compile("没有|[" + "".join(w for w in NEGATION_WORDS if not w.isascii()) + "]")


def index_plus_one(binding: Data) -> Edit:
    path = binding.get("raw_path")
    match = _LAST_INDEX.search(path) if isinstance(path, str) else None
    if path is None or match is None:
        return "raw_path has no index"
    bumped = f"{path[: match.start()]}[{int(match.group(1)) + 1}]{path[match.end() :]}"
    binding["raw_path"] = bumped
    return f"raw_path {path} → {bumped}", None, None


def change_digit(binding: Data, *, first: bool) -> Edit:
    excerpt = binding.get("evidence_excerpt") or ""
    positions = [i for i, char in enumerate(excerpt) if char in "0123456789"]
    if not positions:
        return "the excerpt has no digit"
    if not first and len(positions) == 1:
        return "the excerpt has one digit: digit-last is digit-first"
    at = positions[0] if first else positions[-1]
    new = str((int(excerpt[at]) + 1) % 10)
    binding["evidence_excerpt"] = excerpt[:at] + new + excerpt[at + 1 :]
    which = "first" if first else "last"
    return f"{which} digit of the excerpt {excerpt[at]} → {new} (character {at})", None, None


def flip_negation(binding: Data) -> Edit:
    excerpt = binding.get("evidence_excerpt") or ""
    if not excerpt.strip():
        return "the binding has no excerpt"
    found = _LATIN_NEGATION.search(excerpt) or _CJK_NEGATION.search(excerpt)
    if found is not None:
        flipped = excerpt[: found.start()] + excerpt[found.end() :]
        change = f"negation {found.group(0).strip()!r} removed from the excerpt"
    else:
        prefix = "not " if excerpt.lstrip()[0].isascii() else "未"
        flipped = prefix + excerpt.lstrip()
        change = f"{prefix.strip()!r} put in front of the excerpt"
    binding["evidence_excerpt"] = flipped
    return change, None, None


def text_at(row: ToolInvocation, raw_path: Any) -> tuple[Any, ...]:
    """What citing ``raw_path`` of ``row`` quotes: tool, evidence status, the text there."""
    details = row.retrieval_details
    text = next((ref.text for ref in refs(row) if ref.raw_path == raw_path), None)
    return (row.tool_name, None if details is None else details.evidence_status, text)


def subject(row: ToolInvocation) -> Any:
    return row.input_params.get("service")


def refs(row: ToolInvocation | None) -> list[Any]:
    if row is None or row.retrieval_details is None:
        return []
    return list(row.retrieval_details.evidence_refs or [])


def is_incident(binding: Data, invocations: dict[int, ToolInvocation]) -> bool:
    row = invocations.get(binding.get("source_invocation_id"))  # type: ignore[arg-type]
    tool = row.tool_name if row is not None else binding.get("tool_name")
    return tool in INCIDENT_TOOLS


def describe_binding(binding: Data) -> str:
    return f"#{binding.get('source_invocation_id')} {binding.get('raw_path')}"
