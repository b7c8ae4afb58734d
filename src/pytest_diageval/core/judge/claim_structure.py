"""Does a claim say what its cited items say? Read by structure, not by pooled words.

A binding that passed the gatekeeper proves the quote is real; this module compares what the
claim *asserts* with the items it cites, one structure at a time (issue 37). Each check names
the rule of ``core/contract/rules.py`` it reports; the first problem found decides.

====================================  ========================================================
rule                                  what the claim does
====================================  ========================================================
``claim.number_not_cited``            states a number no item shows, after units are
                                      converted (30 秒 = 30000ms, 百分之九十一 = 91%), or the
                                      right number with the wrong unit (30 分钟 for 30000ms)
``claim.label_swapped``               binds an item's number to another label: the claim's
                                      current value is the item's threshold, active is idle
``claim.subject_swapped``             says of one service a number only another's item shows
``claim.timestamp_not_cited``         states a time or date no item carries, zones converted
                                      (UTC 03:13:47 = 11:13:47+08:00)
``claim.entity_not_cited``            names an id, a class or a product no item names (an id's
                                      base counts: HikariPool for HikariPool-1)
``claim.polarity_contradicts_item``   says resolved of a firing alert (or the reverse), says
                                      idle connections remain when the item counts 0, or
                                      reports success where the item reports a failure
``claim.runbook_as_fact``             states a runbook's general guidance as this incident's
                                      fact (neither hedged nor said to be guidance)
``claim.modality_hardened``           states as settled what its item only suspects (疑似,
                                      may): at most indirect
``claim.causal_across_items``         joins a cause and an effect from different items that
                                      no item links: at most indirect
====================================  ========================================================

A negative observation is read by :func:`negative_window_problem` as well: the window it
states must lie inside the window its no-hit searched.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pytest_diageval.core.contract.evidence_tools import GUIDANCE_TOOLS
from pytest_diageval.core.scope.floor import topics_about
from pytest_diageval.core.text.key_facts import SERVICE_RE as _SERVICE_RE
from pytest_diageval.core.text.normalised import normalise
from pytest_diageval.core.text.quantities import (
    UNIT_FORMS,
    Moment,
    Quantity,
    Reading,
    StructureVocabulary,
    read,
    structure_vocabulary,
)

__all__ = [
    "CitedItem",
    "StructureProblem",
    "negative_window_problem",
    "structure_problem",
    "term_group",
]

_FIELD_LABELS = {"current": "current", "threshold": "threshold", "duration": "duration"}
_TOLERANCE, _APPROX_TOLERANCE = 0.001, 0.06
_ENTITY_RES = (
    re.compile(r"(?<![A-Za-z0-9_])[A-Za-z][A-Za-z0-9_]*(?:[-.:][A-Za-z0-9_]+)+(?![A-Za-z0-9_])"),
    re.compile(r"(?<![A-Za-z0-9_])[A-Za-z]+[0-9][A-Za-z0-9_]*(?![A-Za-z0-9_])"),
    re.compile(r"(?<![A-Za-z0-9_])[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*(?![A-Za-z0-9_])"),
    re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Za-z]{2,}(?![A-Za-z0-9_])"),
    re.compile(r"(?<![\w.])v?\d+(?:\.\d+){2,}(?::\d+)?(?![\w.])"),
    re.compile(r"(?<![\w/.])/[\w.-]+(?:/[\w.{}:-]+)+"),  # a path: /api/v1/users/address
    re.compile(r"(?<![\w.])[a-z]+_[a-z0-9_]+(?![\w])"),  # a snake_case name: idx_user_id
    re.compile(r"(?<![\w.])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![\w])"),  # WH_ETL_L
)


@dataclass(frozen=True)
class CitedItem:
    """One item a claim's passed binding cites (an alert, a log line, a runbook block): its
    tool and its own fields."""

    tool: str
    fields: Mapping[str, Any]

    @property
    def service(self) -> str | None:
        """The service the item is about (its ``service`` field), normalised."""
        named = self.fields.get("service")
        return normalise(named) if isinstance(named, str) and named.strip() else None

    @property
    def text(self) -> str:
        """Every field value of the item, in one line (what its words are read from)."""
        return " ; ".join(_flat(value) for value in self.fields.values())


def _flat(value: Any) -> str:
    if isinstance(value, Mapping):
        return " ; ".join(f"{k}: {_flat(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return " , ".join(_flat(v) for v in value)
    return "" if value is None else str(value)


@dataclass(frozen=True)
class StructureProblem:
    """One rule the claim breaks, and why, in words a reviewer reads."""

    rule: str
    reason: str


@dataclass(frozen=True)
class _ItemReading:
    item: CitedItem
    reading: Reading
    quantities: tuple[Quantity, ...]


def term_group(term: str) -> frozenset[str]:
    """Every form of ``term`` in the vocabulary's term groups (itself when in none)."""
    folded = normalise(term)
    for group in structure_vocabulary().terms:
        if folded in group:
            return group
    return frozenset({folded})


