"""The facts a claim's text asserts, so that "its cited items back this claim" compares facts.

Comparing words lets through a claim that permutes its items' numbers, swaps its subject,
drops its modal or adds a cause or a fix: every word is still there. (The verdict reads
claims with it; what the user reads is rendered from the evidence, never from a claim's
text.) :func:`extract` reads a sentence (deterministically, no model) into :class:`Facts`;
:func:`contained` names the first fact of a sentence that its backing lacks.

* **Text** (:func:`normalise`): NFKC, ASCII digits, no combining marks, no control or format
  characters, no markdown markup, casefolded. Markup is *stripped, not obeyed*: ``~~不~~`` and
  ``不\u0336`` keep their 不, so a negation cannot be hidden from the extractor.
* **Numbers**: a quantity with its unit is one fact (``91%``, ``15m``, ``3.8gb/4gb``), compared
  by value (``91.0%`` = ``91%``); counters drop (``15 次`` = ``15``); an ASCII ``label=`` binds
  (``active=50/50``). Timestamps, ids, names and paths are read first and masked.
* **Entities** (casefolded): ``*-service`` names (a pod name adds its service), hyphenated ids
  with a digit (order-123, HikariPool-1, ORA-01555), mixed-case names (HighMemoryUsage,
  HikariCP), identifiers with a digit or an underscore (p99, t_order), URLs and paths,
  ``http 503``, dotted numbers (versions, addresses), and ``known_entities`` aliases.
* **Timestamps**: ``YYYY-MM-DDTHH:MM[:SS]`` (zone and fraction dropped), dates, times of day.
* **Markers** come from ``fact_vocabulary.yaml`` (its header says what each section means).
  Polarity is negative when any negation marker is present: a sentence-level flag compared for
  equality, so reading 不可用 / 无法 as negations shows a flip to 可用. Modality is possible,
  else recommended, else observed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

from pytest_diageval.core.text.excerpt_tokens import number_key
from pytest_diageval.core.text.normalised import clean, fold_map, normalise, split_sentences
from pytest_diageval.core.text.vocabulary import (
    MARKER_SECTIONS,
    VOCABULARY_FILE,
    Vocabulary,
    bounded,
    vocabulary,
)

__all__ = [
    "MODALITY_STRENGTH",
    "SERVICE_RE",
    "VOCABULARY_FILE",
    "Facts",
    "Modality",
    "Polarity",
    "contained",
    "extract",
    "missing_fact",
    "normalise",
    "service_segments",
    "services",
    "split_sentences",
    "stronger",
]

Polarity = Literal["positive", "negative"]
Modality = Literal["observed", "possible", "recommended"]
MODALITY_STRENGTH: Final[Mapping[Modality, int]] = MappingProxyType(
    {"possible": 0, "recommended": 0, "observed": 1}
)
"""How strongly a sentence asserts: a weaker claim cannot back a stronger sentence."""

_HEDGED: tuple[Modality, ...] = ("possible", "recommended")  # in priority order
_CLAUSE_RE = re.compile(r"[，,；;、：:]+(?!\d)")

_TIMESTAMP_RES = (
    re.compile(
        r"(?<!\d)(?P<y>\d{4})[-/](?P<mo>\d{1,2})[-/](?P<d>\d{1,2})(?:(?:t|\s)(?P<h>\d{1,2}):"
        r"(?P<mi>\d{2})(?::(?P<s>\d{2})(?:\.\d+)?)?(?:z|[+-]\d{2}(?::?\d{2})?)?)?(?!\d)"
    ),
    re.compile(
        r"(?P<y>\d{4})年(?P<mo>\d{1,2})月(?P<d>\d{1,2})[日号]"
        r"(?:\s?(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2}))?)?"
    ),
    re.compile(r"(?<![\d:.])(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:\.\d+)?)?(?![\d:])"),
)
_TIMESTAMP_LIMITS = {"mo": (1, 12), "d": (1, 31), "h": (0, 23), "mi": (0, 59), "s": (0, 60)}
_PLACE_RE = re.compile(  # a URL, or a path of two segments or more
    r"[a-z][a-z0-9+.-]*://[^\s,;()<>\"'。、]+|(?<![a-z0-9_./:-])(?:/[a-z0-9_.{}-]+){2,}/?"
)
_HYPHEN_RE = re.compile(r"(?<![a-z0-9_-])[a-z][a-z0-9_]*(?:-[a-z0-9_]+)+(?![a-z0-9_])")
SERVICE_RE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*-service")
"""A service's name as the worlds write it (order-service), casefolded."""
_CAMEL_RE = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z][A-Za-z0-9]*(?![A-Za-z0-9_])")
_HTTP_RE = re.compile(r"(?<![a-z0-9_])http\s?\d{3}(?!\d)")
_ID_RE = re.compile(r"(?<![a-z0-9_.])[a-z0-9_]+(?:\.[a-z0-9_]+)*(?![a-z0-9_])")

