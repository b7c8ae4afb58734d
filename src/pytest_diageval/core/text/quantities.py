"""Numbers with their units and labels, and times with their zones, read from a sentence.

A claim and the items it cites say the same number in many forms: 30000ms, 30 秒, 30s, 半分钟;
91%, 百分之九十一; 11:17, 11点17分; 03:13:47 UTC for 11:13:47+08:00. :func:`read` turns a text
into :class:`Quantity` values in one base unit per dimension (milliseconds, bytes, percent,
plain counts), each with the *label* the text gives it (current, threshold, active, waiting
...), and :class:`Moment` values with the zone the text names. The words come from
``structure_vocabulary.yaml``; the comparison lives in :mod:`core.judge.claim_structure`.

Reading order: normalise (NFKC, casefold), numerals written in words become digits (only when
a unit or counter follows, so 一致 stays a word), times and dates are read and blanked, ids
(HikariPool-1, p99, /api/v1/x, 10.0.0.1) are blanked, then numbers are read with their unit.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, timezone

from pytest_diageval.core.text.normalised import normalise
from pytest_diageval.core.text.vocabulary import bounded, vocabulary_table

__all__ = [
    "UNIT_FORMS",
    "Moment",
    "Quantity",
    "Reading",
    "StructureVocabulary",
    "read",
    "structure_vocabulary",
    "zone_offset",
]

VOCABULARY_FILE = "structure_vocabulary.yaml"

# unit surface form -> (canonical unit, dimension, factor to the dimension's base unit)
_UNITS: dict[str, tuple[str, str, float]] = {}
for _forms, _unit, _dim, _factor in (
    (("μs", "us", "微秒", "microseconds", "microsecond"), "us", "duration", 0.001),
    (("ms", "毫秒", "millisecond", "milliseconds", "msec"), "ms", "duration", 1.0),
    (("s", "sec", "secs", "second", "seconds", "秒", "秒钟"), "s", "duration", 1000.0),
    (("m", "min", "mins", "minute", "minutes", "分钟", "分鐘"), "min", "duration", 60000.0),
    (("h", "hr", "hrs", "hour", "hours", "小时", "个小时", "小時"), "h", "duration", 3600000.0),
    (("d", "day", "days", "天"), "d", "duration", 86400000.0),
    (("b", "byte", "bytes"), "b", "size", 1.0),
    (("kb", "kib", "ki"), "kb", "size", 1024.0),
    (("mb", "mib", "mi"), "mb", "size", 1024.0**2),
    (("gb", "gib", "gi", "g"), "gb", "size", 1024.0**3),
    (("tb", "tib", "ti"), "tb", "size", 1024.0**4),
    (("%", "percent", "per cent", "个百分点", "百分点", "percentage points", "points"), "%",
     "percent", 1.0),
    (("k", "thousand"), "k", "plain", 1000.0),
    (("million", "mn"), "million", "plain", 1000000.0),
    (("billion", "bn"), "billion", "plain", 1000000000.0),
    (("万",), "万", "plain", 10000.0),
    (("亿",), "亿", "plain", 100000000.0),
    (("次", "个", "条", "项", "台", "例", "笔", "次数", "times", "x", "倍", "pods", "pod",
      "threads", "thread", "connections", "connection", "requests", "errors", "instances",
      "replicas", "messages", "retries", "attempts", "个线程", "个连接", "个实例", "个请求"),
     "", "plain", 1.0),
):  # fmt: skip
    for _form in _forms:
        _UNITS[_form] = (_unit, _dim, _factor)

UNIT_FORMS = frozenset(_UNITS)
"""Every unit form a number may carry (ms, 秒, GiB ...): never an entity of its own."""
_UNIT_RE = "|".join(
    bounded(form, left=False) for form in sorted(_UNITS, key=lambda f: (-len(f), f))
)
_NUMBER_RE = re.compile(
    r"(?<![a-z0-9_.])(?P<num>\d{1,3}(?:,\d{3})+(?![\d])|\d+(?:\.\d+)?)"
    rf"(?:(?:\s?|-)(?P<unit>{_UNIT_RE}))?"
)
_ID_RES = (
    re.compile(r"[a-z][a-z0-9+.-]*://\S+"),
    re.compile(r"(?<![a-z0-9_./-])(?:/[a-z0-9_.{}-]+){2,}/?"),
    re.compile(r"(?<![a-z0-9_])[a-z_][a-z0-9_]*(?:[-.:/][a-z0-9_]+)*(?<=[a-z_0-9])"),
    re.compile(r"(?<![a-z0-9_.])v?\d+(?:\.\d+){2,}(?::\d+)?"),
    re.compile(r"(?<![a-z0-9_])http\s?\d{3}(?!\d)"),
)
_APPROX = ("约", "大约", "大概", "近", "接近", "≈", "~", "about", "around", "approximately",
           "roughly", "nearly", "almost", "approx", "左右", "上下")  # fmt: skip
_CLAUSE_STOP = re.compile(r"[,;，；。.!?！？:：\n]\s|[,;，；。！？\n]")


@dataclass(frozen=True)
class Quantity:
    """One number of a text: as written, in its dimension's base unit, and what it measures."""

    raw: float
    value: float
    dim: str  # duration (ms) | size (bytes) | percent | plain
    unit: str
    label: str | None
    start: int
    end: int
    approx: bool = False


