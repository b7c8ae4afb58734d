"""A claim's points, checked against the fields of the items they name (``docs/points.md``).

A point is what a claim states about one cited item, as data: a binding of the claim, a field
of the item it cites, a relation from a closed set, and a value or another field of the same
item. The code decides each point from the item's own fields; a claim with points is judged by
them and its bindings, never by its text (:mod:`.claim_support`).

Each point ends in one :class:`PointCheck`: ``holds``, or the rule that stops it
(``point.false``, ``point.binding_missing``, ``point.field_missing``, ``point.not_comparable``).
Quantities and times are read by :mod:`pytest_diageval.core.text.quantities`, the reading the
claim check already uses for numbers with units and clock times.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from pytest_diageval.core.contract.contracts import POINT_RELATIONS, EvidencePoint
from pytest_diageval.core.text.quantities import Moment, Quantity, read, zone_offset

__all__ = [
    "ORDER_RELATIONS",
    "RELATIONS",
    "TIME_RELATIONS",
    "PointCheck",
    "check_point",
]

ORDER_RELATIONS = ("above", "below", "at_least", "at_most")
"""Relations between two quantities of one kind."""
TIME_RELATIONS = ("before", "after")
"""Relations between two times."""
RELATIONS = POINT_RELATIONS
"""Every relation a point may name (the closed set of ``docs/points.md``)."""
assert set(RELATIONS) == {"equals", "contains", *ORDER_RELATIONS, *TIME_RELATIONS}

_MIN_CONTAINED = 2  # a one-character "contains" says nothing


@dataclass(frozen=True)
class PointCheck:
    """What one point came to: ``rule`` is None when it holds, else the rule that stops it."""

    point: EvidencePoint
    rule: str | None
    reason: str

    @property
    def holds(self) -> bool:
        return self.rule is None


def check_point(point: EvidencePoint, items: Mapping[int, Mapping[str, Any] | None]) -> PointCheck:
    """Decide ``point`` against ``items``: binding number -> the fields of the item that
    binding cites (None for a binding the gatekeeper did not pass)."""
    fields = items.get(point.binding)
    if fields is None:
        why = (
            "the claim has no such binding"
            if point.binding not in items
            else ("that binding did not pass the gatekeeper")
        )
        return PointCheck(point, "point.binding_missing", f"binding {point.binding}: {why}")
    if point.field not in fields:
        known = ", ".join(sorted(fields))
        return PointCheck(
            point, "point.field_missing",
            f"the item of binding {point.binding} has no field {point.field!r} ({known})",
        )  # fmt: skip
    malformed = _malformed(point)
    if malformed is not None:
        return PointCheck(point, "point.not_comparable", malformed)
    if point.other_field is not None and point.other_field not in fields:
        return PointCheck(
            point, "point.field_missing",
            f"the item of binding {point.binding} has no field {point.other_field!r}",
        )  # fmt: skip
    actual = fields[point.field]
    wanted = fields[point.other_field] if point.other_field is not None else point.value
    outcome = _decide(point.relation, actual, wanted)
    said = f"{point.field} {point.relation} {_said(point)}"
    if outcome is None:
        why = f"{said}: {_text(actual)!r} and {_text(wanted)!r} cannot be compared that way"
        return PointCheck(point, "point.not_comparable", why)
    if not outcome:
        why = f"{said} is false: the item's {point.field} is {_text(actual)!r}"
        return PointCheck(point, "point.false", why)
    return PointCheck(point, None, f"{said} holds")


def _malformed(point: EvidencePoint) -> str | None:
    if point.relation not in RELATIONS:
        return f"relation {point.relation!r} is not one of {', '.join(RELATIONS)}"
    if (point.value is None) == (point.other_field is None):
        return "a point gives exactly one of value and other_field"
    if point.relation == "contains":
        if point.value is None:
            return "contains takes a value, not another field"
        if len(_norm(point.value)) < _MIN_CONTAINED:
            return f"contains needs a value of {_MIN_CONTAINED} characters or more"
    return None


def _said(point: EvidencePoint) -> str:
    return repr(point.value) if point.value is not None else f"field {point.other_field!r}"


def _decide(relation: str, actual: Any, wanted: Any) -> bool | None:
    """True, False, or None when the two cannot be compared by ``relation``."""
    if relation == "equals":
        return _equals(actual, wanted)
    if relation == "contains":
        return _contains(actual, _text(wanted))
    if relation in ORDER_RELATIONS:
        return _ordered(relation, actual, wanted)
    return _timed(relation, actual, wanted)


def _equals(actual: Any, wanted: Any) -> bool | None:
    if isinstance(actual, list):
        return any(_equals(element, wanted) is True for element in actual)
    left, right = _text(actual), _text(wanted)
    if _norm(left) == _norm(right):
        return True
    asked = _quantity(right)
    kinds = [] if asked is None else [q for q in _counted(left) if q.dim == asked.dim]
    if asked is not None and len(kinds) > 1:
        return None  # two of the value's kind: which one would it equal?
    if asked is not None and kinds:
        return _same(kinds[0].value, asked.value)
    first, second = _moment(left), _moment(right)
    if first is not None and second is not None:
        there, here = _instant(first, first), _instant(second, first)
        return None if there is None or here is None else there == here
    return False


def _contains(actual: Any, wanted: str) -> bool:
    if isinstance(actual, list):
        return any(_contains(element, wanted) for element in actual)
    text = _text(actual)
    if _occurs(_norm(wanted), _norm(text)):
        return True
    asked = _quantity(wanted)
    if asked is None:
        return False
    return any(
        found.dim == asked.dim and _same(found.value, asked.value) for found in _counted(text)
    )


def _occurs(value: str, text: str) -> bool:
    """``value`` in ``text``, not as a piece of a longer number (``200ms`` is not in
    ``1200ms``, ``9.5`` is not in ``19.55``)."""
    before = r"(?<![\d.])" if value[:1].isdigit() else ""
    after = r"(?![\d])" if value[-1:].isdigit() else ""
    return re.search(before + re.escape(value) + after, text) is not None


def _ordered(relation: str, actual: Any, wanted: Any) -> bool | None:
    asked = _quantity(_text(wanted))
    if asked is None:
        return None
    kinds = [q for q in _counted(_text(actual)) if q.dim == asked.dim]
    if len(kinds) != 1:
        return None
    value, limit = kinds[0].value, asked.value
    if relation == "above":
        return value > limit and not _same(value, limit)
    if relation == "below":
        return value < limit and not _same(value, limit)
    if relation == "at_least":
        return value >= limit or _same(value, limit)
    return value <= limit or _same(value, limit)


def _timed(relation: str, actual: Any, wanted: Any) -> bool | None:
    field, asked = _moment(_text(actual)), _moment(_text(wanted))
    if field is None or asked is None:
        return None
    there, here = _instant(field, field), _instant(asked, field)
    if there is None or here is None:
        return None
    return there < here if relation == "before" else there > here


def _instant(moment: Moment, reference: Moment) -> datetime | None:
    """``moment`` as an aware datetime, its missing zone and date taken from ``reference``
    (the field's own time, in ``moment``'s zone); None when that leaves it incomplete."""
    zone = moment.zone or reference.zone
    if zone is None or moment.hour is None:
        return None
    year, month, day = moment.year, moment.month, moment.day
    if year is None or month is None or day is None:
        there = reference.instant()
        if there is None:
            return None
        local = there.astimezone(zone_offset(zone))
        year, month, day = local.year, local.month, local.day
    return replace(moment, year=year, month=month, day=day, zone=zone).instant()


def _quantity(text: str) -> Quantity | None:
    """The one quantity of ``text`` (a number and a total, ``3.5GB/4GB``, is its first part)."""
    found = _counted(text)
    return found[0] if len(found) == 1 else None


def _counted(text: str) -> list[Quantity]:
    """The quantities of ``text`` but a total written after a slash (``4GB`` of ``3.5GB/4GB``);
    a total said in words ("58 of 740") is a quantity like any other."""
    reading = read(_zoned(text))
    found: list[Quantity] = []
    for quantity in reading.quantities:
        slashed = bool(found) and reading.text[found[-1].end : quantity.start].strip() == "/"
        if not (quantity.label == "total" and slashed):
            found.append(quantity)
    return found


def _moment(text: str) -> Moment | None:
    found = read(_zoned(text)).moments
    return found[0] if len(found) == 1 else None


_SPACED_OFFSET = re.compile(r"(\d{1,2}:\d{2}(?::\d{2})?)\s+([+-]\d{2}:?\d{2})(?![\d:])")


def _zoned(text: str) -> str:
    """``2026-07-08 11:02 +08:00`` read as ``11:02+08:00``: an offset after a space is the
    time's zone, not a second time."""
    return _SPACED_OFFSET.sub(_joined, text)


def _joined(found: re.Match[str]) -> str:
    clock, offset = found.group(1), found.group(2)
    seconds = "" if clock.count(":") == 2 else ":00"  # the reader takes an offset after seconds
    return f"{clock}{seconds}{offset}"


def _same(first: float, second: float) -> bool:
    return math.isclose(first, second, rel_tol=1e-9, abs_tol=1e-9)


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_text(element) for element in value)
    return "" if value is None else str(value)


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())