def structure_problem(
    claim_text: str, claim_type: str, items: Sequence[CitedItem]
) -> StructureProblem | None:
    """The first structural disagreement between a positive claim and its cited items (None
    when the claim says nothing they do not show). ``items`` are the incident and runbook
    items its passed bindings cite; no-hit searches are :func:`negative_window_problem`'s."""
    if not items:
        return None
    claim = read(claim_text)
    readings = [_read_item(item) for item in items]
    return (
        _number_problem(claim, readings)
        or _time_problem(claim, readings)
        or _entity_problem(claim_text, readings)
        or _topic_problem(claim, claim_type, readings)
        or _polarity_problem(claim, readings)
        or _modality_problem(claim, claim_type, readings)
        or _causal_problem(claim, claim_type, readings)
    )


# -------------------------------------------------------------------------------- items


def _read_item(item: CitedItem) -> _ItemReading:
    """The item's numbers: its labelled fields (an alert's current, threshold, duration) and
    its text, where a number equal to one labelled field takes that field's label."""
    labelled = tuple(
        (label, str(value))
        for name, label in _FIELD_LABELS.items()
        for value in [item.fields.get(name)]
        if isinstance(value, str | int | float) and not isinstance(value, bool)
    )
    reading, quantities = _item_numbers(item.text, labelled)
    return _ItemReading(item, reading, quantities)


@functools.lru_cache(maxsize=4096)
def _item_numbers(
    text: str, labelled: tuple[tuple[str, str], ...]
) -> tuple[Reading, tuple[Quantity, ...]]:
    """:func:`_read_item`'s reading, cached by the item's text and labelled fields (every
    round and every claim reads the same items)."""
    reading = read(text)
    fields = [_relabelled(q, label) for label, value in labelled for q in read(value).quantities]
    quantities = [_field_label(q, fields) for q in reading.quantities]
    return reading, tuple(quantities + fields)


def _field_label(quantity: Quantity, fields: Sequence[Quantity]) -> Quantity:
    labels = {f.label for f in fields if f.dim == quantity.dim and f.value == quantity.value}
    if quantity.label is None and len(labels) == 1:
        return replace(quantity, label=labels.pop())
    return quantity


def _relabelled(quantity: Quantity, label: str) -> Quantity:
    return Quantity(
        quantity.raw, quantity.value, quantity.dim, quantity.unit, label, -1, -1, quantity.approx
    )


# ------------------------------------------------------------------------------ numbers


def _same(claim: Quantity, item: Quantity) -> bool:
    """The same quantity: equal as written in one unit; within rounding across units
    (1229 MiB = 1.2 GiB); within a few percent when either says it is approximate."""
    tolerance = _APPROX_TOLERANCE if claim.approx or item.approx else _TOLERANCE
    if claim.dim == item.dim and claim.unit == item.unit and not (claim.approx or item.approx):
        return claim.raw == item.raw
    if claim.dim == item.dim:
        return abs(claim.value - item.value) <= tolerance * max(abs(item.value), 1e-9)
    field_value = item.dim == "plain" and item.start < 0  # an alert field: "current": "91"
    if claim.dim == "percent" and item.dim == "plain" and 0 < item.raw < 1:  # 82% = 0.82
        return abs(claim.raw - item.raw * 100) <= 0.01
    if claim.dim == "plain" or (claim.dim == "percent" and field_value):
        # a number written without its unit is the item's number as written
        return claim.raw == item.raw or (
            tolerance > _TOLERANCE and abs(claim.raw - item.raw) <= tolerance * abs(item.raw)
        )
    return False


def _derived(claim: Quantity, items: Sequence[_ItemReading]) -> bool:
    """A number the claim computed from its items: a difference or a sum of two numbers of
    one item (91% - 85% = 6 points), a small ratio ("twice its limit"), the time between two
    items' timestamps ("six seconds later"), or a count of what the items list ("两个接口")."""
    return _arithmetic(claim, items) or _elapsed(claim, items) or _counted(claim, items)


def _arithmetic(claim: Quantity, items: Sequence[_ItemReading]) -> bool:
    for reading in items:
        values = [q for q in reading.quantities if q.dim == claim.dim or claim.dim == "plain"]
        for first in values:
            for second in values:
                if first is second or first.dim != second.dim or second.value == 0:
                    continue
                wanted = claim.value if claim.dim == first.dim else claim.raw
                for value in (first.value - second.value, first.value + second.value):
                    if value > 0 and abs(wanted - value) <= _TOLERANCE * max(value, 1e-9):
                        return True
                ratio = first.value / second.value
                if claim.dim == "plain" and 1 < claim.raw <= 10 and abs(ratio - claim.raw) <= 0.5:
                    return True
    return False


