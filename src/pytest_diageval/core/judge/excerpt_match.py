"""Is a cited ``evidence_excerpt`` supported by the system-side text of its evidence ref?

An excerpt must be a *quote* of the ref text: formatting may differ and parts may be left
out, but nothing may be invented or changed. Both texts are tokenised by
``core.text.excerpt_tokens`` (NFKC, casefold, camelCase split, numbers by value, ``...`` as
truncation; length units; which ref tokens are metadata).

Scorer: in-order token coverage in a bounded window. ``score`` = 100 x (excerpt tokens found
in order in the best source window) / (excerpt tokens), computed with
``rapidfuzz.distance.LCSseq`` on token lists. The window is ``m + max(2, m // 2)`` tokens for
an ``m``-token excerpt, so a quote may skip a field but cannot be stitched from words spread
over a long text. :data:`FILLER_WORDS` are ignored on both sides.

Threshold: :data:`MATCH_THRESHOLD` = 100, every non-filler token must be found: normalisation,
gaps and truncation absorb formatting, so a missing token is content the source does not hold
(the 91.7 and 93.8 rows below are single changed facts that 90 or 95 would pass).

The checks, in this order (the first that fails decides):

1. Contradiction, whatever the length (``mismatch``); own checks, because a score barely
   moves when one digit or one ``not`` changes:

   * numbers: each must occur in the source right after the token that precedes it in the
     excerpt (fillers aside; :data:`NEIGHBOUR_REACH`), or for a leading number right before
     the token that follows it. ``current=85%`` fails against ``current=91%, threshold=85%``,
     and so does a bare ``99%``.
   * negation: the excerpt and the matched source span (plus the token just before the span)
     hold as many :data:`NEGATION_WORDS` (``not no never without isnt …``; 不 未 没(有) 无).
     ``pool is exhausted`` fails against ``pool is not exhausted``.

2. Length below :data:`MIN_EXCERPT_UNITS` = 3 (``too_short``: too little to tell a quote from
   a coincidence). ``order-service``, ``内存过高`` (2) and any single character are too short;
   ``内存使用率过高`` (3.5) is not.
3. Coverage below the threshold, or a ``...`` token that does not fit (``mismatch``).
4. Generic (``too_short``): fewer than 3 units remain once the tokens matched to ref metadata
   (``[timestamp][LEVEL][service]``, ``service=…``, alert state) are left out.
   ``[WARN][order-service]`` or ``firing, service=order-service`` matches every such item.

Cases on the recorder's alert and log ref texts (the full table with both texts is in
``tests/core/judge/test_excerpt_match.py``):

==========================================================  =====  =======================
excerpt                                                      score  outcome
==========================================================  =====  =======================
alert ``JVM heap usage 3.8GB/4GB``                           100    matched (substring)
alert ``HighMemoryUsage firing, service=order-service,        100    matched (skips a field)
current=91%, duration=15m``
alert ``ＪＶＭ ｈｅａｐ ｕｓａｇｅ ３.８ＧＢ／４ＧＢ``                    100    matched (width)
alert ``service=order-service, current=91%, thres...``       100    matched (truncated)
alert ``HikariCP active=50/50``                              0      mismatch (invented)
alert ``…, current=99%``                                     88.9   mismatch (number)
alert ``99%``                                                0      mismatch (number)
alert ``current=85%, duration=15m; JVM heap usage``          100    mismatch (number label)
alert ``内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB``            37.5   mismatch (other ref)
alert ``…, service=payment-service, current=91%, …``         91.7   mismatch (< 100)
log ``内存使用率过低: 91.0%, JVM堆内存: 3.8GB/4GB``              93.8   mismatch (< 100)
``Connection is available`` vs ``… is not available``         100    mismatch (negation)
``pool is exhausted`` vs ``pool is not exhausted``            100    mismatch (negation)
alert ``order-service``                                      100    too_short (2 units)
log ``[WARN][order-service]``                                100    too_short (generic)
==========================================================  =====  =======================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rapidfuzz.distance import LCSseq

from pytest_diageval.core.text.excerpt_tokens import (
    FILLER_WORDS,
    NEGATION_WORDS,
    Token,
    Tokenised,
    excerpt_units,
    metadata_positions,
    normalise,
    tokenise,
    units,
)

__all__ = [
    "FILLER_WORDS",
    "MATCH_THRESHOLD",
    "MIN_EXCERPT_UNITS",
    "NEGATION_WORDS",
    "NEIGHBOUR_REACH",
    "ExcerptMatch",
    "ExcerptOutcome",
    "excerpt_units",
    "informative_units",
    "match_excerpt",
    "normalise",
]

MATCH_THRESHOLD = 100.0
"""Minimum score (percent of non-filler excerpt tokens found in order) for a match."""
MIN_EXCERPT_UNITS = 3.0
"""Minimum comparable length: Latin word or number = 1 unit, CJK character = 0.5."""
NEIGHBOUR_REACH = 1
"""A number's label must be within this many source tokens of it (fillers skipped). 1, i.e.
adjacent: with 2, ``active=50/00`` passed against ``active=50/50, idle=0`` (found by the
hypothesis property in the tests)."""

ExcerptOutcome = Literal["matched", "mismatch", "too_short"]

_SHOWN_TOKENS = 5
_CUT_REACH = 3  # a cut token may follow its predecessor after a skipped field (key + value)
_UNITS_RULE = "Latin word or number = 1, CJK character = 0.5"


@dataclass(frozen=True)
class ExcerptMatch:
    """The verdict on one excerpt: ``matched_text`` is the source span it was found in."""

    outcome: ExcerptOutcome
    score: float
    reason: str
    matched_text: str | None = None

    @property
    def matched(self) -> bool:
        return self.outcome == "matched"


# --------------------------------------------------------------------------- alignment
@dataclass(frozen=True)
class _Alignment:
    found: int  # excerpt tokens found in order
    excerpt_hits: list[int]  # indices into the excerpt content tokens
    source_hits: list[int]  # indices into the source content tokens


def _align(excerpt: list[Token], source: list[Token]) -> _Alignment:
    """The bounded source window holding most excerpt tokens in order (shortest span wins)."""
    wanted = [t.key for t in excerpt]
    keys = [t.key for t in source]
    width = len(wanted) + max(2, len(wanted) // 2)
    best = _Alignment(0, [], [])
    for start in range(max(1, len(keys) - width + 1)):
        window = keys[start : start + width]
        found = int(LCSseq.similarity(wanted, window))
        if found == 0 or found < best.found:
            continue
        candidate = _hits(wanted, window, start, found)
        if found > best.found or _span(candidate) < _span(best):
            best = candidate
    return best


def _hits(wanted: list[str], window: list[str], start: int, found: int) -> _Alignment:
    excerpt_hits: list[int] = []
    source_hits: list[int] = []
    for op in LCSseq.opcodes(wanted, window):
        if op.tag == "equal":
            excerpt_hits.extend(range(op.src_start, op.src_end))
            source_hits.extend(start + j for j in range(op.dest_start, op.dest_end))
    return _Alignment(found, excerpt_hits, source_hits)


def _span(alignment: _Alignment) -> int:
    return alignment.source_hits[-1] - alignment.source_hits[0]


def _coverage_problem(excerpt: list[Token], alignment: _Alignment) -> str | None:
    hits = set(alignment.excerpt_hits)
    missing = [t.surface for i, t in enumerate(excerpt) if i not in hits]
    if not missing:
        return None
    shown = ", ".join(repr(s) for s in missing[:_SHOWN_TOKENS])
    more = " …" if len(missing) > _SHOWN_TOKENS else ""
    return (
        f"{len(missing)} of {len(excerpt)} excerpt tokens not found in order in the source:"
        f" {shown}{more}"
    )


def _number_problems(excerpt: list[Token], source: list[Token]) -> list[str]:
    keys = [t.key for t in source]
    problems: list[str] = []
    for index, token in enumerate(excerpt):
        if token.kind != "num":
            continue
        places = [j for j, s in enumerate(source) if s.kind == "num" and s.key == token.key]
        if not places:
            problems.append(f"number {token.surface} does not occur in the source")
        elif index > 0:
            label = excerpt[index - 1].key
            if not any(label in keys[max(0, j - NEIGHBOUR_REACH) : j] for j in places):
                problems.append(
                    f"number {token.surface} follows {label!r} in the excerpt but not in the source"
                )
        elif index + 1 < len(excerpt):
            label = excerpt[index + 1].key
            if not any(label in keys[j + 1 : j + 1 + NEIGHBOUR_REACH] for j in places):
                problems.append(
                    f"number {token.surface} precedes {label!r} in the excerpt"
                    " but not in the source"
                )
    return problems


def _negation_problem(excerpt: Tokenised, source: Tokenised, first: int, last: int) -> str | None:
    """Compare negations of the excerpt with the matched span and the token just before it."""
    said = [t.surface for t in excerpt.whole_tokens() if t.is_negation]
    span = source.tokens[first : last + 1]
    before = [t for t in source.tokens[:first] if not t.is_filler][-1:]
    found = [t.surface for t in [*before, *span] if t.is_negation]
    if len(said) == len(found):
        return None
    return (
        f"negation differs: the excerpt has {len(said)} negation word(s) {said},"
        f" the matched source text has {len(found)} {found}"
    )


def _cut_problems(excerpt: Tokenised, source: list[Token], hits: list[int]) -> list[str]:
    """A token glued to ``...`` must be the start (or end) of a nearby source token."""
    problems: list[str] = []
    if excerpt.cut_last:
        cut = excerpt.tokens[-1].surface
        after = source[hits[-1] + 1 : hits[-1] + 1 + _CUT_REACH]
        if not any(t.surface.startswith(cut) for t in after):
            problems.append(f"truncated token {cut!r} does not start a source token there")
    if excerpt.cut_first:
        cut = excerpt.tokens[0].surface
        before = source[max(0, hits[0] - _CUT_REACH) : hits[0]]
        if not any(t.surface.endswith(cut) for t in before):
            problems.append(f"truncated token {cut!r} does not end a source token there")
    return problems


# --------------------------------------------------------------------------- the verdict


@dataclass(frozen=True)
class _Comparison:
    """One excerpt aligned with one ref text; each check reads what it needs from here."""

    quoted: Tokenised
    wanted: list[Token]  # whole, non-filler excerpt tokens: what must be found
    source: Tokenised
    available: list[Token]  # non-filler source tokens
    alignment: _Alignment

    @property
    def score(self) -> float:
        return round(100.0 * self.alignment.found / len(self.wanted), 1) if self.wanted else 0.0

    def span(self) -> tuple[Token, Token] | None:
        hits = self.alignment.source_hits
        return (self.available[hits[0]], self.available[hits[-1]]) if hits else None

    def matched_text(self) -> str | None:
        span = self.span()
        return None if span is None else self.source.text[span[0].start : span[1].end]

    def contradictions(self) -> list[str]:
        """A changed number or a flipped negation: a forgery, however short the quote."""
        problems = _number_problems(self.wanted, self.available)
        span = self.span()
        if span is not None:
            negation = _negation_problem(self.quoted, self.source, *(t.position for t in span))
            problems.extend([negation] if negation else [])
        return problems

    def gaps(self) -> list[str]:
        """Tokens not found in order, or a ``...`` token that fits no source token there."""
        if not self.alignment.source_hits:
            return ["no excerpt token occurs in the source"]
        coverage = _coverage_problem(self.wanted, self.alignment)
        cut = _cut_problems(self.quoted, self.available, self.alignment.source_hits)
        return [coverage, *cut] if coverage else cut

    def content(self) -> list[Token]:
        """Non-filler excerpt tokens, minus those matched to metadata of the ref text."""
        metadata = metadata_positions(self.source)
        pairs = zip(self.alignment.excerpt_hits, self.alignment.source_hits, strict=True)
        matched_to_metadata = {
            self.wanted[i].position for i, j in pairs if self.available[j].position in metadata
        }
        return [
            t
            for t in self.quoted.tokens
            if not t.is_filler and t.position not in matched_to_metadata
        ]


def _compare(excerpt: str, text: str) -> _Comparison:
    quoted, source = tokenise(excerpt), tokenise(text)
    wanted = [t for t in quoted.whole_tokens() if not t.is_filler]
    available = [t for t in source.tokens if not t.is_filler]
    alignment = _align(wanted, available) if wanted else _Alignment(0, [], [])
    return _Comparison(quoted, wanted, source, available, alignment)


def informative_units(excerpt: str, text: str) -> float:
    """Length of ``excerpt`` once the tokens matched to metadata of ``text`` are left out."""
    return units(_compare(excerpt, text).content())


def match_excerpt(excerpt: str, text: str) -> ExcerptMatch:
    """Decide whether ``excerpt`` quotes ``text`` (see the module docstring for the rules)."""
    compared = _compare(excerpt, text)
    score, matched_text = compared.score, compared.matched_text()
    gaps, contradictions = compared.gaps(), compared.contradictions()
    if contradictions:  # before the length check: a short forgery is still a forgery
        return ExcerptMatch("mismatch", score, "; ".join(gaps + contradictions), matched_text)
    length = units(compared.quoted.tokens)
    if length < MIN_EXCERPT_UNITS:
        reason = f"excerpt has {length:g} comparable units, below the minimum of"
        return ExcerptMatch("too_short", score, f"{reason} {MIN_EXCERPT_UNITS:g} ({_UNITS_RULE})")
    if gaps:
        return ExcerptMatch("mismatch", score, "; ".join(gaps), matched_text)
    content = compared.content()
    if units(content) < MIN_EXCERPT_UNITS:
        return ExcerptMatch("too_short", score, _generic_reason(content), matched_text)
    reason = f"all {len(compared.wanted)} excerpt tokens found in order in the source"
    return ExcerptMatch("matched", score, f"{reason} (score {score:g})", matched_text)


def _generic_reason(content: list[Token]) -> str:
    remains = " ".join(t.surface for t in content)
    left = repr(remains) if remains else "nothing"
    return (
        "excerpt is generic: it quotes only metadata of the item (timestamp, log level,"
        f" service, alert state); what remains after metadata is {left},"
        f" {units(content):g} comparable units, below the minimum of {MIN_EXCERPT_UNITS:g}"
    )