@dataclass(frozen=True)
class Moment:
    """One time or date of a text; ``zone`` is the offset the text names ("utc", "+08:00")
    or carries (an ISO timestamp's own offset), None when it names none."""

    year: int | None
    month: int | None
    day: int | None
    hour: int | None
    minute: int | None
    second: int | None
    zone: str | None
    start: int
    end: int

    def shifted_to(self, zone: str) -> Moment | None:
        """The same instant in ``zone`` (None when this moment's own zone is unknown)."""
        if self.zone is None or self.hour is None:
            return None
        if self.zone == zone:
            return self
        base = datetime(
            self.year or 2000, self.month or 1, self.day or 1, self.hour, self.minute or 0,
            self.second or 0, tzinfo=_tz(self.zone),
        )  # fmt: skip
        moved = base.astimezone(_tz(zone))
        # A half-hour zone (+05:30) moves the minutes too; a time without minutes keeps none
        # unless the move gives it some.
        minute = moved.minute if self.minute is not None or moved.minute else None
        return Moment(
            self.year and moved.year, self.month and moved.month, self.day and moved.day,
            moved.hour, minute, self.second, zone, self.start, self.end,
        )  # fmt: skip

    def instant(self) -> datetime | None:
        """This moment as an aware datetime (a missing minute or second is 0); None unless
        its zone, date and hour are known."""
        if None in (self.zone, self.year, self.month, self.day, self.hour):
            return None
        return datetime(
            self.year or 0, self.month or 0, self.day or 0, self.hour or 0, self.minute or 0,
            self.second or 0, tzinfo=_tz(self.zone or "utc"),
        )  # fmt: skip


@dataclass(frozen=True)
class Reading:
    """What :func:`read` found in one text (``text`` is the normalised, numeral-free form)."""

    text: str
    quantities: tuple[Quantity, ...]
    moments: tuple[Moment, ...]


@dataclass(frozen=True)
class StructureVocabulary:
    """``structure_vocabulary.yaml``, compiled."""

    labels: Mapping[str, re.Pattern[str]]
    labels_after: Mapping[str, re.Pattern[str]]
    change_from: re.Pattern[str]
    change_to: re.Pattern[str]
    conflicts: tuple[frozenset[str], ...]
    hedges: re.Pattern[str]
    causal: re.Pattern[str]
    states: Mapping[str, re.Pattern[str]]
    zones: Mapping[str, re.Pattern[str]]
    outcomes: Mapping[str, re.Pattern[str]]
    negation: re.Pattern[str]
    terms: tuple[frozenset[str], ...]
    synonyms: tuple[frozenset[str], ...]
    generic: re.Pattern[str]
    comparisons: Mapping[str, re.Pattern[str]]
    levels: Mapping[str, re.Pattern[str]]
    any_level: re.Pattern[str]
    common: frozenset[str]
    diagnoses: frozenset[str]
    zh_digits: Mapping[str, int]
    zh_units: Mapping[str, int]
    en_numbers: Mapping[str, float]

    def conflicting(self, first: str | None, second: str | None) -> bool:
        """Two labels that exclude each other (a current value is not a threshold)."""
        if first is None or second is None or first == second:
            return False
        return any(first in group and second in group for group in self.conflicts)