def _elapsed(claim: Quantity, items: Sequence[_ItemReading]) -> bool:
    if claim.dim != "duration":
        return False
    stamps = [
        m for r in items for m in r.reading.moments if m.hour is not None and m.minute is not None
    ]
    for first in stamps:
        for second in stamps:
            gap = abs(_seconds(first) - _seconds(second)) * 1000
            if gap and abs(gap - claim.value) <= _TOLERANCE * gap:
                return True
    return False


def _seconds(moment: Moment) -> float:
    return (moment.hour or 0) * 3600 + (moment.minute or 0) * 60 + (moment.second or 0)


def _counted(claim: Quantity, items: Sequence[_ItemReading]) -> bool:
    if claim.dim != "plain" or claim.raw != int(claim.raw):
        return False
    sizes = {1, len(items)} | {
        len(value)
        for r in items
        for value in r.item.fields.values()
        if isinstance(value, list | tuple)
    }
    return int(claim.raw) in sizes


_MORE = re.compile(r"(?:more than|over|above|at least|超过|高于|多于|不止)\s*$")
_LESS = re.compile(r"(?:less than|below|不到|低于|少于)\s*$")  # "within 30 s" is a limit


def _bound_holds(claim: Reading, quantity: Quantity, items: Sequence[_ItemReading]) -> bool:
    """ "320 seconds — more than five minutes": a bound the claim puts on an item's number,
    which that number meets."""
    before = claim.text[max(0, quantity.start - 12) : quantity.start]
    same = [q for r in items for q in r.quantities if q.dim == quantity.dim]
    if _MORE.search(before):
        return any(q.value > quantity.value for q in same)
    if _LESS.search(before):
        return any(q.value < quantity.value for q in same)
    return False


def _written_in(quantity: Quantity, items: Sequence[_ItemReading]) -> bool:
    """A plain number the items write inside an id or a path (sku/10086, HTTP 429)."""
    if quantity.dim != "plain" or quantity.raw != int(quantity.raw):
        return False
    digits = re.compile(rf"(?<![\d.]){int(quantity.raw)}(?![\d.])")
    return any(digits.search(r.reading.text) for r in items)


def _claim_services(text: str, items: Sequence[_ItemReading]) -> list[tuple[int, str]]:
    """Where the claim names a service: a ``*-service`` name or a cited item's service."""
    named = [(found.start(), found.group()) for found in _SERVICE_RE.finditer(text)]
    for service in {r.item.service for r in items if r.item.service}:
        if not _SERVICE_RE.fullmatch(service):
            edge = re.compile(rf"(?<![a-z0-9-]){re.escape(service)}(?![a-z0-9-])")
            named += [(found.start(), service) for found in edge.finditer(text)]
    return sorted(named)


def _number_problem(claim: Reading, items: Sequence[_ItemReading]) -> StructureProblem | None:
    services = _claim_services(claim.text, items)
    for quantity in claim.quantities:
        shown = _written(claim, quantity)
        matches = [(r, q) for r in items for q in r.quantities if _same(quantity, q)]
        if not matches:
            if _derived(quantity, items) or _written_in(quantity, items):
                continue
            if _bound_holds(claim, quantity, items):
                continue
            other = [q for r in items for q in r.quantities if q.raw == quantity.raw]
            if other and quantity.dim != "plain":
                return StructureProblem(
                    "claim.number_not_cited",
                    f"the claim states {shown}; the items show {_written_item(other[0])},"
                    " a different quantity (unit)",
                )
            return StructureProblem(
                "claim.number_not_cited", f"the claim states {shown}, which no cited item shows"
            )
        words = structure_vocabulary()
        labelled = any(q.label == quantity.label and q.dim == quantity.dim for _, q in (
            (r, q) for r in items for q in r.quantities
        ))  # fmt: skip
        conflicting = all(words.conflicting(quantity.label, q.label) for _, q in matches)
        if (
            quantity.label
            and (labelled or quantity.label in ("current", "threshold"))
            and (conflicting)
        ):
            return StructureProblem(
                "claim.label_swapped",
                f"the claim gives {shown} as {quantity.label}; its items show that number as"
                f" {matches[0][1].label}",
            )
        order = _order_problem(claim, quantity, items)
        if order is not None:
            return order
        subject = _subject_of(services, quantity.start)
        about = [r.item.service for r, _ in matches]
        named = any(subject and subject in r.reading.text for r, _ in matches)
        if subject and None not in about and subject not in about and not named:
            return StructureProblem(
                "claim.subject_swapped",
                f"the claim says {shown} of {subject}; only items about"
                f" {', '.join(sorted({a for a in about if a}))} show it",
            )
    return None


def _order_problem(
    claim: Reading, quantity: Quantity, items: Sequence[_ItemReading]
) -> StructureProblem | None:
    """A change "from X to Y" whose X the items show after Y (by their timestamps)."""
    if quantity.label != "after":
        return None
    before = next(
        (q for q in reversed(claim.quantities) if q.end <= quantity.start and q.label == "before"),
        None,
    )
    if before is None:
        return None
    first, then = _when(before, items), _when(quantity, items)
    if first is not None and then is not None and first > then:
        return StructureProblem(
            "claim.label_swapped",
            f"the claim says {_written(claim, before)} came before {_written(claim, quantity)};"
            " its items show them the other way round",
        )
    return None


