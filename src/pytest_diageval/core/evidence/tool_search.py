"""Text search behind the tools: synonym-aware keyword matching and runbook ranking.

Keyword matching (``query_logs`` and ``query_metrics``, through ``keyword_terms``):

- case-insensitive substring match after ``fold`` (NFKC + casefold);
- synonym groups (``SYNONYM_GROUPS``): a keyword that *equals* a group term matches every
  term of that group; a keyword that equals none but *contains* group terms (``HikariCP
  connection pool``) matches every term of those groups. Equality wins, so the specific
  ``request timed out after 30000ms`` does not widen to the generic timeout group.

Layered runbook retrieval (``lookup_knowledge``, through ``KnowledgeIndex``):

- **L0** (exact): a runbook whose ``alert_name`` is one of the query's words (``HighCPUUsage
  怎么处理`` names ``HighCPUUsage``), or whose title equals the whole normalised query. An L0
  hit returns the whole runbook as one block with relevance 1.0; L1 is not consulted, because
  an exact hit is the best answer there is and lexical neighbours would only add noise.
- **L1** (lexical): Okapi BM25 (k1=1.5, b=0.75) over runbook *sections* (runbook title +
  section heading + content). Tokens are ASCII words (``[a-z0-9]+`` after NFKC + casefold) and
  CJK character bigrams (a lone CJK character is its own token), so Chinese needs no
  dictionary. Sections are ranked by BM25; the ``relevance`` reported with a block is the
  share of the query's IDF mass that the section contains (0..1), which, unlike a raw BM25
  score, is comparable between queries. Sections below ``MIN_RELEVANCE`` are dropped.
- **none**: neither layer found anything.

Relevance levels: ``high`` >= 0.6, ``medium`` >= 0.35, ``low`` below; ``none`` without
blocks. Ties are broken by runbook order, then section order, so results are deterministic.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pytest_diageval.core.evidence.world import KnowledgeDoc, KnowledgeSection

__all__ = [
    "HIGH_RELEVANCE",
    "MEDIUM_RELEVANCE",
    "MIN_RELEVANCE",
    "SYNONYM_GROUPS",
    "EvidenceBlock",
    "KnowledgeIndex",
    "KnowledgeResult",
    "RelevanceLevel",
    "RetrievalLayer",
    "expand_keyword",
    "fold",
    "keyword_terms",
    "normalise_query",
    "relevance_level",
    "tokenize",
]

RetrievalLayer = Literal["L0", "L1", "none"]
RelevanceLevel = Literal["high", "medium", "low", "none"]

HIGH_RELEVANCE = 0.6
MEDIUM_RELEVANCE = 0.35
MIN_RELEVANCE = 0.2
"""A section that holds less than this share of the query's IDF mass is not returned: with
bigram tokens a single shared common bigram (``处理``) must not count as a hit."""

_BM25_K1 = 1.5
_BM25_B = 0.75
_TOKEN = re.compile(r"[a-z0-9]+|[\u3400-\u4dbf\u4e00-\u9fff]+")
_EDGE_PUNCTUATION = " \t\n\r.,;:!?。，；：！？、…\"'“”‘’()（）[]【】"


def fold(text: str) -> str:
    """The comparison form of text: NFKC (full-width -> ASCII) and casefold."""
    return unicodedata.normalize("NFKC", text).casefold()


def normalise_query(query: str) -> str:
    """The dedup key of a query: folded, whitespace collapsed, edge punctuation stripped."""
    return " ".join(fold(query).split()).strip(_EDGE_PUNCTUATION)


def tokenize(text: str) -> list[str]:
    """ASCII words and CJK bigrams of ``text`` (see the module docstring)."""
    tokens: list[str] = []
    for run in _TOKEN.findall(fold(text)):
        if run.isascii() or len(run) == 1:
            tokens.append(run)
        else:
            tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
    return tokens


# --------------------------------------------------------------------------- keywords

SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    (  # HikariCP connection-pool exhaustion (seed 004: "HikariCP 相关查询应支持同义表达命中")
        "hikaricp",
        "hikaripool",
        "connection pool",
        "connection is not available",
        "数据库连接池",
        "连接池耗尽",
        "连接池",
        "active=50/50",
        "request timed out after 30000ms",
        "waiting",
        "pool exhausted",
    ),
    ("highmemoryusage", "memory", "内存", "内存使用率", "heap", "堆内存", "full gc", "gc次数"),
    ("oom", "outofmemoryerror", "out of memory", "内存溢出", "java heap space"),
    ("highcpuusage", "cpu", "cpu使用率", "cpu usage", "处理器", "load average"),
    (
        "slowresponse",
        "slow response",
        "slow request",
        "慢请求",
        "响应慢",
        "响应缓慢",
        "响应时间",
        "latency",
        "延迟",
        "p99",
    ),
    ("slow query", "slow sql", "慢查询", "慢sql", "数据库慢查询"),
    ("timeout", "timed out", "超时"),
    ("serviceunavailable", "service unavailable", "服务不可用", "unavailable", "503"),
)
"""Terms are folded (lower case). Service names are deliberately in no group: the service
filter, not a keyword, decides which service a hit may come from."""


def expand_keyword(keyword: str) -> tuple[str, ...]:
    """All folded terms that count as a hit for ``keyword``: itself first, then synonyms."""
    folded = fold(keyword).strip()
    groups = [group for group in SYNONYM_GROUPS if folded in group]
    if not groups:
        groups = [group for group in SYNONYM_GROUPS if any(term in folded for term in group)]
    terms = [folded]
    for group in groups:
        terms.extend(term for term in group if term not in terms)
    return tuple(terms)


def keyword_terms(keywords: Sequence[str] | None) -> tuple[str, ...] | None:
    """The terms of several keywords, OR-ed; ``None`` means "no keyword filter"."""
    if not keywords:
        return None
    terms: list[str] = []
    for keyword in keywords:
        terms.extend(term for term in expand_keyword(keyword) if term not in terms)
    return tuple(terms)


# --------------------------------------------------------------------------- runbooks


def relevance_level(relevance: float | None) -> RelevanceLevel:
    if relevance is None:
        return "none"
    if relevance >= HIGH_RELEVANCE:
        return "high"
    return "medium" if relevance >= MEDIUM_RELEVANCE else "low"


@dataclass(frozen=True)
class EvidenceBlock:
    title: str
    source: str
    content: str
    relevance: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "source": self.source,
            "content": self.content,
            "relevance": self.relevance,
        }


@dataclass(frozen=True)
class KnowledgeResult:
    layer: RetrievalLayer
    blocks: tuple[EvidenceBlock, ...]
    l0_count: int
    l1_count: int

    @property
    def relevance_level(self) -> RelevanceLevel:
        return relevance_level(max((b.relevance for b in self.blocks), default=None))


@dataclass(frozen=True)
class _Section:
    doc: KnowledgeDoc
    section: KnowledgeSection
    term_counts: Counter[str]
    length: int


def _whole_doc_block(doc: KnowledgeDoc) -> EvidenceBlock:
    content = "\n".join(f"【{s.heading}】{s.content}" for s in doc.sections)
    return EvidenceBlock(doc.title, doc.source, content, 1.0)


def _section_block(entry: _Section, relevance: float) -> EvidenceBlock:
    return EvidenceBlock(
        title=f"{entry.doc.title} / {entry.section.heading}",
        source=f"{entry.doc.source}#{entry.section.heading}",
        content=entry.section.content,
        relevance=round(relevance, 3),
    )


class KnowledgeIndex:
    """An immutable search index over the runbooks of one world."""

    def __init__(self, docs: Sequence[KnowledgeDoc]) -> None:
        self._docs = tuple(docs)
        self._sections = tuple(
            self._index(doc, section) for doc in docs for section in doc.sections
        )
        document_frequency: Counter[str] = Counter()
        for entry in self._sections:
            document_frequency.update(entry.term_counts.keys())
        self._document_frequency = document_frequency
        lengths = [entry.length for entry in self._sections]
        self._average_length = sum(lengths) / len(lengths) if lengths else 0.0

    @staticmethod
    def _index(doc: KnowledgeDoc, section: KnowledgeSection) -> _Section:
        tokens = tokenize(f"{doc.title} {section.heading} {section.content}")
        return _Section(doc, section, Counter(tokens), len(tokens))

    def search(self, query: str, top_k: int) -> KnowledgeResult:
        exact = self._exact(query)
        if exact:
            blocks = tuple(_whole_doc_block(doc) for doc in exact[:top_k])
            return KnowledgeResult("L0", blocks, len(blocks), 0)
        ranked = self._lexical(query)[:top_k]
        if not ranked:
            return KnowledgeResult("none", (), 0, 0)
        blocks = tuple(_section_block(entry, relevance) for entry, relevance in ranked)
        return KnowledgeResult("L1", blocks, 0, len(blocks))

    def _exact(self, query: str) -> list[KnowledgeDoc]:
        words = set(_TOKEN.findall(fold(query)))
        normalised = normalise_query(query)
        return [
            doc
            for doc in self._docs
            if (doc.alert_name is not None and fold(doc.alert_name) in words)
            or normalise_query(doc.title) == normalised
        ]

    def _idf(self, term: str) -> float:
        count = self._document_frequency.get(term, 0)
        total = len(self._sections)
        return math.log(1.0 + (total - count + 0.5) / (count + 0.5))

    def _bm25(self, entry: _Section, terms: Sequence[str]) -> float:
        norm = _BM25_K1 * (1 - _BM25_B + _BM25_B * entry.length / (self._average_length or 1.0))
        score = 0.0
        for term in terms:
            tf = entry.term_counts.get(term, 0)
            if tf:
                score += self._idf(term) * tf * (_BM25_K1 + 1) / (tf + norm)
        return score

    def _lexical(self, query: str) -> list[tuple[_Section, float]]:
        terms = sorted(set(tokenize(query)))
        idf_mass = sum(self._idf(term) for term in terms)
        if not terms or not self._sections:
            return []
        scored = []
        for position, entry in enumerate(self._sections):
            covered = sum(self._idf(t) for t in terms if t in entry.term_counts) / idf_mass
            if covered >= MIN_RELEVANCE:
                scored.append((-self._bm25(entry, terms), position, entry, covered))
        scored.sort(key=lambda item: (item[0], item[1]))
        return [(entry, covered) for _, _, entry, covered in scored]