_Found = tuple[int, int, tuple[str, ...]]  # a span of the folded text and the keys it gives


@dataclass(frozen=True)
class Facts:
    """What one sentence asserts (strings in :func:`normalise`'s form, timestamps in ISO)."""

    numbers: frozenset[str]
    entities: frozenset[str]
    timestamps: frozenset[str]
    polarity: Polarity
    modality: Modality
    causal: frozenset[str]
    actions: frozenset[str]
    confirms: bool


def extract(text: str, known_entities: Mapping[str, str] | None = None) -> Facts:
    """The facts ``text`` asserts; ``known_entities`` maps an alias to its canonical entity.

    Without aliases the result is cached (the last 512 texts): a claim's text and its cited
    items are read again by every rule and every published sentence; :class:`Facts` is
    frozen, so the shared result cannot change."""
    if not known_entities:
        return _extract_plain(text)
    return _extract(text, known_entities)


def services(facts: Facts) -> frozenset[str]:
    """The ``*-service`` entities among the facts."""
    return frozenset(e for e in facts.entities if e.endswith("-service"))


def service_segments(text: str) -> list[tuple[frozenset[str], str]]:
    """The text's clauses grouped under the services they speak of: a clause that names no
    service continues the previous one's (a Chinese topic carries over), one that names
    others starts a new group. A colon before a digit does not cut (11:17:00)."""
    groups: list[tuple[frozenset[str], str]] = []
    for clause in _CLAUSE_RE.split(text):
        named = services(extract(clause))
        if not groups or (named and named != groups[-1][0]):
            groups.append((named, clause))
        else:
            groups[-1] = (groups[-1][0], f"{groups[-1][1]}，{clause}")
    return groups


@functools.lru_cache(maxsize=512)
def _extract_plain(text: str) -> Facts:
    return _extract(text, {})


def _extract(text: str, known_entities: Mapping[str, str]) -> Facts:
    words = vocabulary()
    cleaned = clean(text)
    folded, starts = fold_map(cleaned)
    taken: list[tuple[int, int]] = []
    entities: set[str] = set()
    timestamps: set[str] = set()
    _take(_aliases(folded, known_entities), taken, entities)
    _take(_timestamps(folded), taken, timestamps)
    _take(_matches(_PLACE_RE, folded, lambda token: (token,)), taken, entities)
    _take(_matches(_HYPHEN_RE, folded, _hyphen_keys), taken, entities)
    _take(_camel_names(cleaned, starts), taken, entities)
    _take(_matches(_HTTP_RE, folded, lambda token: ("http " + token[-3:],)), taken, entities)
    id_keys = functools.partial(_id_keys, quantity=words.quantity)
    _take(_matches(_ID_RE, folded, id_keys), taken, entities)
    found = {section: _markers(words, section, folded) for section in MARKER_SECTIONS}
    return Facts(
        numbers=frozenset(_numbers(words, _mask(folded, taken))),
        entities=frozenset(entities),
        timestamps=frozenset(timestamps),
        polarity="negative" if found["negation"] else "positive",
        modality=next((m for m in _HEDGED if found[m]), "observed"),
        causal=frozenset(found["causal"]),
        actions=frozenset(name for name, pattern in words.actions if pattern.search(folded)),
        confirms=bool(found["confirmation"]),
    )


def stronger(first: Modality, second: Modality) -> bool:
    """``first`` asserts more strongly than ``second`` (observed over possible/recommended)."""
    return MODALITY_STRENGTH[first] > MODALITY_STRENGTH[second]


def missing_fact(sentence: Facts, backing: Facts) -> tuple[str, str] | None:
    """The first number, entity or timestamp of ``sentence`` that ``backing`` lacks, as
    ``(kind, fact)``; None when every one is there."""
    missing = (
        ("number", [n for n in sorted(sentence.numbers) if not _number_backed(n, backing)]),
        ("entity", sorted(sentence.entities - backing.entities)),
        ("timestamp", [t for t in sorted(sentence.timestamps) if not _time_backed(t, backing)]),
    )
    return next(((kind, facts[0]) for kind, facts in missing if facts), None)


def contained(sentence: Facts, backing: Facts) -> str | None:
    """None when ``backing`` asserts everything ``sentence`` does; else why not, naming the
    first fact missing (numbers, entities, timestamps, actions, causal connectives, then
    polarity, modality and confirmation)."""
    found = missing_fact(sentence, backing)
    if found is not None:
        return f"{found[0]} {found[1]} not in the claim"
    for kind, facts in (
        ("action", sorted(sentence.actions - backing.actions)),
        ("causal connective", sorted(sentence.causal - backing.causal)),
    ):
        if facts:
            return f"{kind} {facts[0]} not in the claim"
    if sentence.polarity != backing.polarity:
        return f"polarity {sentence.polarity} differs from the claim's {backing.polarity}"
    if stronger(sentence.modality, backing.modality):
        return f"modality {sentence.modality} is stronger than the claim's {backing.modality}"
    if sentence.confirms and not backing.confirms and backing.modality != "observed":
        return "confirmation not in the claim"
    return None