def _when(quantity: Quantity, items: Sequence[_ItemReading]) -> float | None:
    """When the items show ``quantity``: the timestamp of the one item showing it."""
    times = {
        _instant(r)
        for r in items
        for q in r.quantities
        if _same(quantity, q) and _instant(r) is not None
    }
    return times.pop() if len(times) == 1 else None


def _instant(reading: _ItemReading) -> float | None:
    stamp = reading.item.fields.get("timestamp")
    moments = read(stamp).moments if isinstance(stamp, str) else ()
    if not moments or moments[0].hour is None:
        return None
    moment = moments[0].shifted_to("utc") or moments[0]
    days = (moment.year or 0) * 372 + (moment.month or 0) * 31 + (moment.day or 0)
    return days * 86400 + _seconds(moment)


def _subject_of(services: Sequence[tuple[int, str]], position: int) -> str | None:
    """The service named last before ``position`` (what the number is said of)."""
    before = [name for start, name in services if start < position]
    return before[-1] if before else None


def _written(reading: Reading, quantity: Quantity) -> str:
    return repr(reading.text[quantity.start : quantity.end].strip())


def _written_item(quantity: Quantity) -> str:
    return f"{quantity.raw:g}{quantity.unit}"


# -------------------------------------------------------------------------------- times


def _time_problem(claim: Reading, items: Sequence[_ItemReading]) -> StructureProblem | None:
    shown = [m for r in items for m in r.reading.moments]
    for moment in claim.moments:
        if not any(_moment_matches(moment, other) for other in shown):
            text = claim.text[moment.start : moment.end]
            return StructureProblem(
                "claim.timestamp_not_cited",
                f"the claim states the time {text!r}"
                + (f" ({moment.zone})" if moment.zone else "")
                + ", which no cited item carries in that zone",
            )
    return None


def _moment_matches(claim: Moment, item: Moment) -> bool:
    if claim.zone is not None and item.zone is not None and claim.zone != item.zone:
        moved = item.shifted_to(claim.zone)
        if moved is None:
            return False
        item = moved
    elif claim.zone is not None and item.zone is None:
        return False if claim.hour is not None and item.hour is not None else _fields(claim, item)
    return _fields(claim, item)


def _fields(claim: Moment, item: Moment) -> bool:
    pairs = (
        (claim.year, item.year), (claim.month, item.month), (claim.day, item.day),
        (claim.hour, item.hour), (claim.minute, item.minute), (claim.second, item.second),
    )  # fmt: skip
    if claim.hour is not None and item.hour is None:
        return False
    if claim.month is not None and item.month is None:
        return False
    return all(wanted is None or have is None or wanted == have for wanted, have in pairs)


# ----------------------------------------------------------------------------- entities


def _entity_problem(claim_text: str, items: Sequence[_ItemReading]) -> StructureProblem | None:
    shown = " ".join(normalise(r.item.text) for r in items)
    for entity in _entities(claim_text):
        if not _entity_shown(entity, shown):
            return StructureProblem(
                "claim.entity_not_cited", f"the claim names {entity!r}, which no cited item names"
            )
    return None


def _entities(text: str) -> list[str]:
    words = structure_vocabulary()
    found: list[str] = []
    chinese = len(re.findall(r"[\u4e00-\u9fff]", text)) * 2 > len(re.findall(r"[A-Za-z]", text))
    starts = {m.start() for m in re.finditer(r"(?:^|[.!?。！？]\s*)([A-Za-z])", text)}
    for pattern in _ENTITY_RES:
        for match in pattern.finditer(text):
            token = match.group().strip(".:-")
            folded = normalise(token)
            if not token or folded in words.common or folded in UNIT_FORMS:
                continue
            at = match.start()
            plain = not re.search(r"[0-9]", token) and not re.search(r"[A-Z]", token[1:])
            compound = not chinese and plain and (at > 0 or token[0].isupper())
            spoken = all(part in words.en_numbers for part in folded.split("-"))
            if pattern is _ENTITY_RES[0] and (compound or spoken):
                continue  # an English compound (crash-looping, Fan-out, twenty-one)
            if pattern is _ENTITY_RES[3] and (at in starts or _after_sentence(text, at)):
                continue
            numeric = pattern is _ENTITY_RES[4]
            if not numeric and read(token).quantities and not token[:1].isalpha():
                continue
            if _SERVICE_RE.fullmatch(folded) or folded in found:
                continue
            found.append(folded)
    return found


def _after_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip()
    return not before or before[-1] in ".!?。！？:：;；,，(（\"'“"


