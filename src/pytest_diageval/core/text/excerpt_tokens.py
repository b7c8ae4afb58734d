"""Tokens of an excerpt or an evidence ref text, as ``core.judge.excerpt_match`` compares them.

Normalisation: NFC, then per character NFKC (full-width ``ＪＶＭ：９１％`` is ``JVM:91%``) and
casefold; camelCase is split (``HighMemoryUsage`` = ``high memory usage``); apostrophes are
dropped (``isn't`` = ``isnt``); all other punctuation, symbols and whitespace separate tokens.
A token is a run of Latin letters, a number (``3.8`` keeps its point) or one CJK character. A
trailing ``...``/``…`` (or a leading one) marks truncation: the marker goes, and a token glued
to it may be cut (``thres...`` starts ``threshold``). Numbers compare by value: ``91`` =
``91.0`` (the alert prints ``current=91%``, the log ``91.0%``), ``3.8`` = ``3.80``.

Length: a Latin word or a number is 1 unit, a CJK character 0.5 (两个汉字 ≈ one English
word), a :data:`FILLER_WORDS` token 0.

Metadata (:func:`metadata_positions`): the tokens of a ref text that say *which* item it is,
not *what* it says: the leading ``[timestamp][LEVEL][service]`` tags of a log line, a
``service=…`` field, a timestamp anywhere, and alert states (:data:`STATE_WORDS`). A quote
made of these alone is generic: it would match any log of that service at that level.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "FILLER_WORDS",
    "NEGATION_WORDS",
    "STATE_WORDS",
    "TOKENISED_CACHE_SIZE",
    "Token",
    "Tokenised",
    "excerpt_units",
    "metadata_positions",
    "normalise",
    "number_key",
    "tokenise",
    "units",
    "word_keys",
]

FILLER_WORDS = frozenset(
    {"a", "an", "the", "is", "are", "was", "were", "be", "been", "of", "in", "on", "at", "to"}
    | {"for", "by", "with", "as", "and", "的", "了", "是", "在", "着"}
)
"""Words that carry no evidence: ignored when matching and when measuring length."""

_CONTRACTIONS = {"isnt", "arent", "wasnt", "werent", "dont", "doesnt", "didnt", "cant", "wont"}
_CONTRACTIONS |= {"hasnt", "havent", "hadnt", "couldnt", "shouldnt", "wouldnt", "aint"}
NEGATION_WORDS = frozenset(
    {"not", "no", "never", "none", "nothing", "nobody", "neither", "nor", "without", "cannot"}
    | _CONTRACTIONS
    | {"不", "未", "没", "无"}  # 没有 is 没 + 有: one negation
)
"""Tokens whose count must agree between the excerpt and the matched source span."""

STATE_WORDS = frozenset({"firing", "resolved", "pending", "inactive"})
"""Alert states: every alert of a world has one, so quoting it says nothing about this one."""

TOKENISED_CACHE_SIZE = 128
"""Texts whose tokens :func:`tokenise` keeps: a scenario's claims, excerpts and cited rows fit
(about 10 KB per evidence-row-sized text, so about a megabyte when full)."""

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN_RE = re.compile(
    rf"(?P<num>[0-9]+(?:\.[0-9]+)?)|(?P<cjk>[{_CJK}])|(?P<word>(?:(?![{_CJK}])[^\W\d_])+)"
)
_KINDS: dict[str, Literal["num", "cjk", "word"]] = {"num": "num", "cjk": "cjk", "word": "word"}
_APOSTROPHES = frozenset("'‘’`")
_ELLIPSES = ("...", "⋯")
_ELLIPSIS_CHARS = ".⋯"

# Spans of metadata in a ref text (see the module docstring); matched on the NFC text.
_METADATA_RES = (
    re.compile(r"\A\s*(?:\[[^\[\]\n]*\]\s*)+"),  # [2026-07-08T11:17:00+08:00][WARN][svc]
    re.compile(r"\bservice\s*=\s*[^\s,;]+", re.IGNORECASE),
    re.compile(
        r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
        r"|\b\d{2}:\d{2}:\d{2}\b"
    ),
)


@dataclass(frozen=True)
class Token:
    key: str  # what is compared: the surface, or a number's canonical value
    surface: str  # normalised text of the token
    kind: Literal["num", "cjk", "word"]
    position: int  # index in the full token list
    start: int  # offsets in the NFC text, for matched_text
    end: int

    @property
    def is_filler(self) -> bool:
        return self.key in FILLER_WORDS

    @property
    def is_negation(self) -> bool:
        return self.key in NEGATION_WORDS


@dataclass(frozen=True)
class Tokenised:
    text: str  # the NFC text the offsets refer to
    tokens: tuple[Token, ...]  # a tuple: one result is shared by every caller (see tokenise)
    cut_first: bool  # the first token touches a leading truncation marker
    cut_last: bool  # the last token touches a trailing truncation marker

    def whole_tokens(self) -> tuple[Token, ...]:
        """Tokens that are certainly complete (a token glued to ``...`` may be cut)."""
        low = 1 if self.cut_first else 0
        high = len(self.tokens) - (1 if self.cut_last else 0)
        return self.tokens[low:high]


def _fold(text: str) -> tuple[str, str, list[int]]:
    """NFC text, its folded form, and for each folded character its NFC offset."""
    source = unicodedata.normalize("NFC", text)
    chars: list[str] = []
    offsets: list[int] = []
    previous = ""
    for offset, char in enumerate(source):
        if char.isupper() and previous.islower():  # camelCase boundary
            chars.append(" ")
            offsets.append(offset)
        for folded in unicodedata.normalize("NFKC", char).casefold():
            if folded not in _APOSTROPHES:
                chars.append(folded)
                offsets.append(offset)
        previous = char
    return source, "".join(chars), offsets


def _content_bounds(folded: str) -> tuple[int, int, bool, bool]:
    """Bounds of the text between truncation markers, and which ends were truncated."""
    body = folded.rstrip()
    cut_end = body.endswith(_ELLIPSES)
    end = len(body.rstrip(_ELLIPSIS_CHARS)) if cut_end else len(body)
    head = folded[:end].lstrip()
    begin = end - len(head)
    cut_start = head.startswith(_ELLIPSES)
    if cut_start:
        begin += len(head) - len(head.lstrip(_ELLIPSIS_CHARS))
    return begin, end, cut_start, cut_end


def number_key(digits: str) -> str:
    """``091.50`` -> ``91.5``: the value, so 91 and 91.0 compare equal."""
    whole, _, fraction = digits.partition(".")
    whole = whole.lstrip("0") or "0"
    fraction = fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


@functools.lru_cache(maxsize=TOKENISED_CACHE_SIZE)
def tokenise(text: str) -> Tokenised:
    """The tokens of ``text``, remembered for the last :data:`TOKENISED_CACHE_SIZE` texts.

    A run tokenises the same few texts again and again: each claim's statement and excerpt
    (gatekeeper, verdict, composer) and the world's evidence rows, which every scenario of
    the world cites. Folding is a loop over characters, the gatekeeper's largest cost; the
    result is immutable, so sharing it is safe.
    """
    source, folded, offsets = _fold(text)
    begin, end, cut_start, cut_end = _content_bounds(folded)
    tokens: list[Token] = []
    for found in _TOKEN_RE.finditer(folded, begin, end):
        kind = _KINDS[found.lastgroup or ""]
        surface = found.group()
        key = number_key(surface) if kind == "num" else surface
        first, last = offsets[found.start()], offsets[found.end() - 1] + 1
        tokens.append(Token(key, surface, kind, len(tokens), first, last))
    cut_first = bool(tokens) and cut_start and _starts_at(folded, offsets, tokens[0], begin)
    cut_last = bool(tokens) and cut_end and offsets[end - 1] + 1 == tokens[-1].end
    return Tokenised(source, tuple(tokens), cut_first, cut_last)


def _starts_at(folded: str, offsets: list[int], token: Token, begin: int) -> bool:
    return begin < len(folded) and offsets[begin] == token.start


def normalise(text: str) -> str:
    """The canonical text form: folded tokens, spaces only between non-CJK tokens.

    ``normalise("ＨｉｇｈＭｅｍｏｒｙＵｓａｇｅ：９１％…")`` == ``"high memory usage 91"``.
    """
    parts: list[str] = []
    previous: Token | None = None
    for token in tokenise(text).tokens:
        if previous is not None and "cjk" not in (previous.kind, token.kind):
            parts.append(" ")
        parts.append(token.surface)
        previous = token
    return "".join(parts)


def excerpt_units(excerpt: str) -> float:
    """Comparable length of an excerpt, metadata included (see the module docstring)."""
    return units(tokenise(excerpt).tokens)


def units(tokens: Sequence[Token]) -> float:
    return sum(0.5 if t.kind == "cjk" else 1.0 for t in tokens if not t.is_filler)


def metadata_positions(text: Tokenised) -> frozenset[int]:
    """Positions of the tokens of a ref text that are metadata (see the module docstring)."""
    spans = [m.span() for pattern in _METADATA_RES for m in pattern.finditer(text.text)]
    return frozenset(
        token.position
        for token in text.tokens
        if token.key in STATE_WORDS or any(a <= token.start < b for a, b in spans)
    )


def word_keys(text: str, skip: frozenset[str] = frozenset()) -> list[str]:
    """What a text says, for a containment check: Latin words and numbers by key (fillers
    dropped), CJK runs as overlapping character bigrams (the character of a one-character
    run), so a statement cannot be stitched together from common single characters. CJK
    characters in ``skip`` are dropped before the bigrams form (the run goes on across them)."""
    keys: list[str] = []
    run: list[str] = []
    end = -1
    for token in tokenise(text).tokens:
        if token.kind == "cjk" and token.key in skip:
            pass  # dropped: the run goes on across it
        elif token.kind == "cjk" and token.start == end:
            run.append(token.key)
        else:
            keys.extend(_bigrams(run))
            run = [token.key] if token.kind == "cjk" else []
            if token.kind != "cjk" and not token.is_filler:
                keys.append(token.key)
        end = token.end
    return keys + _bigrams(run)


def _bigrams(run: list[str]) -> list[str]:
    return run if len(run) == 1 else [a + b for a, b in itertools.pairwise(run)]