def _take(found: Iterable[_Found], taken: list[tuple[int, int]], into: set[str]) -> None:
    """Keep each span with keys that overlaps no span taken before (earlier readers win)."""
    for start, end, keys in found:
        if keys and all(end <= first or last <= start for first, last in taken):
            taken.append((start, end))
            into.update(keys)


def _matches(
    pattern: re.Pattern[str], text: str, keys: Callable[[str], tuple[str, ...]]
) -> Iterator[_Found]:
    for found in pattern.finditer(text):
        yield found.start(), found.end(), keys(found.group())


def _aliases(folded: str, known: Mapping[str, str]) -> Iterator[_Found]:
    table = {normalise(alias): normalise(name) for alias, name in known.items()}
    for alias in sorted((a for a in table if a.strip()), key=lambda a: (-len(a), a)):
        name = table[alias]
        pattern = re.compile(bounded(alias).replace("\\ ", " ").replace(" ", r"\s+"))
        for found in pattern.finditer(folded):
            yield found.start(), found.end(), (name,)


def _timestamps(folded: str) -> Iterator[_Found]:
    for pattern in _TIMESTAMP_RES:
        for found in pattern.finditer(folded):
            parts = {name: value for name, value in found.groupdict().items() if value}
            limits = _TIMESTAMP_LIMITS.items()
            valid = all(low <= int(parts[k]) <= high for k, (low, high) in limits if k in parts)
            yield found.start(), found.end(), (_timestamp_key(parts),) if valid else ()


def _timestamp_key(parts: Mapping[str, str]) -> str:
    date = f"{parts['y']}-{int(parts['mo']):02d}-{int(parts['d']):02d}" if "y" in parts else ""
    time = f"{int(parts['h']):02d}:{parts['mi']}" if "h" in parts else ""
    time += f":{parts['s']}" if time and "s" in parts else ""
    return f"{date}T{time}" if date and time else date or time


def _hyphen_keys(token: str) -> tuple[str, ...]:
    if SERVICE_RE.fullmatch(token):
        return (token,)
    cut = token.find("-service-") + len("-service")
    if cut > len("-service") and SERVICE_RE.fullmatch(token[:cut]):
        return token, token[:cut]  # a pod name: the pod and its service
    return (token,) if any(char.isdigit() for char in token) else ()


def _camel_names(clean: str, starts: list[int]) -> Iterator[_Found]:
    for found in _CAMEL_RE.finditer(clean):
        token = found.group()
        mixed = any(c.isupper() for c in token[1:]) and any(c.islower() for c in token)
        yield starts[found.start()], starts[found.end()], (token.casefold(),) if mixed else ()


def _id_keys(token: str, quantity: re.Pattern[str]) -> tuple[str, ...]:
    if any(char.isalpha() for char in token):
        named = "_" in token or any(char.isdigit() for char in token)
        return (token,) if named and not quantity.fullmatch(token) else ()
    return (token,) if token.count(".") >= 2 else ()  # a version or an address


def _time_backed(wanted: str, backing: Facts) -> bool:
    """A time is backed by itself or a finer one (11:17 by 11:17:00, a date by its times)."""
    for stamp in backing.timestamps:
        date, _, time = stamp.rpartition("T")
        if wanted == date or any(
            whole == wanted or whole.startswith(f"{wanted}:") for whole in (stamp, time)
        ):
            return True
    return False


def _mask(text: str, spans: Iterable[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def _numbers(vocabulary: Vocabulary, masked: str) -> Iterator[str]:
    units = vocabulary.units
    for found in vocabulary.quantity.finditer(masked):
        first, second = units.get(found["ua"] or "", ""), units.get(found["ub"] or "", "")
        key = number_key(found["a"].replace(",", "")) + (first or second)
        if found["b"]:
            key += "/" + number_key(found["b"].replace(",", "")) + second
        yield f"{found['label']}={key}" if found["label"] else key


def _number_backed(number: str, backing: Facts) -> bool:
    """Backed by the same quantity, or (unlabelled) by one with a ``label=``."""
    numbers = backing.numbers
    return number in numbers or any(n.partition("=")[2] == number for n in numbers)


def _markers(vocabulary: Vocabulary, section: str, folded: str) -> list[str]:
    text = vocabulary.blanks[section].sub(lambda found: " " * len(found.group()), folded)
    return [found.group() for found in vocabulary.markers[section].finditer(text)]
