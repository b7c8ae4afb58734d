"""Edits of a statement that keep its words plausible and change what it asserts.

The statement kinds of ``--diageval-mutate`` (:mod:`.kinds`) are made of these: each takes a
claim's text and returns the edited text and what changed, or a reason string when the text
has nothing to edit (the mutant is then equivalent by construction). They attack the facts a
guard must compare (numbers, units, subjects, aliases, modality, polarity, causal joins,
actions, times, hidden markup, digits of other scripts), never the citations.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

__all__ = ["StatementEdit", "statement_edits"]

StatementEdit = tuple[str, str] | str  # (edited text, what changed) or why nothing could be

_UNIT = r"(?:%|GB|MB|ms|s|m|次)(?![A-Za-z])"
_NUMBER_RE = re.compile(rf"(?<![\w.:/-])(\d+)(?:\.\d+)?(?=\s?{_UNIT})")  # a quantity
_UNITS = {"%": "GB", "GB": "MB", "MB": "GB", "ms": "s", "s": "ms", "m": "h", "次": "%"}
_UNIT_RE = re.compile(r"(?<=\d)(\s?)(%|GB|MB|ms|s|m|次)(?![A-Za-z])")
_SERVICE_RE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*-service")
_TIME_RE = re.compile(r"(?<![\d:])(\d{1,2}):(\d{2})(?=(?::\d{2})?(?![\d:]))")
_NEGATED_RE = re.compile(r"未检索到|没有|不存在|未|不")
_ASSERTED_RE = re.compile(r"存在|出现|发生|检索到|达到")
_ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


def statement_edits(
    services: Sequence[str], aliases: Mapping[str, Sequence[str]]
) -> dict[str, Callable[[str], StatementEdit]]:
    """Kind name -> its edit, for a world of ``services`` with ``aliases``."""
    return {
        "statement-number": _number,
        "statement-unit": _unit,
        "statement-subject": lambda text: _subject(text, services),
        "statement-alias": lambda text: _alias(text, aliases),
        "statement-modality": _modality,
        "statement-polarity": _polarity,
        "statement-causal": _causal,
        "statement-action": _action,
        "statement-timestamp": _timestamp,
        "statement-markup": _markup,
        "statement-digits": _digits,
        "statement-label": _label,
        "statement-zone": _zone,
    }


def _number(text: str) -> StatementEdit:
    found = _NUMBER_RE.search(text)
    if found is None:
        return "the statement states no quantity"
    old = found.group(1)
    new = str(int(old) + 1 if int(old) < 9 else int(old) * 2)
    return _replace(text, found.start(1), found.end(1), new), f"{old} → {new}"


def _unit(text: str) -> StatementEdit:
    found = _UNIT_RE.search(text)
    if found is None:
        return "the statement states no unit"
    new = _UNITS[found.group(2)]
    return _replace(text, found.start(2), found.end(2), new), f"unit {found.group(2)} → {new}"


def _subject(text: str, services: Sequence[str]) -> StatementEdit:
    found = _SERVICE_RE.search(text)
    other = next((s for s in services if found and s != found.group()), None)
    if found is None or other is None:
        return "the statement names no service, or the world has no other"
    return text.replace(found.group(), other), f"subject {found.group()} → {other}"


def _alias(text: str, aliases: Mapping[str, Sequence[str]]) -> StatementEdit:
    found = _SERVICE_RE.search(text)
    other = next(
        ((s, names[0]) for s, names in aliases.items() if found and s != found.group() and names),
        None,
    )
    if found is None or other is None:
        return "the statement names no service, or no other service has an alias"
    return text.replace(
        found.group(), other[1]
    ), f"subject {found.group()} → {other[1]} ({other[0]})"


def _modality(text: str) -> StatementEdit:
    """The claim hedged (可能 …); the mutant's answer keeps asserting it as confirmed."""
    if "可能" in text:
        return "the statement is hedged already"
    return "可能" + text, "可能 put before the claim; the answer still says it is confirmed"