def _entity_shown(entity: str, shown: str) -> bool:
    if entity in shown or (entity.endswith("s") and len(entity) > 3 and entity[:-1] in shown):
        return True  # a plural ("PUTs") names what its item names
    for group in structure_vocabulary().synonyms:
        if entity in group:
            return any(form in shown for form in group if len(form) > 1)
    return False


def _topic_problem(
    claim: Reading, claim_type: str, items: Sequence[_ItemReading]
) -> StructureProblem | None:
    """A diagnosis the claim names (内存泄漏, 慢查询, OOM: the scope vocabulary's topics) that
    no cited item is about: "HighMemoryUsage 告警，已确认内存泄漏" cites an alert about memory,
    not a leak."""
    if claim_type in ("hypothesis", "risk") or _hedged(claim.text):
        return None
    services = sorted({r.item.service for r in items if r.item.service})
    shown: set[str] = set()
    for reading in items:
        alert = reading.item.fields.get("alert_name")
        alerts = [alert] if isinstance(alert, str) else []
        shown.update(topics_about(reading.reading.text, services, {}, alerts))
    diagnoses = structure_vocabulary().diagnoses
    for topic in topics_about(claim.text, services, {}, []):
        if topic in diagnoses and topic not in shown:
            return StructureProblem(
                "claim.topic_not_cited",
                f"the claim speaks of {topic}; none of its cited items is about it",
            )
    return None


# ----------------------------------------------------------------------------- polarity


def _clauses(text: str) -> list[str]:
    return [part for part in re.split(r"[,;，；。!?！？]|\bbut\b|但|但是|而且|且", text) if part]


def _negated(clause: str, start: int) -> bool:
    """A negation right before ``start``, within its clause: the last four characters of
    Chinese (没有超时, 未发现可用), the last three words of English ("did not complete",
    "none is idle"). "未评分直接返回 PASS" negates the scoring, not the PASS."""
    window = re.split(r"[,;，；。!?！？]", clause[max(0, start - 16) : start])[-1].rstrip()
    chinese = bool(window) and "\u4e00" <= window[-1] <= "\u9fff"
    window = window[-4:] if chinese else " ".join(window.split()[-3:])
    return structure_vocabulary().negation.search(window) is not None


def _polarity_problem(claim: Reading, items: Sequence[_ItemReading]) -> StructureProblem | None:
    return (
        _state_problem(claim.text, items)
        or _denied_value(claim, items)
        or _denied_event(claim.text, items)
        or _asserted_denial(claim.text, items)
        or _comparison_problem(claim.text, items)
        or _zero_problem(claim.text, items)
        or _outcome_problem(claim.text, items)
    )


_NEGATED_VERB = re.compile(
    r"(?:没有|没|未曾|未|并未|从未|不再|不能|无法|不会|不)(?P<zh>[\u4e00-\u9fff]{2})"
    r"|(?:not|never|n't|no longer|rather than|instead of)\s+"
    r"(?:(?:be|being|been|is|are|was|were|yet|ever|get|got)\s+)*"
    r"(?P<en>[a-z]{4,})"
)
_NOT_EVENTS = frozenset(
    {
        "能在",
        "发现",
        "检索",
        "找到",
        "查到",
        "超过",
        "出现",
        "恢复",
        "返回",
        "确认",
        "证实",
        "确定",
        "confirmed",
        "proven",
        "verified",
        "known",
        "clear",
        "certain",
    }
)


def _asserted_denial(text: str, items: Sequence[_ItemReading]) -> StructureProblem | None:
    """ "也能确认内存泄漏" where the item says "不能确认": the claim states, without a
    negation, a word its item only ever denies."""
    for reading in items:
        for found in _NEGATED_VERB.finditer(reading.reading.text):
            word = found["zh"] or found["en"]
            if word in _SEARCH_WORDS or word in structure_vocabulary().common:
                continue
            edge = r"(?<![a-z])" if word.isascii() else ""
            said = [m.start() for m in re.finditer(edge + re.escape(word), text)]
            if said and not any(_negated(text, at) for at in said):
                return StructureProblem(
                    "claim.polarity_contradicts_item",
                    f"the claim states {word!r}; its item denies it",
                )
    return None


_SEARCH_WORDS = frozenset({"发现", "检索", "找到", "查到", "出现", "found", "seen"})


def _denied_event(text: str, items: Sequence[_ItemReading]) -> StructureProblem | None:
    """ "没有回退到本地配置" where the item says it fell back: the claim denies a word its
    item states (without a negation of its own)."""
    for found in _NEGATED_VERB.finditer(text):
        word = found["zh"] or found["en"]
        if word in _NOT_EVENTS or word in structure_vocabulary().common:
            continue
        for reading in items:
            said = reading.reading.text
            edge = r"(?<![a-z])" if word.isascii() else ""
            stated = [m.start() for m in re.finditer(edge + re.escape(word), said)]
            if stated and not any(_negated(said, at) or _failed(said, at) for at in stated):
                return StructureProblem(
                    "claim.polarity_contradicts_item",
                    f"the claim denies {word!r}; its item states it",
                )
    return None


