"""The closed vocabulary of key facts (``fact_vocabulary.yaml``), read once into patterns.

Sections: negation, possible, recommended, confirmation and causal markers, the words that
only look like one of them (``not_markers``), action verbs by canonical name, units and
counters. Every form is normalised as the text it is matched against
(:func:`~pytest_diageval.core.text.normalised.normalise`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

import yaml

from pytest_diageval.core.text.excerpt_tokens import NEGATION_WORDS
from pytest_diageval.core.text.normalised import normalise

__all__ = [
    "MARKER_SECTIONS",
    "NUM",
    "VOCABULARY_FILE",
    "Vocabulary",
    "bounded",
    "vocabulary",
    "vocabulary_table",
]

VOCABULARY_FILE: Final = "fact_vocabulary.yaml"
"""The vocabulary, next to this module (read once)."""
MARKER_SECTIONS = ("negation", "possible", "recommended", "confirmation", "causal")
NUM = r"\d+(?:,\d{3}(?!\d))*(?:\.\d+)?"


@dataclass(frozen=True)
class Vocabulary:
    markers: Mapping[str, re.Pattern[str]]  # section -> any of its markers
    blanks: Mapping[str, re.Pattern[str]]  # section -> its not_markers
    actions: tuple[tuple[str, re.Pattern[str]], ...]
    units: Mapping[str, str]  # surface -> canonical unit, "" for a counter
    quantity: re.Pattern[str]


def vocabulary_table(name: str) -> dict[str, Any]:
    """One of this package's YAML word tables, read; a file that is not a mapping raises
    ``ValueError`` naming it."""
    package = resources.files("pytest_diageval.core.text")
    data = yaml.safe_load(package.joinpath(name).read_text("utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{name}: not a mapping")
    return data


@functools.cache
def vocabulary() -> Vocabulary:
    data = vocabulary_table(VOCABULARY_FILE)
    words = {section: _strings(data.get(section), section) for section in MARKER_SECTIONS}
    words["negation"] += sorted(NEGATION_WORDS)  # excerpt matching's negations count too
    blanks = _table(data.get("not_markers"), "not_markers")
    units = {s: unit for unit, forms in _table(data.get("units"), "units").items() for s in forms}
    units.update(dict.fromkeys(_strings(data.get("counters"), "counters"), ""))
    unit_re = "|".join(
        bounded(unit, left=False) for unit in sorted(units, key=lambda u: (-len(u), u))
    )
    return Vocabulary(
        markers={section: _any_of(forms) for section, forms in words.items()},
        blanks={section: _any_of(blanks.get(section, [])) for section in MARKER_SECTIONS},
        actions=tuple(
            (name, _any_of(forms, inflect=True))
            for name, forms in _table(data.get("actions"), "actions").items()
        ),
        units=units,
        quantity=re.compile(
            rf"(?:(?<![a-z0-9_])(?P<label>[a-z]+)\s?=\s?)?(?<![a-z0-9_.])(?P<a>{NUM})"
            rf"(?:\s?(?P<ua>{unit_re}))?(?:\s?/\s?(?P<b>{NUM})(?:\s?(?P<ub>{unit_re}))?)?"
        ),
    )


def _strings(value: object, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f"{VOCABULARY_FILE}: {where} must be a list of non-empty strings")
    return [normalise(item) for item in value]


def _table(value: object, where: str) -> dict[str, list[str]]:
    if not isinstance(value, dict):
        raise ValueError(f"{VOCABULARY_FILE}: {where} must be a mapping")
    return {str(key): _strings(forms, f"{where}.{key}") for key, forms in value.items()}


def bounded(form: str, inflect: bool = False, left: bool = True) -> str:
    """``form`` as a pattern; a Latin or digit edge must not touch another one (a unit's
    left edge touches its number)."""
    pattern = re.escape(form)
    if left and form[0].isascii() and form[0].isalnum():
        pattern = r"(?<![a-z0-9])" + pattern
    if form[-1].isascii() and form[-1].isalnum():
        suffix = "(?:s|es|ed|d|ing)?" if inflect and " " not in form else ""
        pattern += suffix + r"(?![a-z0-9])"
    return pattern


def _any_of(forms: Iterable[str], inflect: bool = False) -> re.Pattern[str]:
    ordered = sorted(set(forms), key=lambda form: (-len(form), form))  # longest first
    return re.compile("|".join(bounded(form, inflect) for form in ordered) or r"(?!)")
