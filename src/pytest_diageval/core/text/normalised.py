"""Text as every comparison of the core reads it, and where its sentences end.

:func:`normalise`: NFKC (full-width folded), every Unicode decimal digit to ASCII, combining
marks, control and format characters dropped, markdown markup (``~~ ** __ `` and line markers)
stripped, casefolded; idempotent. Markup is stripped, not obeyed: ``~~不~~`` keeps its 不, so
a negation cannot hide from the facts (whether a *reader* sees it is the composer's concern).
:func:`split_sentences` cuts at 。！？； and newlines, never at colons (11:17:00) or commas.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from itertools import accumulate

__all__ = ["clean", "fold_map", "normalise", "split_sentences"]

_DROPPED = frozenset({"Mn", "Me", "Cc", "Cf", "Co", "Cs"})  # marks, controls, formats
_MARKS = frozenset({"Mn", "Me"})
_TRANSLATE = str.maketrans({"\u066b": ".", "\u066c": ",", "\u2018": "'", "\u2019": "'"})
_MARKUP_RE = re.compile(r"~~|\*\*|__|`")
_LINE_MARKUP_RE = re.compile(r"^[ \t]*(?:(?:[#>]|(?:[-*+]|\d{1,2}[.)])(?=[ \t]))[ \t]*)+", re.M)
_MAX_PASSES = 8
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_SENTENCE_RE = re.compile(
    r"^[ \t]*\d{1,2}[.)](?=[ \t])"  # a list marker's point ends nothing
    rf"|(?P<cut>[。！？；｡\n\r\u2028\u2029]|[.!?;．](?=\s|$|[{_CJK}]))",
    re.M,
)


def normalise(text: str) -> str:
    """The text as every comparison reads it (see the module docstring); idempotent."""
    return _fixed(lambda part: fold_map(_clean_pass(part))[0], text)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``, stripped: cut at 。！？； and newlines, and at ``. ! ? ;`` before
    a space, a CJK character or the end; never at colons (11:17:00) or commas."""
    parts: list[str] = []
    begin = 0
    for found in _SENTENCE_RE.finditer(text):
        if found.group("cut"):
            parts.append(text[begin : found.start()])
            begin = found.end()
    parts.append(text[begin:])
    return [part.strip() for part in parts if part.strip()]


def clean(text: str) -> str:
    """The text with markup, marks and controls gone and digits in ASCII, not yet folded."""
    return _fixed(_clean_pass, text)


def _fixed(step: Callable[[str], str], text: str) -> str:
    """Apply ``step`` until nothing changes (stripping ``*~~*`` reveals ``**``); a pass that
    changes the text after the first few removes markup, so the length bounds the passes."""
    for _ in range(len(text) + _MAX_PASSES):
        changed = step(text)
        if changed == text:
            break
        text = changed
    return text


def _clean_pass(text: str) -> str:
    text = unicodedata.normalize("NFKC", text.replace("\r\n", "\n")).translate(_TRANSLATE)
    text = "".join(map(_clean_char, text))
    return _LINE_MARKUP_RE.sub("", _MARKUP_RE.sub("", text))


def _clean_char(char: str) -> str:
    category = unicodedata.category(char)
    if char in "\n\t":
        return char
    if char == "\r" or category in ("Zl", "Zp"):
        return "\n"
    if category in _DROPPED:
        return ""
    digit = unicodedata.decimal(char, None)
    return char if digit is None else str(digit)


def _fold_char(char: str) -> str:
    return "".join(c for c in char.casefold() if unicodedata.category(c) not in _MARKS)


def fold_map(clean: str) -> tuple[str, list[int]]:
    """The folded text and, for each offset of ``clean`` (and its end), the folded offset."""
    parts = [_fold_char(char) for char in clean]
    return "".join(parts), [0, *accumulate(len(part) for part in parts)]
