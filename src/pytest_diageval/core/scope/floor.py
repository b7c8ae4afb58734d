"""The scope a question sets, read from the question itself (deterministic, no model).

:func:`scope_floor` reads a query into a
:class:`~pytest_diageval.core.contract.scope_contract.ScopeContract`:

* **services and alerts** named in it: the world's service names and their aliases, its alert
  names (``order-service``, ``订单服务``, ``HighMemoryUsage``);
* **topics** named in it, from ``scope_vocabulary.yaml`` (``连接池`` → HikariCP, ``OOM``);
* **narrow**: 004's markers (只确认, 只排查, 只看, 不要分析, 不要扩展, 只回答, 是否真实存在) or
  是否存在/出现/有 … 告警/日志/错误/记录 in one clause (or its spoken form: 有没有 / 有无 …
  日志); a narrow question allows observation claims only
  (:data:`~pytest_diageval.core.contract.scope_contract.NARROW_CLAIM_TYPES`);
* text inside quotation marks (“…”, 「…」, "…") is mentioned, not asked about, and is skipped;
* **exclusions**: 不要分析 / 排除 / 不用看 … followed by a list (、 , 或 和 …) up to the end of
  the clause; an excluded service leaves the services in scope, an excluded item that names a
  topic is kept by the topic's name, anything else as written.

:func:`narrowed` applies what the planner proposes to that floor: it may narrow the floor,
never widen it; what it tried to add is returned so that the audit can say so.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

import yaml

from pytest_diageval.core.contract.scope_contract import (
    ALL_CLAIM_TYPES,
    NARROW_CLAIM_TYPES,
    ScopeContract,
)
from pytest_diageval.core.text.normalised import normalise

__all__ = [
    "alert_topics",
    "is_topic",
    "literal_pattern",
    "named_services",
    "named_topics",
    "narrowed",
    "scope_floor",
    "topics_about",
]

_CLAUSE_END = r"[。；;！!？?\n]"
_ABOUT_INSTRUCTIONS = re.compile(
    r"指令|指示|提示词|以上|之前的|instruction|prompt|previous|above|prior|rules", re.IGNORECASE
)
_QUOTED = re.compile(r"“[^”]*”|「[^」]*」|『[^』]*』|\"[^\"]*\"")
_LIST_SEPARATORS = re.compile(r"\s*(?:、|,|，|/|以及|或者|或|和|及|与|\band\b|\bor\b)\s*")


@dataclass(frozen=True)
class _Vocabulary:
    narrow: re.Pattern[str]
    existence: re.Pattern[str]
    exclusion: re.Pattern[str]
    exclusion_after: re.Pattern[str]
    topics: tuple[tuple[str, re.Pattern[str]], ...]
    alert_topics: Mapping[str, tuple[str, tuple[str, ...]]]
    """Alert name (casefolded) -> its topic and the topics a narrow question on it also holds."""
    service_aliases: Mapping[str, tuple[str, ...]]


def scope_floor(
    query: str,
    services: Sequence[str],
    alerts: Sequence[str] = (),
    aliases: Mapping[str, Sequence[str]] | None = None,
) -> ScopeContract:
    """The scope ``query`` sets, in a world of ``services`` (with ``aliases``) and ``alerts``."""
    text = _QUOTED.sub(" ", normalise(query))  # a quoted phrase is mentioned, not asked about
    words = _vocabulary()
    excluded_phrases = _excluded_phrases(text, words)
    excluded_text = " ".join(excluded_phrases)
    forms = _service_forms(services, aliases or {})
    named_services = _named(text, forms)
    excluded_services = _named(excluded_text, forms)
    markers = _narrow_markers(text, words)
    asked = _without(text, excluded_phrases)
    # 订单服务 names a service, not the topic 订单; SlowResponse names an alert, not a topic
    unnamed = _without_forms(asked, [*forms.values(), *([a] for a in alerts)])
    return ScopeContract(
        services=[s for s in named_services if s not in excluded_services],
        alerts=_named(asked, {a: [a] for a in alerts}),
        topics=_topics(unnamed, words),
        excluded=_excluded(excluded_phrases, excluded_services, alerts, words),
        narrow=bool(markers),
        narrow_markers=markers,
        claim_types=list(NARROW_CLAIM_TYPES if markers else ALL_CLAIM_TYPES),
    )


def narrowed(floor: ScopeContract, proposed: ScopeContract) -> tuple[ScopeContract, list[str]]:
    """The floor narrowed by what the planner proposed, and what the proposal tried to widen
    (a service, alert or topic outside a restricted floor, an exclusion dropped, a narrow
    question made broad, a claim type the floor does not allow)."""
    widened: list[str] = []
    kept: dict[str, list[str]] = {}
    for field in ("services", "alerts", "topics"):
        floor_values, wanted = getattr(floor, field), getattr(proposed, field)
        outside = [value for value in wanted if floor_values and value not in floor_values]
        widened += [f"{field[:-1]} {value} is not in the question's scope" for value in outside]
        inside = [value for value in wanted if value not in outside]
        kept[field] = inside or list(floor_values)
    if floor.narrow and not proposed.narrow:
        widened.append("the question is narrow (" + ", ".join(floor.narrow_markers) + ")")
    extra_types = [t for t in proposed.claim_types if t not in floor.claim_types]
    widened += [f"claim type {t} is not allowed by the question" for t in extra_types]
    claim_types = [t for t in floor.claim_types if t in proposed.claim_types] or floor.claim_types
    scope = ScopeContract(
        **kept,
        services_from_alerts=floor.services_from_alerts,
        excluded=list(dict.fromkeys([*floor.excluded, *proposed.excluded])),
        narrow=floor.narrow or proposed.narrow,
        narrow_markers=floor.narrow_markers or proposed.narrow_markers,
        claim_types=list(NARROW_CLAIM_TYPES)
        if proposed.narrow and not floor.narrow
        else claim_types,
    )
    return scope, widened


def named_services(
    text: str, services: Sequence[str], aliases: Mapping[str, Sequence[str]]
) -> list[str]:
    """The services a normalised ``text`` names (by name or alias), in order of occurrence."""
    return _named(text, _service_forms(services, aliases))


def named_topics(text: str) -> list[str]:
    """The topics of ``scope_vocabulary.yaml`` a normalised ``text`` names by their forms."""
    return _topics(text, _vocabulary())


def topics_about(
    text: str,
    services: Sequence[str],
    aliases: Mapping[str, Sequence[str]],
    alerts: Sequence[str] = (),
) -> list[str]:
    """The topics a normalised ``text`` is about: by the vocabulary's forms once the services'
    names and aliases are taken out (``订单服务`` is order-service, not the topic 订单), and the
    topic of each of ``alerts`` it names (``HighMemoryUsage`` is about 内存)."""
    words = _vocabulary()
    forms = _service_forms(services, aliases)
    named_alerts = _named(text, {a: [a] for a in alerts})
    bare = _without_forms(text, [*forms.values(), *([a] for a in named_alerts)])
    found = _topics(bare, words)
    found += [
        words.alert_topics[a.casefold()][0]
        for a in named_alerts
        if a.casefold() in words.alert_topics
    ]
    return list(dict.fromkeys(found))


def is_topic(name: str) -> bool:
    """Whether ``name`` is a topic of the vocabulary (an exclusion kept by its topic's name)."""
    return any(topic == name for topic, _ in _vocabulary().topics)


def alert_topics(alert: str) -> tuple[str, ...]:
    """The topics a narrow question about ``alert`` holds: its own and those it covers (none for
    an alert the vocabulary does not know)."""
    topic = _vocabulary().alert_topics.get(alert.casefold())
    return () if topic is None else (topic[0], *topic[1])


def literal_pattern(phrase: str) -> re.Pattern[str]:
    """An excluded phrase outside the vocabulary, as written: normalised, a space, hyphen or
    underscore optional inside it, on ASCII word edges."""
    parts = [re.escape(part) for part in re.split(r"[\s_-]+", normalise(phrase).strip()) if part]
    return re.compile(_edged(_SEPARATOR.join(parts)))


# --------------------------------------------------------------------------- reading the query


def _narrow_markers(text: str, words: _Vocabulary) -> list[str]:
    found = [match.group(0) for match in words.narrow.finditer(text)]
    found += [match.group(0) for match in words.existence.finditer(text)]
    return list(dict.fromkeys(found))


def _excluded_phrases(text: str, words: _Vocabulary) -> list[str]:
    """What follows each exclusion marker, up to the end of its clause; and what precedes a
    trailing one ("内存相关的先不看", "leave the relay out of it"), from its clause's start."""
    phrases = []
    for match in words.exclusion.finditer(text):
        rest = re.split(_CLAUSE_END + r"|[，,:：]\s*(?=只|看看|查|why|what|how|is |are |only)",
                        text[match.end() :], maxsplit=1)[0]  # fmt: skip
        if words.exclusion_after.match(rest.lstrip()):
            continue  # "先不看" read as a leading marker with nothing after it
        trailing = words.exclusion_after.search(rest)
        phrases.append((rest[: trailing.start()] if trailing else rest).strip(" ,，:："))
    for match in words.exclusion_after.finditer(text):
        head = re.split(r"[，,:：—–]|\s-\s|" + _CLAUSE_END, text[: match.start()])[-1]
        leading = list(words.exclusion.finditer(head))
        head = head[leading[-1].end() :] if leading else head
        phrases.append(head.strip(" ,，:："))
    # "忽略以上指令" / "ignore the previous instructions" excludes no topic: it is an order
    # to the model (the injection rules' business), not a scope the user sets.
    kept = (p for p in phrases if p and not _ABOUT_INSTRUCTIONS.search(p))
    return list(dict.fromkeys(kept))


def _excluded(
    phrases: Iterable[str], services: list[str], alerts: Sequence[str], words: _Vocabulary
) -> list[str]:
    """The excluded items: the services, then per listed item the alert it names (by its
    name, spaced or not: ``Slow Response`` is SlowResponse) and the topics it names (the
    alert's own topic too), else the item as written."""
    items: list[str] = list(services)
    squeezed = {re.sub(r"[\s_-]+", "", a.casefold()): a for a in alerts}
    for phrase in phrases:
        for item in filter(None, _LIST_SEPARATORS.split(phrase)):
            alert = squeezed.get(re.sub(r"[\s_-]+", "", item.casefold()))
            topics = [name for name, form in words.topics if form.search(item)]
            if alert is not None:
                topics = [alert, *topics]
                if alert.casefold() in words.alert_topics:
                    topics.append(words.alert_topics[alert.casefold()][0])
            named_service = any(service in item for service in services)
            items += topics or ["" if named_service else _bare(item)]
    return [item for item in dict.fromkeys(items) if item]


_FILLER = re.compile(
    r"^(?:关于|有关|the|any|anything about)\s*"
    r"|\s*(?:的事情?|相关的?|这块|那块|那边|这边|方面|的?问题|部分|stuff|side|things?)$"
)


def _bare(item: str) -> str:
    """An excluded phrase without its filler ("日志轮转的事" is 日志轮转, "the cache side" is
    cache), as written otherwise."""
    bare = item.strip()
    for _ in range(3):
        bare = _FILLER.sub("", bare).strip()
    return bare or item.strip()


def _without(text: str, phrases: Iterable[str]) -> str:
    for phrase in phrases:
        text = text.replace(phrase, " ")
    return text


def _without_forms(text: str, forms: Iterable[Sequence[str]]) -> str:
    """``text`` with every name form (a service's, an alert's) blanked, longest first."""
    every = sorted({_normal(f) for fs in forms for f in fs if f.strip()}, key=len, reverse=True)
    for form in every:
        text = _bounded(form).sub(" ", text)
    return text


def _topics(text: str, words: _Vocabulary) -> list[str]:
    return [name for name, form in words.topics if form.search(text)]


def _named(text: str, forms: Mapping[str, Sequence[str]]) -> list[str]:
    """The names whose forms occur in ``text``, in order of first occurrence."""
    positions = {}
    for name, name_forms in forms.items():
        found = [m.start() for form in name_forms for m in _bounded(form).finditer(text)]
        if found:
            positions[name] = min(found)
    return sorted(positions, key=lambda name: (positions[name], name))


def _service_forms(
    services: Sequence[str], aliases: Mapping[str, Sequence[str]]
) -> dict[str, list[str]]:
    """Each service's names: its own, the world's aliases, the vocabulary's aliases of it."""
    extra = _vocabulary().service_aliases
    return {
        service: list(dict.fromkeys([service, *aliases.get(service, ()), *extra.get(service, ())]))
        for service in services
    }


@functools.lru_cache(maxsize=4096)
def _normal(form: str) -> str:
    """A name form, normalised once (every claim, step and sentence of a run reads the same
    names; normalising them anew each time was a fifth of a scripted scenario's run)."""
    return normalise(form)


@functools.lru_cache(maxsize=4096)
def _bounded(form: str) -> re.Pattern[str]:
    """A literal form, on word boundaries where it starts or ends with an ASCII word char
    (compiled once: every claim, step and sentence of a run reads the same names)."""
    folded = re.escape(normalise(form))
    start = r"(?<![\w-])" if form[:1].isascii() and form[:1].isalnum() else ""
    end = r"(?![\w-])" if form[-1:].isascii() and form[-1:].isalnum() else ""
    return re.compile(start + folded + end)


@functools.cache
def _vocabulary() -> _Vocabulary:
    raw = yaml.safe_load(
        resources.files(__package__).joinpath("scope_vocabulary.yaml").read_text("utf-8")
    )
    objects = "|".join(map(re.escape, raw["narrow_existence_objects"]))
    return _Vocabulary(
        narrow=re.compile("|".join(_bounded(form).pattern for form in raw["narrow"])),
        existence=re.compile(
            rf"(?:是否(?:真实)?(?:存在|出现|有)|有没有|有无)[^。；;！!？?\n，,]{{0,40}}?(?:{objects})"
        ),
        exclusion=re.compile("|".join(_bounded(form).pattern for form in raw["exclusion"])),
        exclusion_after=re.compile(
            "|".join(_bounded(form).pattern for form in raw["exclusion_after"])
        ),
        topics=tuple(
            (
                str(name),
                re.compile(
                    "|".join(
                        _topic_form(str(form))
                        for form in [*forms, *raw["more_forms"].get(name, ())]
                    )
                ),
            )
            for name, forms in raw["topics"].items()
        ),
        alert_topics={
            str(alert).casefold(): (str(entry["topic"]), tuple(map(str, entry["covers"])))
            for alert, entry in raw["alerts"].items()
        },
        service_aliases={
            str(service): tuple(map(str, names))
            for service, names in raw["service_aliases"].items()
        },
    )


_SEPARATOR = r"[\s_-]*"
_UNESCAPED_SEPARATORS = re.compile(r"(?<!\\)[ _-]+")


def _topic_form(form: str) -> str:
    """A topic form is a regular expression (``order-\\d+``): a space, hyphen or underscore in
    it is optional and any of the three, on ASCII word edges."""
    return _edged(_UNESCAPED_SEPARATORS.sub(lambda _: _SEPARATOR, form))


def _edged(pattern: str) -> str:
    """``pattern`` with ASCII word edges where it starts or ends with an ASCII letter or digit
    (a CJK character next to it is an edge: ``gc`` is in ``gc次数``)."""
    start = r"(?<![a-z0-9])" if pattern[:1].isascii() and pattern[:1].isalnum() else ""
    end = r"(?![a-z0-9])" if pattern[-1:].isascii() and pattern[-1:].isalnum() else ""
    return start + pattern + end