def _any_of(forms: list[str]) -> re.Pattern[str]:
    ordered = sorted({normalise(str(f)) for f in forms}, key=lambda f: (-len(f), f))
    return re.compile("|".join(bounded(f) for f in ordered if f) or r"(?!)")


@functools.cache
def structure_vocabulary() -> StructureVocabulary:
    """The compiled vocabulary (read once per process)."""
    raw = vocabulary_table(VOCABULARY_FILE)
    words = raw["number_words"]
    return StructureVocabulary(
        labels={name: _any_of(forms) for name, forms in raw["labels"].items()},
        labels_after={name: _any_of(forms) for name, forms in raw["labels_after"].items()},
        change_from=_any_of(raw["change"]["from"]),
        change_to=_any_of(raw["change"]["to"]),
        conflicts=tuple(frozenset(group) for group in raw["conflicts"]),
        hedges=_any_of(raw["hedges"]),
        causal=_any_of(raw["causal"]),
        states={name: _any_of(forms) for name, forms in raw["states"].items()},
        zones={name: _any_of(forms) for name, forms in raw["zones"].items()},
        outcomes={name: _any_of(forms) for name, forms in raw["outcomes"].items()},
        negation=_any_of(raw["negation"]),
        terms=tuple(frozenset(normalise(str(t)) for t in group) for group in raw["terms"]),
        synonyms=tuple(frozenset(normalise(str(t)) for t in g) for g in raw["synonyms"]),
        generic=_any_of(raw["generic"]),
        comparisons={name: _any_of(forms) for name, forms in raw["comparisons"].items()},
        levels={name: _any_of(forms) for name, forms in raw["levels"].items()},
        any_level=_any_of(raw["any_level"]),
        common=frozenset(normalise(str(w)) for w in raw["common"]),
        diagnoses=frozenset(str(t) for t in raw["diagnoses"]),
        zh_digits=dict(words["zh_digits"]),
        zh_units=dict(words["zh_units"]),
        en_numbers={str(k): float(v) for k, v in words["en"].items()},
    )


# ------------------------------------------------------------------------------- numerals


def _zh_value(run: str, digits: Mapping[str, int], units: Mapping[str, int]) -> float | None:
    """百分之 aside, a Chinese numeral run as a number (十五 15, 三十二 32, 两百 200)."""
    total, section, number = 0, 0, 0
    for char in run:
        if char in digits:
            number = digits[char]
        elif char in units:
            unit = units[char]
            if unit >= 10000:
                section = (section + number) * unit
                total, section, number = total + section, 0, 0
            else:
                section += (number or 1) * unit
                number = 0
        else:
            return None
    return float(total + section + number)


_ZH_TIME_UNITS = frozenset({"毫秒", "秒钟", "秒", "分钟", "小时", "个小时", "天"})
_ZH_COUNTERS = (
    "毫秒|秒钟|秒|分钟|小时|个小时|天|次|个|条|项|台|例|笔|倍|万|亿|线程|连接|实例|请求|周|月|年|%"
)