_DENIED_REACH = re.compile(
    r"(?:未|没有|没|并未|尚未|not|never|did not|didn't|has not|hasn't)\s*"
    r"(?:达到|超过|超出|到达|突破|reach|reached|exceed|exceeded|hit|go above|gone above)\s*$"
)


def _denied_value(claim: Reading, items: Sequence[_ItemReading]) -> StructureProblem | None:
    """ "内存使用率未达到 91%" where the item's current value is 91% (or more)."""
    for quantity in claim.quantities:
        before = claim.text[max(0, quantity.start - 16) : quantity.start]
        if not _DENIED_REACH.search(before):
            continue
        reached = [
            q for r in items for q in r.quantities
            if q.dim == quantity.dim and q.label in ("current", None) and q.value >= quantity.value
        ]  # fmt: skip
        if reached:
            return StructureProblem(
                "claim.polarity_contradicts_item",
                f"the claim says {_written(claim, quantity)} was not reached; its item shows"
                f" {_written_item(reached[0])}",
            )
    return None


def _failed(text: str, at: int) -> bool:
    """The item reports the word's action as failed ("renewal failed", "续期失败", "failed to
    write")."""
    near = text[max(0, at - 12) : at + 48]
    return structure_vocabulary().outcomes["failure"].search(near) is not None


def _comparison_problem(text: str, items: Sequence[_ItemReading]) -> StructureProblem | None:
    """ "低于阈值" / "still within its threshold" where the alert's current value is above its
    threshold, or "above" where it is below."""
    actual = {
        _side(r)
        for r in items
        if r.item.fields.get("current") is not None and r.item.fields.get("threshold") is not None
    } - {None}
    words = structure_vocabulary()
    limit = words.labels_after["threshold"]
    if len(actual) != 1:
        return _stated_comparison(text, words, limit)
    side = actual.pop()
    for clause in _clauses(text):
        if limit.search(clause) is None:
            continue
        said = _sides_said(clause, words)
        if len(said) == 1 and side not in said:
            return StructureProblem(
                "claim.polarity_contradicts_item",
                f"the claim puts the value {said.pop()} its threshold; the item's current value"
                f" is {side} it",
            )
    return None


def _sides_said(text: str, words: StructureVocabulary) -> set[str]:
    """Which side of a threshold ``text`` puts a value on ("超过" above, "尚未超过" below)."""
    said = set()
    for name, pattern in words.comparisons.items():
        for found in pattern.finditer(text):
            flipped = _negated(text, found.start())
            said.add(name if not flipped else ("below" if name == "above" else "above"))
    return said


def _stated_comparison(
    text: str, words: StructureVocabulary, limit: re.Pattern[str]
) -> StructureProblem | None:
    """ "3600ms，没超阈值 3000ms": the claim's own value and threshold say the opposite of
    the comparison it states (its numbers are the items', checked apart)."""
    quantities = read(text).quantities
    limits = [q for q in quantities if q.label == "threshold"]
    values = [q for q in quantities if q.label != "threshold"]
    if len(limits) != 1 or not values or limit.search(text) is None:
        return None
    value = next((q for q in values if q.dim == limits[0].dim), None)
    if value is None or value.value == limits[0].value:
        return None
    side = "above" if value.value > limits[0].value else "below"
    said = _sides_said(text, words)
    if len(said) == 1 and side not in said:
        return StructureProblem(
            "claim.polarity_contradicts_item",
            f"the claim puts its value {said.pop()} the threshold its own numbers put it {side}",
        )
    return None


def _side(reading: _ItemReading) -> str | None:
    current = [q for q in reading.quantities if q.label == "current" and q.start < 0]
    limit = [q for q in reading.quantities if q.label == "threshold" and q.start < 0]
    if len(current) != 1 or len(limit) != 1 or current[0].dim != limit[0].dim:
        return None
    if current[0].value == limit[0].value:
        return None
    return "above" if current[0].value > limit[0].value else "below"


def _state_problem(text: str, items: Sequence[_ItemReading]) -> StructureProblem | None:
    states = {
        normalise(str(r.item.fields["state"]))
        for r in items
        if isinstance(r.item.fields.get("state"), str)
    }
    if not states or len(states) > 1:
        return None
    state = next(iter(states))
    flip = {"resolved": "firing", "firing": "resolved"}
    said = {
        flip[name] if _negated(clause, found.start()) else name  # 还没恢复 is still firing
        for name, pattern in structure_vocabulary().states.items()
        for clause in _clauses(text)
        for found in pattern.finditer(clause)
    }
    if len(said) != 1:
        return None
    claimed = next(iter(said))
    if claimed != state and state in ("firing", "resolved"):
        return StructureProblem(
            "claim.polarity_contradicts_item",
            f"the claim says the alert is {claimed}; the item's state is {state}",
        )
    return None


