"""Text with its disguises taken off: what a detector of orders must read, not what a reader
sees.

An attacker varies what a keyword list compares: letter shapes, spacing, invisible characters,
markup, encodings, the row a word falls on. :func:`unmask` undoes each of these and returns
every reading worth scanning:

- **flat**: NFKC, casefolded, format, combining and control characters dropped (zero-width
  spaces, the soft hyphen, invisible tags), markdown markup stripped,
  then the confusable skeleton (Unicode TR39: a Cyrillic ``о`` or a Greek ``ι`` inside a Latin
  word reads as ``o`` / ``i``), letters spaced out rejoined (``i g n o r e``, ``P-A-S-S``,
  ``忽 略 以 上``), table bars and quotes read as separators, underscores as spaces, whitespace
  collapsed;
- **native**: the same without the skeleton, so an order in Russian or Greek stays Russian;
- **lines**: the flat reading row by row, for role headers that only mean something at the
  start of a line (``### System:``);
- **decoded**: every run of 16 characters or more that decodes as base64, hex or URL
  (percent) encoding into readable UTF-8, unmasked in turn (one level deep).

The confusable table comes from ``confusable-homoglyphs`` (Unicode's ``confusables.txt`` as
data, MIT, pure Python; ``confusables`` 1.2.0's ``normalize`` enumerates every combination
and grows exponentially with the text). Only letters outside ASCII and outside CJK scripts are
mapped, and only to an ASCII letter, so Chinese text is never touched.

Deterministic and pure: no I/O beyond the package's data, no model.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
import urllib.parse
from dataclasses import dataclass
from functools import cache, lru_cache

from confusable_homoglyphs import confusables

__all__ = ["Unmasked", "decoded_runs", "joined_rows", "skeleton", "unmask"]

_MIN_ENCODED = 16
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_HEX_RUN = re.compile(r"(?<![0-9a-fA-F])(?:[0-9a-fA-F]{2}){8,}(?![0-9a-fA-F])")
_URL_RUN = re.compile(r"[^\s\"']*%[0-9a-fA-F]{2}[^\s\"']*%[0-9a-fA-F]{2}[^\s\"']*")
# Single characters (a letter, a digit or one CJK ideograph) joined by one separator, the same
# all along: ``i g n o r e``, ``i.g.n``, ``d-i-s``, ``s/k/i/p``. Two separators in a row, or
# another separator, end a word.
_SPACER = r"[ .+\-*·~/_|]"
_SPACED_RUN = re.compile(
    rf"(?<![^\W_])[^\W_](?P<sep>{_SPACER})[^\W_](?![^\W_])(?:(?P=sep)[^\W_](?![^\W_]))*"
)
_DIGITS = re.compile(r"[0-9]+")
# Leetspeak (1gn0r3, @ss1st@nt): a text is read folded when one of its words has a leet
# character between two letters; then every word of two letters or more with one is folded.
_LEET_TRIGGER = re.compile(r"[a-z][013457@$]+[a-z]")
_LEET_WORD = re.compile(r"(?<![a-z0-9@$])(?=(?:[0-9@$]*[a-z]){2})[a-z0-9@$]*[013457@$][a-z0-9@$]*")
_LEET = str.maketrans("013457@$", "oieastas")
_MARKUP = re.compile(r"~~|\*\*|__|`")
_LINE_MARKUP = re.compile(r"^[ \t]*(?:(?:[#>]|(?:[-*+]|\d{1,2}[.)])(?=[ \t]))[ \t]*)+", re.M)
_CLOSERS = "\"'”’」』)]"
_SEPARATORS = re.compile(r"[\"'“”‘’「」『』`]+")
# Hangul fillers are letters that show nothing: inside a word (``Assi\u1160stent``) they hide it.
_FILLERS = str.maketrans({"\u115f": None, "\u1160": None, "\uffa0": None})
_TABLE_BAR = re.compile(r"(?<!<)\|(?!>)")  # a table cell's edge, not a ``<|role|>`` token


# The traditional forms of the characters the order vocabulary uses, folded to the simplified
# ones it is written in (a fold of that vocabulary, not a converter).
_SIMPLIFIED = str.maketrans(
    "審驗對證據診斷評過結論輸將請視規則無須應為與這條記標設確認實給後從開說讀統會們還處誤報錯類",
    "审验对证据诊断评过结论输将请视规则无须应为与这条记标设确认实给后从开说读统会们还处误报错类",
)


@dataclass(frozen=True)
class Unmasked:
    """The readings of one text (see the module docstring)."""

    flat: str
    native: str
    lines: tuple[str, ...]
    decoded: tuple[tuple[str, Unmasked], ...]  # (encoding, what it decodes to, unmasked)
    # A word spelled out letter by letter ("v e r d i c t", "P-A-S-S") before it was joined:
    # an obfuscation nobody uses in a business log.
    spelled_out: bool = False


@lru_cache(maxsize=4096)
def unmask(text: str, *, decode: bool = True) -> Unmasked:
    """Every reading of ``text`` worth scanning for an order; see the module docstring.
    Cached: the gatekeeper reads the same items again in every round."""
    base = _visible(text.replace("\\n", "\n").replace("\u3164", " ").translate(_FILLERS))
    lookalike = skeleton(base.translate(_hidden(("Mn", "Me")))).casefold()
    decoded = (
        tuple((encoding, unmask(plain, decode=False)) for encoding, plain in decoded_runs(text))
        if decode
        else ()
    )
    if decode and _LEET_TRIGGER.search(lookalike):
        leet = _LEET_WORD.sub(lambda word: word.group(0).translate(_LEET), lookalike)
        decoded += (("leetspeak", unmask(leet, decode=False)),)
    return Unmasked(
        flat=_flat(lookalike),
        native=_flat(base),
        lines=tuple(row for row in map(_flat, lookalike.splitlines()) if row),
        decoded=decoded,
        spelled_out=_SPELLED_OUT.search(base) is not None,
    )


_SPELLED_OUT = re.compile(r"(?<![A-Za-z])(?:[A-Za-z][ .\-_·]){3,}[A-Za-z](?![A-Za-z])")


def joined_rows(first: str, second: str) -> tuple[str, str]:
    """Two adjacent rows of one result read as one text, the second without the header it
    shares with the first (level, service, label; timestamps, counters and ``(1/2)`` marks
    compared with their digits ignored): ``(with a space, without)``, so that a word split
    across the rows joins."""
    head, tail = first.split(), second.split()
    shared = 0
    while shared < min(len(head), len(tail)) - 1 and _header_key(head[shared]) == _header_key(
        tail[shared]
    ):
        shared += 1
    rest = tail[shared:]
    if shared < len(head):  # 'msg="please ig"' then 'msg="nore …"': drop the shared 'msg="'
        common = len(_common_prefix(head[shared], rest[0]))
        rest = [rest[0][common:], *rest[1:]]
    text = " ".join(rest)
    return f"{first.rstrip()} {text}", f"{first.rstrip().rstrip(_CLOSERS)}{text}"


def skeleton(text: str) -> str:
    """``text`` with every non-ASCII, non-CJK letter that is confusable with an ASCII letter
    replaced by that letter (TR39's skeleton, restricted to what an English keyword can be
    faked with)."""
    if text.isascii():
        return text
    return "".join(_ascii_lookalike(char) for char in text)


def decoded_runs(text: str) -> list[tuple[str, str]]:
    """``(encoding, plain text)`` for every run of at least 16 characters that decodes as
    base64, hex or URL encoding into readable UTF-8 text that differs from the run."""
    found: list[tuple[str, str]] = []
    tags = "".join(chr(ord(char) - 0xE0000) for char in text if 0xE0020 <= ord(char) <= 0xE007E)
    if len(tags) >= _MIN_ENCODED:  # ASCII smuggled as invisible Unicode tag characters
        found.append(("unicode tags", tags))
    for encoding, pattern, decoder in _DECODERS:
        for match in pattern.finditer(text):
            run = match.group(0)
            if len(run) < _MIN_ENCODED:
                continue
            plain = decoder(run)
            if plain is not None and plain != run and _readable(plain):
                found.append((encoding, plain))
    return list(dict.fromkeys(found))


def _header_key(token: str) -> str:
    """A header token with what changes from row to row (digits, a one-letter label) blurred."""
    blurred = _DIGITS.sub("0", token)
    return "x:" if re.fullmatch(r"[A-Za-z]:", blurred) else blurred


def _common_prefix(first: str, second: str) -> str:
    size = 0
    while size < min(len(first), len(second)) and first[size] == second[size]:
        size += 1
    return first[:size]


def _visible(text: str) -> str:
    """NFKC, casefolded, format and control characters (but newlines and tabs) and markdown
    markup gone: what the reader of the text sees. Combining marks stay here (Hindi and Thai
    vowels are marks); the skeleton reading drops them (``i\u0307gnore``)."""
    folded = unicodedata.normalize("NFKC", text).translate(_hidden(("Cf", "Cc"))).casefold()
    return _LINE_MARKUP.sub("", _MARKUP.sub("", folded))


@cache
def _hidden(categories: tuple[str, ...]) -> dict[int, None]:
    """Every character of ``categories`` but newline and tab, in the BMP, the tag block
    (U+E0000–E007F, invisible tags) and the variation selectors supplement (U+E0100–E01EF),
    as a ``str.translate`` table."""
    codes = [*range(0x10000), *range(0xE0000, 0xE0080), *range(0xE0100, 0xE01F0)]
    return {
        code: None
        for code in codes
        if unicodedata.category(chr(code)) in categories and chr(code) not in "\n\t"
    }


def _flat(folded: str) -> str:
    """A normalised text with separators, underscores, table bars, spaced letters and
    traditional characters read away, whitespace collapsed."""
    folded = _SEPARATORS.sub(" ", folded)
    folded = _SPACED_RUN.sub(lambda run: re.sub(_SPACER, "", run.group(0)), folded)
    folded = _TABLE_BAR.sub(" : ", folded.replace("_", " "))
    folded = folded.translate(_SIMPLIFIED)
    return " ".join(folded.split())


@lru_cache(maxsize=4096)
def _ascii_lookalike(char: str) -> str:
    if char.isascii() or not char.isalpha() or _is_cjk(char):
        return char
    prefix, _, letter = unicodedata.name(char, "").rpartition(" ")
    if prefix == "LATIN LETTER SMALL CAPITAL" and len(letter) == 1:
        return letter.lower()  # ᴍᴏᴅᴇʟ reads as model
    found = confusables.is_confusable(char, greedy=True, preferred_aliases=["latin"])
    if not found:
        return char
    letters = sorted(
        glyph["c"]
        for entry in found
        for glyph in entry["homoglyphs"]
        if len(glyph["c"]) == 1 and glyph["c"].isascii() and glyph["c"].isalpha()
    )
    return letters[0] if letters else char


def _is_cjk(char: str) -> bool:
    name = unicodedata.name(char, "")
    return name.startswith(("CJK", "HIRAGANA", "KATAKANA", "HANGUL", "IDEOGRAPHIC"))


def _from_base64(run: str) -> str | None:
    padded = run + "=" * (-len(run) % 4)
    try:
        raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        return None
    return _utf8(raw)


def _from_hex(run: str) -> str | None:
    return _utf8(bytes.fromhex(run))


def _from_url(run: str) -> str | None:
    plain = urllib.parse.unquote(run.replace("+", " "), errors="strict")
    return plain if plain != run else None


def _utf8(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _readable(plain: str) -> bool:
    """Text a model would read as words: no control characters, mostly letters and spaces."""
    if any(
        unicodedata.category(char) in ("Cc", "Cs", "Co") and char not in "\n\t" for char in plain
    ):
        return False
    letters = sum(char.isalpha() or char.isspace() for char in plain)
    return letters >= 0.7 * len(plain)


_DECODERS = (
    ("base64", _BASE64_RUN, _from_base64),
    ("hex", _HEX_RUN, _from_hex),
    ("url", _URL_RUN, _from_url),
)