def _numerals(text: str) -> str:
    """``text`` with numerals written in words as digits, where a unit or counter follows
    (十五次, 两秒, seven times, half an hour), after 百分之, or when the run holds 十/百/千."""
    words = structure_vocabulary()
    zh = "".join(words.zh_digits) + "".join(words.zh_units)

    def percent(found: re.Match[str]) -> str:
        value = _zh_value(found["run"], words.zh_digits, words.zh_units)
        return found.group() if value is None else f"{_digits(value)}%"

    text = re.sub(rf"百分之(?P<run>[{zh}]+)", percent, text)
    text = re.sub(
        r"(?<![\d.])(\d+(?:\.\d+)?)\s?万(?![\d])",
        lambda m: _digits(float(m.group(1)) * 10000),
        text,
    )

    def chinese(found: re.Match[str]) -> str:
        run = found["run"]
        counted = found["after"] is not None
        zero = set(run) <= {"零", "〇"}  # 空闲为零
        if (not counted and not zero and not any(u in run for u in "十百千")) or len(run) > 8:
            return found.group()
        timed = found["after"] in _ZH_TIME_UNITS
        if (run == "一" and not timed) or not any(c in words.zh_digits or c == "十" for c in run):
            return found.group()  # 一条 / 这一个 / 万 alone: not a count anyone checks
        value = _zh_value(run, words.zh_digits, words.zh_units)
        if value is None:
            return found.group()
        return f"{_digits(value)}{found['space'] or ''}{found['after'] or ''}"

    text = re.sub(
        rf"(?<![{zh}])(?P<run>[{zh}]+)(?!分点|分之|分比)(?P<space>\s?)(?P<after>{_ZH_COUNTERS})?",
        chinese,
        text,
    )
    text = _GO_DURATION_RE.sub(_go_duration, text)
    text = _english_numerals(text, words.en_numbers)
    text = _HOUR_AND_MINUTES_RE.sub(_hour_and_minutes, text)
    text = _COMPOUND_DURATION_RE.sub(_compound_duration, text)
    return _COUNTED_SUFFIX_RE.sub(_counted_suffix, text)


_GO_DURATION_RE = re.compile(
    r"(?<![\w.])(?=\d+[hm]\d)(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m(?!s))?(?:(?P<s>\d+(?:\.\d+)?)s)?(?![\w])"
)


_COMPOUND_DURATION_RE = re.compile(
    r"(?<![\d.点时:])(?P<m>\d+)\s?(?:minutes?|mins?|分钟)\s?(?:and\s)?(?P<s>\d+)\s?(?:seconds?|secs?|秒)"
)
# "18.4m rows", "3.1k events": a count with a metric suffix (not minutes).
_COUNTED_SUFFIX_RE = re.compile(
    r"(?<![\w.])(?P<n>\d+(?:\.\d+)?)(?P<x>[km])\s(?P<noun>rows|records|items|messages|events|"
    r"requests|entries|users|keys|documents|lines)"
)


_HOUR_AND_MINUTES_RE = re.compile(
    r"(?<![\w.])(?P<h>an|one|a|\d+)\s(?:hours?)\s(?:and\s)?(?P<m>\d+)\s(?:minutes?|mins?)"
)


def _hour_and_minutes(found: re.Match[str]) -> str:
    """ "an hour and ten minutes" (numerals already read) as minutes."""
    hours = 1 if found["h"] in ("an", "one", "a") else int(found["h"])
    return f"{hours * 60 + int(found['m'])} minutes"


def _compound_duration(found: re.Match[str]) -> str:
    """ "5 minutes 40 seconds" as seconds."""
    return f"{int(found['m']) * 60 + int(found['s'])} seconds"


def _counted_suffix(found: re.Match[str]) -> str:
    factor = 1000 if found["x"] == "k" else 1000000
    return f"{_digits(float(found['n']) * factor)} {found['noun']}"


def _go_duration(found: re.Match[str]) -> str:
    """ "5m0s" / "1h30m" (a Go duration) as seconds."""
    seconds = int(found["h"] or 0) * 3600 + int(found["m"] or 0) * 60 + float(found["s"] or 0)
    return f"{_digits(seconds)}s"