def _polarity(text: str) -> StatementEdit:
    negated = _NEGATED_RE.search(text)
    if negated is not None:
        keep = (
            "检索到"
            if negated.group() == "未检索到"
            else ("存在" if "存在" in negated.group() else "")
        )
        edited = _replace(text, negated.start(), negated.end(), keep)
        return edited, f"negation {negated.group()!r} removed"
    asserted = _ASSERTED_RE.search(text)
    if asserted is None:
        return "the statement has no verb to negate"
    return _replace(
        text, asserted.start(), asserted.start(), "不"
    ), f"不 put before {asserted.group()}"


def _causal(text: str) -> StatementEdit:
    return _sentence(
        text
    ) + "，因此根因是内存泄漏。", "a causal conclusion joined (因此根因是内存泄漏)"


def _action(text: str) -> StatementEdit:
    return _sentence(text) + "，请立即重启并调高连接池上限。", "an action joined (重启, 调高上限)"


_CURRENT_RE = re.compile(r"(?:当前|达到|使用率|延迟|current(?:ly)?(?: at)?)\D{0,6}?(\d+(?:\.\d+)?)")
_THRESHOLD_RE = re.compile(r"(?:阈值|threshold(?: of)?)\D{0,6}?(\d+(?:\.\d+)?)")
_ZONED_RE = re.compile(r"(?:UTC|GMT|北京时间|Z\b|[+-]\d{2}:\d{2})")


def _label(text: str) -> StatementEdit:
    """The current value and the threshold trade places (当前 91%，阈值 85% → 当前 85%，
    阈值 91%)."""
    current, threshold = _CURRENT_RE.search(text), _THRESHOLD_RE.search(text)
    if current is None or threshold is None or current.group(1) == threshold.group(1):
        return "the statement binds no current value and threshold to swap"
    spans = sorted(
        [(current.start(1), current.end(1), threshold.group(1)),
         (threshold.start(1), threshold.end(1), current.group(1))],
        reverse=True,
    )  # fmt: skip
    for start, end, new in spans:
        text = _replace(text, start, end, new)
    return text, f"current {current.group(1)} ↔ threshold {threshold.group(1)}"


def _zone(text: str) -> StatementEdit:
    """A time of the world's zone called UTC (11:13 → UTC 11:13)."""
    found = _TIME_RE.search(text)
    if found is None or _ZONED_RE.search(text):
        return "the statement states no time without a zone"
    return _replace(text, found.start(), found.start(), "UTC "), f"time {found.group()} called UTC"


def _timestamp(text: str) -> StatementEdit:
    found = _TIME_RE.search(text)
    if found is None:
        return "the statement states no time"
    minute = (int(found.group(2)) + 1) % 60
    new = f"{found.group(1)}:{minute:02d}"
    return _replace(text, found.start(), found.end(), new), f"time {found.group()} → {new}"


def _markup(text: str) -> StatementEdit:
    negated = _NEGATED_RE.search(text)
    if negated is not None:  # the reader sees the negation struck out
        edited = _replace(text, negated.start(), negated.end(), f"~~{negated.group()}~~")
        return edited, f"negation {negated.group()!r} struck through (~~)"
    found = _SERVICE_RE.search(text)
    if found is None:
        return "the statement has no negation or service to strike"
    edited = _replace(text, found.start(), found.end(), f"~~{found.group()}~~")
    return edited, f"subject {found.group()} struck through (~~)"


def _digits(text: str) -> StatementEdit:
    edited = _number(text)
    if isinstance(edited, str):
        return edited
    found = _NUMBER_RE.search(text)
    assert found is not None  # _number found one
    new = edited[1].split(" → ")[1]
    return (
        _replace(text, found.start(1), found.end(1), new.translate(_ARABIC_INDIC)),
        f"{found.group(1)} → {new} in Arabic-Indic digits",
    )


def _sentence(text: str) -> str:
    return text.rstrip().rstrip("。.！!")


def _replace(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]