def _zero_problem(text: str, items: Sequence[_ItemReading]) -> StructureProblem | None:
    counts: dict[str, set[float]] = {}
    for reading in items:
        for quantity in reading.quantities:
            if quantity.label in ("idle", "waiting", "active") and quantity.dim == "plain":
                counts.setdefault(quantity.label, set()).add(quantity.raw)
    labels = structure_vocabulary().labels
    for clause in _clauses(text):
        if read(clause).quantities:
            continue
        for label, values in counts.items():
            for found in labels[label].finditer(clause):
                negated = _negated(clause, found.start())
                if values == {0.0} and not negated:
                    return StructureProblem(
                        "claim.polarity_contradicts_item",
                        f"the claim says there are {label} ones; the item counts {label}=0",
                    )
                if 0.0 not in values and negated:
                    return StructureProblem(
                        "claim.polarity_contradicts_item",
                        f"the claim says there are no {label} ones; the item counts"
                        f" {label}={min(values):g}",
                    )
    return None


def _outcome_problem(text: str, items: Sequence[_ItemReading]) -> StructureProblem | None:
    """Success where the items report only a failure, or the reverse; a negation turns one
    into the other on both sides ("没有超时，均获取成功" against "Connection is not
    available, request timed out"; "did not complete" is a failure)."""
    reported = {o for r in items for o, _ in _outcomes(r.reading.text)}
    if len(reported) != 1:
        return None
    only = next(iter(reported))
    for clause in _clauses(text):
        for said, word in _outcomes(clause):
            if said != only:
                return StructureProblem(
                    "claim.polarity_contradicts_item",
                    f"the claim reports {said} ({word!r}); its items report only {only}",
                )
    return None


def _outcomes(text: str) -> list[tuple[str, str]]:
    """Each outcome word of ``text`` as the outcome it states, its negation applied."""
    found = []
    flip = {"success": "failure", "failure": "success"}
    for kind, pattern in structure_vocabulary().outcomes.items():
        for match in pattern.finditer(text):
            said = flip[kind] if _negated(text, match.start()) else kind
            found.append((said, match.group()))
    return found


# ----------------------------------------------------------------- modality and causation


def _hedged(text: str) -> bool:
    return structure_vocabulary().hedges.search(text) is not None


def _modality_problem(
    claim: Reading, claim_type: str, items: Sequence[_ItemReading]
) -> StructureProblem | None:
    if claim_type in ("hypothesis", "risk") or _hedged(claim.text):
        return None
    runbooks = [r for r in items if r.item.tool in GUIDANCE_TOOLS]
    words = structure_vocabulary()
    only_guidance = len(runbooks) == len(items) or claim_type == "root_cause"
    # A runbook restated without a component of this incident (one the runbook itself does
    # not name), and without naming this incident's cause, is guidance.
    guidance = " ".join(r.reading.text for r in runbooks)
    about_incident = (
        any(c.group() not in guidance for c in _NAMED_COMPONENT.finditer(claim.text))
        or claim_type == "root_cause"
        or _ROOT_CAUSE.search(claim.text) is not None
    )
    if runbooks and only_guidance and about_incident and words.generic.search(claim.text) is None:
        return StructureProblem(
            "claim.runbook_as_fact",
            "the claim states a runbook's general guidance as a fact of this incident",
        )
    for reading in items:
        hedge = words.hedges.search(reading.reading.text)
        if hedge is not None and _shares(claim.text, reading.reading.text[hedge.start() :]):
            return StructureProblem(
                "claim.modality_hardened",
                f"its item only suspects it ({hedge.group()!r}); the claim states it as settled",
            )
    return None


_ROOT_CAUSE = re.compile(r"根因|根本原因|root cause|is behind|是因为|造成了|caused")
_NAMED_COMPONENT = re.compile(r"(?<![\w/.-])[a-z][a-z0-9]*(?:-[a-z0-9]+)+(?![\w/-])")


def _shares(claim: str, hedged: str) -> bool:
    """The claim repeats a content word of the item's hedged clause."""
    clause = re.split(r"[;；。!?！？\n]", hedged, maxsplit=1)[0]
    return bool(_keys(claim) & _keys(clause))


def _keys(text: str) -> set[str]:
    words = {
        w for w in re.findall(r"[a-z][a-z0-9_]{2,}", text) if w not in structure_vocabulary().common
    }
    han = re.findall(r"[\u4e00-\u9fff]+", text)
    pairs = {run[i : i + 2] for run in han for i in range(len(run) - 1)}
    return words | (pairs - _FUNCTION_PAIRS)


_FUNCTION_PAIRS = frozenset(
    {"可能", "疑似", "是否", "需要", "确认", "导致", "原因", "出现", "发生"}
)


# "创建失败: 获取数据库连接超时", "job failed: out of memory": a failure and, after the colon,
# its reason: the item states the link.
_FAILED_FOR = re.compile(
    r"(?:失败|回滚|中止|failed|failure|aborted|rolled back|error)\s*[:：]\s*\S"
)