def _english_numerals(text: str, table: Mapping[str, float]) -> str:
    forms = sorted(table, key=lambda f: (-len(f), f))
    tens = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
    pattern = re.compile(
        rf"(?<![a-z0-9-])(?P<word>(?:{tens})[- ](?:one|two|three|four|five|six|seven|eight|nine)"
        rf"|{'|'.join(re.escape(f) for f in forms)})"
        r"(?P<tail>\s+(?:(?:more|consecutive|full|separate|distinct|different|failed|new|other)\s+)?"
        r"(?:ms|millisecond|second|minute|hour|day|time|percent|gc|pod|thread|connection|request"
        r"|error|instance|replica|retr|attempt|message|node|worker|alert|log|entr|line|event"
        r"|timeout|failure|restart|crash|job|consumer|partition|shard|host|server|call))"
    )

    def hundreds(found: re.Match[str]) -> str:
        spoken = found["n"].replace("-", " ")
        value = table.get(spoken)
        if value is None and " " in spoken:
            first, _, second = spoken.partition(" ")
            value = table.get(first, 0) + table.get(second, 0)
        factor = 100 if found["x"] == "hundred" else 1000
        return _digits((value or 0) * factor) if value else found.group()

    tens_ones = (
        rf"(?:(?:{tens})[- ](?:one|two|three|four|five|six|seven|eight|nine)|{'|'.join(forms)})"
    )
    text = re.sub(
        rf"(?<![a-z-])(?P<n>{tens_ones})\s(?P<x>hundred|thousand)(?![a-z])", hundreds, text
    )

    def word(found: re.Match[str]) -> str:
        spoken = found["word"].replace("-", " ")
        if spoken in table:
            value = table[spoken]
        else:
            first, second = spoken.split()
            value = table[first] + table[second]
        if spoken in ("twice", "once"):
            return f"{_digits(value)} times"
        return f"{_digits(value)}{found['tail']}"

    text = pattern.sub(word, re.sub(r"(?<![a-z])twice(?![a-z])", "2 times", text))
    return re.sub(r"(?<![a-z0-9])0\.5\s+hour", "30 minute", text)


def _digits(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


# --------------------------------------------------------------------------------- moments

_MONTHS = {
    name: number
    for number, names in enumerate(
        (("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"),
         ("may",), ("jun", "june"), ("jul", "july"), ("aug", "august"),
         ("sep", "sept", "september"), ("oct", "october"), ("nov", "november"),
         ("dec", "december")), start=1)
    for name in names
}  # fmt: skip
_MONTH_RE = "|".join(sorted(_MONTHS, key=lambda m: (-len(m), m)))
_MOMENT_RES = (
    re.compile(
        r"(?<!\d)(?P<y>\d{4})[-/](?P<mo>\d{1,2})[-/](?P<d>\d{1,2})"
        r"(?:[t ](?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2}))?(?:\.\d+)?"
        r"(?P<off>z|[+-]\d{2}:?\d{2})?)?(?!\d)"
    ),
    re.compile(
        r"(?:(?P<y>\d{4})\s?年\s?)?(?P<mo>\d{1,2})\s?月\s?(?P<d>\d{1,2})\s?[日号]"
        r"(?:\s?(?P<h>\d{1,2})[:点时](?P<mi>\d{1,2})(?:分)?(?::?(?P<s>\d{1,2})秒?)?)?"
    ),
    re.compile(
        rf"(?<![a-z])(?P<mon>{_MONTH_RE})\.?\s(?P<d>\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s(?P<y>\d{{4}}))?(?!\d)"
    ),
    re.compile(
        rf"(?<!\d)(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s(?P<mon>{_MONTH_RE})(?![a-z])"
        r"(?:,?\s(?P<y>\d{4})(?!\d))?"
    ),
    re.compile(
        r"(?<![\d.+])(?<!\d:)(?P<h>\d{1,2}):(?P<mi>\d{2})"
        r"(?::(?P<s>\d{2})(?:\.\d+)?(?P<off>z|[+-]\d{2}:\d{2})?)?(?!\d)(?!:\d)"
        r"(?:\s?(?P<ampm>am|pm))?"
    ),
    re.compile(
        r"(?<!\d)(?P<h>\d{1,2})\s?[点時时]\s?(?:(?P<mi>\d{1,2})\s?分\s?)?(?:(?P<s>\d{1,2})\s?秒)?"
    ),
    re.compile(
        r"(?<![\d.])(?:the\s)?(?P<d>\d{1,2})(?:st|nd|rd|th)(?![a-z])"
        r"|(?<![\d.])(?P<d2>\d{1,2})\s?[日号](?![志卡机位楼线房床桌门])"
    ),
)
_EVENING = ("下午", "晚上", "傍晚", "夜里")


def _moments(text: str) -> list[Moment]:
    found: list[Moment] = []
    taken: list[tuple[int, int]] = []
    for pattern in _MOMENT_RES:
        for match in pattern.finditer(text):
            span = match.span()
            if any(not (span[1] <= a or b <= span[0]) for a, b in taken):
                continue
            moment = _moment(match, text)
            if moment is not None:
                taken.append(span)
                found.append(moment)
    return _ranges(text, _on_dates(text, _zoned(text, sorted(found, key=lambda m: m.start))))


_ON_DATE_GAP = re.compile(r"\s*(?:utc|z)?\s*(?:on|,)?\s*(?:the\s)?")


def _on_dates(text: str, found: list[Moment]) -> list[Moment]:
    """A time followed by its date ("00:30 UTC on 1 December") is on that date."""
    for index in range(1, len(found)):
        first, second = found[index - 1], found[index]
        if first.hour is None or first.day is not None or second.hour is not None:
            continue
        if second.day is not None and _ON_DATE_GAP.fullmatch(text[first.end : second.start]):
            found[index - 1] = replace(first, year=second.year, month=second.month, day=second.day)
    return found


def _zoned(text: str, found: list[Moment]) -> list[Moment]:
    """Each time without an offset of its own takes the zone a word beside it names, read
    no further than the times before and after it."""
    for index, moment in enumerate(found):
        if moment.zone is not None:
            continue
        low = found[index - 1].end if index else 0
        high = found[index + 1].start if index + 1 < len(found) else len(text)
        zone = _named_zone(text, moment.start, moment.end, low, high) or _sentence_zone(
            text, moment.start
        )
        found[index] = replace(moment, zone=zone)
    return found


_RANGE_GAP = re.compile(
    r"\s*(?:-|–|—|~|至|到|and|to|until|till|凌晨|上午|下午|早上|晚上|中午|傍晚|夜里)?\s*"
)


def _ranges(text: str, found: list[Moment]) -> list[Moment]:
    """The second time of a range ("UTC 18:00–18:40", "10:30 至 11:00") in the first one's
    zone and on its date, when it names none of its own."""
    for index in range(1, len(found)):
        first, second = found[index - 1], found[index]
        if not _RANGE_GAP.fullmatch(text[first.end : second.start]):
            continue
        zone = second.zone or first.zone
        gap = text[first.end : second.start].strip()
        day_part = gap in ("凌晨", "上午", "下午", "早上", "晚上", "中午", "傍晚", "夜里")
        connected = bool(gap) and not day_part
        date_then_time = second.hour is not None and first.hour is None and not connected
        if second.day is None and (date_then_time or first.hour is not None):
            second = replace(second, year=first.year, month=first.month, day=first.day)
        found[index] = replace(second, zone=zone)
        if first.zone is None and first.hour is not None:  # "10:00 to 11:30 (UTC+8)"
            found[index - 1] = replace(first, zone=zone)
    return found


def _moment(match: re.Match[str], text: str) -> Moment | None:
    parts = match.groupdict()

    def number(name: str) -> int | None:
        value = parts.get(name)
        return int(value) if value else None

    month = _MONTHS[parts["mon"]] if parts.get("mon") else number("mo")
    if parts.get("d2"):
        parts["d"] = parts["d2"]
    hour, minute, second = number("h"), number("mi"), number("s")
    if hour is not None and (hour > 23 or (minute or 0) > 59 or (second or 0) > 60):
        return None
    if month is not None and not (1 <= month <= 12 and 1 <= (number("d") or 1) <= 31):
        return None
    before = text[max(0, match.start() - 4) : match.start()]
    if hour is not None and hour < 12 and (parts.get("ampm") == "pm" or any(
        word in before for word in _EVENING
    )):  # fmt: skip
        hour += 12
    offset = parts.get("off")
    zone = _offset_zone(offset) if offset else None
    return Moment(number("y"), month, number("d"), hour, minute, second, zone, *match.span())


def _offset_zone(offset: str) -> str:
    if offset == "z":
        return "utc"
    digits = offset.replace(":", "")
    zone = f"{digits[:3]}:{digits[3:5]}"
    return "utc" if zone in ("+00:00", "-00:00") else zone


_SENTENCE_ZONE = re.compile(r"(?:in|按|以)\s?(utc|beijing time|北京时间)|(utc|北京时间)\s?时间")


def _sentence_zone(text: str, start: int) -> str | None:
    """ "In UTC, … logged at 23:42:18": a zone said once for the sentence before its times."""
    sentence = re.split(r"[。.!?！？\n]\s", text[:start])[-1]
    found = _SENTENCE_ZONE.search(sentence)
    if found is None:
        return None
    return "utc" if "utc" in found.group() else "+08:00"


_RESTATED = re.compile(r"即|也就是|i\.e\.|which is|=")


def _named_zone(text: str, start: int, end: int, low: int, high: int) -> str | None:
    """The zone a word next to the time names: up to 12 characters before it, or 20 after,
    within [low, high) (not past the times beside it)."""
    zones = structure_vocabulary().zones
    before, after = text[max(0, low, start - 12) : start], text[end : min(high, end + 20)]
    restated = _RESTATED.search(after)  # "01:00（即北京时间 09:00）": the zone of what follows
    after = after[: restated.start()] if restated else after
    # (distance, side, -length, zone): nearest, then the word before, then the longest form
    best: tuple[int, int, int, str] | None = None
    for zone, pattern in zones.items():
        for found in pattern.finditer(before):
            key = (len(before) - found.end(), 0, -len(found.group()), zone)
            best = key if best is None or key < best else best
        for found in pattern.finditer(after):
            key = (found.start(), 1, -len(found.group()), zone)
            best = key if best is None or key < best else best
    return None if best is None else best[3]


def zone_offset(zone: str) -> timezone:
    """The fixed offset a moment's ``zone`` names (``"utc"``, ``"+05:30"``)."""
    return _tz(zone)


def _tz(zone: str) -> timezone:
    if zone == "utc":
        return UTC
    sign = -1 if zone.startswith("-") else 1
    hours, _, minutes = zone[1:].partition(":")
    return timezone(sign * timedelta(hours=int(hours), minutes=int(minutes or 0)))


# ------------------------------------------------------------------------------ quantities


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def _id_spans(text: str) -> Iterator[tuple[int, int]]:
    for pattern in _ID_RES:
        for found in pattern.finditer(text):
            token = found.group()
            if any(c.isdigit() for c in token) and any(c.isalpha() for c in token):
                if not _NUMBER_RE.fullmatch(token):
                    yield found.span()
            elif pattern is _ID_RES[1] or pattern is _ID_RES[3]:
                yield found.span()


_LIST_STOP = re.compile(r"\band\b|和|以及|、|里有")


def _label_before(text: str, start: int, floor: int = 0) -> tuple[int, str] | None:
    """The label nearest before a number: within 20 characters, its clause and its list item,
    never past the number before it."""
    window = text[max(0, floor, start - 20) : start]
    stops = [*_CLAUSE_STOP.finditer(window), *_LIST_STOP.finditer(window)]
    cut = max((m.end() for m in stops), default=0)
    window = window[cut:]
    best: tuple[int, str] | None = None
    for name, pattern in structure_vocabulary().labels.items():
        for found in pattern.finditer(window):
            distance = len(window) - found.end()
            if best is None or distance < best[0]:
                best = (distance, name)
    return best


_STATE_AFTER = frozenset({"active", "idle", "waiting"})
_OF_TOTAL = frozenset(
    {"/", "of", "of its", "of the", "out of", "out of a", "out of its", "out of the"}
)


def _label_after(text: str, end: int) -> tuple[int, str] | None:
    window = text[end : end + 10]
    stop = _CLAUSE_STOP.search(window)
    window = window[: stop.start()] if stop else window
    best: tuple[int, str] | None = None
    words = structure_vocabulary()
    after = {**{n: p for n, p in words.labels.items() if n in _STATE_AFTER}, **words.labels_after}
    for name, pattern in after.items():
        for found in pattern.finditer(window):
            gap = window[: found.start()]
            near = len(gap.strip(" 的of")) == 0
            close = near or (name in _STATE_AFTER and len(gap) <= 7)
            if close and (best is None or found.start() < best[0]):
                best = (found.start(), name)
    return best


_HTTP_CODES = frozenset({"400", "401", "403", "404", "409", "429", "500", "502", "503", "504"})
_UNIT_BEFORE = {
    **dict.fromkeys(("millis", "milliseconds", "msec", "ms", "毫秒"), "ms"),
    **dict.fromkeys(("seconds", "secs", "秒"), "s"),
}
_UNIT_BEFORE_RE = re.compile(
    rf"({'|'.join(sorted(_UNIT_BEFORE, key=len, reverse=True))})\W{{0,3}}$"
)


def _quantities(masked: str) -> list[Quantity]:
    found: list[Quantity] = []
    for match in _NUMBER_RE.finditer(masked):
        raw = float(match["num"].replace(",", ""))
        written = match["unit"] or ""
        if not written:  # "wait millis 5000": the unit named just before the number
            named = _UNIT_BEFORE_RE.search(masked[max(0, match.start() - 12) : match.start()])
            written = _UNIT_BEFORE[named.group(1)] if named else ""
        if written == "s" and match["num"] in _HTTP_CODES:
            glued = masked[match.start() : match.end()].endswith(match["num"] + "s")
            written = "" if glued else written  # "502s": HTTP status codes, not seconds
        unit, dim, factor = _UNITS.get(written, ("", "plain", 1.0))
        if unit in ("k", "万", "亿", "million", "billion"):
            raw, unit, factor = raw * factor, "", 1.0
        start, end = match.span()
        label = _label(masked, start, end, found)
        if dim == "duration" and label == "waiting":
            label = "timeout"  # "等待 30 秒": how long, not how many are waiting
        near = masked[max(0, start - 6) : start] + masked[end : end + 3]
        approx = any(word in near for word in _APPROX)
        found.append(Quantity(raw, raw * factor, dim, unit, label, start, end, approx))
    return _changes(masked, found)


def _changes(masked: str, found: list[Quantity]) -> list[Quantity]:
    """ "从 7.6G 降到 7.4G" / "from 7.6G to 7.4G" / "7.6G -> 7.4G": before and after."""
    words = structure_vocabulary()
    for index in range(len(found) - 1):
        first, second = found[index], found[index + 1]
        gap = masked[first.end : second.start].strip()
        if len(gap) > 6 or not words.change_to.fullmatch(gap.split()[-1] if gap else ""):
            continue
        opened = words.change_from.search(masked[max(0, first.start - 8) : first.start])
        if opened is None and gap not in ("→", "->", "=>"):
            continue
        found[index] = replace(first, label="before")
        found[index + 1] = replace(second, label="after")
    return found


def _label(masked: str, start: int, end: int, before: list[Quantity]) -> str | None:
    if before and masked[before[-1].end : start].strip() in _OF_TOTAL:
        return "total"
    floor = before[-1].end if before else 0
    ahead, behind = _label_before(masked, start, floor), _label_after(masked, end)
    if ahead is not None and behind is not None:
        return ahead[1] if ahead[0] <= behind[0] else behind[1]
    chosen = ahead or behind
    return None if chosen is None else chosen[1]


@functools.lru_cache(maxsize=4096)
def read(text: str) -> Reading:
    """The quantities and moments of ``text`` (see the module docstring for the order);
    cached, as every round reads the same items again."""
    words = _numerals(normalise(text))
    moments = _moments(words)
    masked = _blank(words, [(m.start, m.end) for m in moments])
    masked = _blank(masked, list(_id_spans(masked)))
    zones = structure_vocabulary().zones.values()
    masked = _blank(masked, [found.span() for zone in zones for found in zone.finditer(masked)])
    return Reading(words, tuple(_quantities(masked)), tuple(moments))