def _states_link(claim: str, item: str) -> bool:
    """The item states a cause ("由于", "because", "创建失败: 获取连接超时") and names something
    of both sides of the claim's link (what comes before its connective and what after)."""
    words = structure_vocabulary()
    if words.causal.search(item) is None and _FAILED_FOR.search(item) is None:
        return False
    marker = words.causal.search(claim)
    if marker is None:  # a root_cause stated without a connective: the item's words decide
        return bool(_keys(claim) & _keys(item))
    said = _keys(item)
    return bool(_keys(claim[: marker.start()]) & said) and bool(_keys(claim[marker.end() :]) & said)


def _causal_problem(
    claim: Reading, claim_type: str, items: Sequence[_ItemReading]
) -> StructureProblem | None:
    words = structure_vocabulary()
    incident = [r for r in items if r.item.tool not in GUIDANCE_TOOLS]
    causal = words.causal.search(claim.text) is not None or claim_type == "root_cause"
    if not causal or len(incident) < 2:
        return None
    if any(_states_link(claim.text, r.reading.text) for r in incident):
        return None
    return StructureProblem(
        "claim.causal_across_items",
        "the claim links a cause and an effect read from different items; no item states the link",
    )


# ---------------------------------------------------------------------- negative claims


def negative_window_problem(
    claim_text: str, searches: Iterable[Mapping[str, Any]]
) -> StructureProblem | None:
    """A negative claim's stated window must lie inside the window each cited search asked
    for (``start_time`` / ``end_time`` arguments, zones converted)."""
    moments = read(claim_text).moments
    dates = [m for m in moments if m.hour is None and m.day is not None]
    if dates and len(dates) == len(moments):  # "on 2026-09-14": the whole day
        for arguments in searches:
            if _window_hours(arguments) is not None and (_window_hours(arguments) or 0) < 23:
                return StructureProblem(
                    "claim.negative_window",
                    "the claim speaks of a whole day; the search looked only from"
                    f" {_bound(arguments, 'start')} to {_bound(arguments, 'end')}",
                )
        return None
    claim = [
        _dated(m, dates[0] if len(dates) == 1 else None) for m in moments if m.hour is not None
    ]
    if not claim:
        return None
    for arguments in searches:
        starts = read(_bound(arguments, "start")).moments
        ends = read(_bound(arguments, "end")).moments
        if not starts or not ends:
            continue
        start, end = starts[0], ends[0]
        for moment in claim:
            if not _within(moment, start, end):
                return StructureProblem(
                    "claim.negative_window",
                    f"the claim speaks of {_clock(moment)}; the search looked only from"
                    f" {_clock(start)} to {_clock(end)}",
                )
    return None


def _bound(arguments: Mapping[str, Any], side: str) -> str:
    names = ("start_time", "start", "since") if side == "start" else ("end_time", "end", "until")
    return str(next((arguments[n] for n in names if arguments.get(n)), "?"))


def _window_hours(arguments: Mapping[str, Any]) -> float | None:
    """How long the search's window is, in hours (None without one)."""
    start = read(_bound(arguments, "start")).moments
    end = read(_bound(arguments, "end")).moments
    if not start or not end or start[0].hour is None or end[0].hour is None:
        return None
    first, last = start[0].shifted_to("utc") or start[0], end[0].shifted_to("utc") or end[0]
    days = ((last.day or 0) - (first.day or 0)) * 24
    return days + (_minutes(last) - _minutes(first)) / 60


def _dated(moment: Moment, date: Moment | None) -> Moment:
    """A time of day with the claim's one date ("10 月 17 日 UTC 18:30")."""
    if date is None or moment.day is not None:
        return moment
    return replace(moment, year=date.year, month=date.month, day=date.day)


def _within(moment: Moment, start: Moment, end: Moment) -> bool:
    """``moment`` lies in [start, end], read in the moment's zone (the window's own zone when
    the claim names none); by date too when both sides carry one."""
    zone = moment.zone or start.zone
    low, high = start, end
    if zone is not None and start.zone is not None and end.zone is not None:
        low, high = start.shifted_to(zone) or start, end.shifted_to(zone) or end
    if moment.day is not None and low.day is not None and high.day is not None:
        return _dated_key(low) <= _dated_key(moment, low) <= _dated_key(high)
    key = _minutes(moment)
    if _minutes(low) <= _minutes(high):
        return _minutes(low) <= key <= _minutes(high)
    return key >= _minutes(low) or key <= _minutes(high)


def _dated_key(moment: Moment, other: Moment | None = None) -> tuple[int, int, float]:
    month = moment.month or (other.month if other is not None else None) or 0
    return month, moment.day or 0, _minutes(moment)


def _minutes(moment: Moment) -> float:
    return (moment.hour or 0) * 60 + (moment.minute or 0) + (moment.second or 0) / 60


def _clock(moment: Moment) -> str:
    text = f"{moment.hour or 0:02d}:{moment.minute or 0:02d}"
    return text + (f" {moment.zone}" if moment.zone else "")
