"""The report's columns as data: one ordered table that the terminal table, the JSON report,
the HTML page, the CI summary and the baseline comparison all read.

A column is a :class:`ReportColumn`: a name, a header, how its value is computed from a
scenario's run (:class:`ColumnContext`, where the scenario ran, an xdist worker included) and how
a value is written in a cell. The built-in columns are :data:`BUILTIN_COLUMNS`; a ``conftest.py``
or a plugin adds its own through the hook ``pytest_diageval_report_columns(config)``
(:mod:`pytest_diageval.harness.hookspecs`), and every ``expect`` key registered outside the
built-in ones is a column of its own (its outcome per scenario, :func:`check_columns`).

An added column's values travel in the scenario's row (``summary["columns"]`` of the JSON
report). The renderers read every column from a report entry, the dict the JSON report holds
per scenario (``id``, ``summary``, ``checks``, ``check_results``, with ``--diageval-report``
``result`` too), through :meth:`ReportColumn.read` and :meth:`ReportColumn.cell`.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import pytest

from pytest_diageval.harness.format.expectations import EXPECT_KEYS

if TYPE_CHECKING:
    from pytest_diageval.agents.grader import GraderRun
    from pytest_diageval.agents.results import ChatResult
    from pytest_diageval.agents.usage import TokenUsage
    from pytest_diageval.harness.format.scenario import Scenario

__all__ = [
    "BUILTIN_COLUMNS",
    "MISSING",
    "ColumnContext",
    "ReportColumn",
    "ReportColumnError",
    "cell_text",
    "check_columns",
    "column_values",
    "columns_of",
    "compared_text",
    "failed_rules",
    "is_check_column_key",
    "report_columns",
    "scenario_tokens",
    "split_tokens_text",
    "token_total",
    "tokens_text",
]

Entry = Mapping[str, Any]
NO_VALUE = "—"
COLUMN_NAME_PATTERN = r"^[a-z][a-z0-9_]*$"


class _Missing:
    """No value at all (an older report, a scenario without the check), unlike ``None``."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()
"""What :meth:`ReportColumn.read` gives when a report entry has no value for the column: the
column is left out of a table where no scenario has one, and the baseline compares a column
only where both reports have it."""


class ReportColumnError(ValueError):
    """A column that cannot be used: its name, its header or a name another column has."""


@dataclass(frozen=True)
class ColumnContext:
    """What a column's ``value`` reads about one scenario's run (sample 1's result when the
    scenario ran several samples; the usage is that of all of them)."""

    scenario: Scenario
    """The scenario as loaded: ``scenario.scenario_id``, ``scenario.tags``, ``scenario.expect``."""
    result: ChatResult | None
    """The session's result, or None when the scenario did not run to the end."""
    usage: TokenUsage
    """The tokens the model answers reported, per stage and in total."""
    grade: GraderRun | None
    """The grader's answer when the scenario sets ``rubric``, else None."""
    error: str | None
    """What stopped the run (``"ScriptError: …"``), or None."""


def cell_text(value: Any) -> str:
    """How a value is written in a cell unless the column says otherwise: ``—`` for None, a
    float as ``%g``, a list joined by ``, ``, a mapping as compact JSON."""
    if value is None or value is MISSING:
        return NO_VALUE
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return ", ".join(cell_text(item) for item in value)
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


@dataclass(frozen=True)
class ReportColumn:
    """One column of the reports: ``value(ctx)`` computes a scenario's value where the scenario
    ran (it must be JSON: a str, number, bool, None, list or dict); ``text(value)`` writes a
    value that is not None in a cell (None is ``—``); ``compare`` says whether
    ``--diageval-baseline`` counts a changed value as a change of the scenario."""

    name: str
    """A lowercase identifier: the key in the JSON report's ``summary["columns"]``."""
    header: str
    """The table heading (terminal, HTML, CI summary) and the baseline's label."""
    value: Callable[[ColumnContext], Any]
    text: Callable[[Any], str] = cell_text
    compare: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not re.match(COLUMN_NAME_PATTERN, self.name):
            raise ReportColumnError(
                f"report column name {self.name!r} must be a lowercase identifier (letters,"
                " digits, '_'): it is a key of the JSON report"
            )
        if not isinstance(self.header, str) or not self.header.strip():
            raise ReportColumnError(f"report column {self.name!r}: its header must be a text")
        if not callable(self.value) or not callable(self.text):
            raise ReportColumnError(
                f"report column {self.name!r}: value and text must be functions"
                " (value(ctx) -> a JSON value, text(value) -> str)"
            )

    @property
    def label(self) -> str:
        """How the baseline comparison names the column."""
        return self.header

    @property
    def in_tables(self) -> bool:
        """Whether the tables show it (the final answer is compared, never a cell)."""
        return True

    def read(self, entry: Entry) -> Any:
        """The column's value in a report entry, :data:`MISSING` when it has none."""
        values = (entry.get("summary") or {}).get("columns")
        if not isinstance(values, Mapping) or self.name not in values:
            return MISSING
        return values[self.name]

    def cell(self, entry: Entry) -> str:
        """The cell's text for a report entry: ``text(value)``, ``—`` for no value or None."""
        value = self.read(entry)
        return NO_VALUE if value is MISSING or value is None else self._text(value)

    def _text(self, value: Any) -> str:
        """``text(value)``; a ``text`` that fails writes its error, as a failing ``value``
        does: the reports are written at the end of the run and must all be written."""
        try:
            return str(self.text(value))
        except Exception as error:  # a user's function: whatever it raises is shown
            return f"error: {type(error).__name__}: {error}"

    def compared_value(self, entry: Entry) -> Any:
        """The value ``--diageval-baseline`` compares; :data:`MISSING` is never a change."""
        return self.read(entry) if self.compare else MISSING

    def compared_texts(self, old: Entry, new: Entry) -> tuple[str, str] | None:
        """How a page shows a changed value beside the baseline's (None: as ``text`` does)."""
        return None

    def change_text(self, value: Any) -> str:
        """A compared value in the line that says what changed (``score 1.0 → 0.6``)."""
        return NO_VALUE if value is None else self._text(value)

    def sort_value(self, entry: Entry) -> Any:
        """What the HTML page sorts the column by: a number as it is, else the cell's text."""
        value = self.read(entry)
        return value if _is_number(value) else self.cell(entry)

    def numeric(self, entries: Sequence[Entry]) -> bool:
        """Whether the page sorts the column as numbers: every value a number, or none."""
        values = [self.read(entry) for entry in entries]
        return any(_is_number(v) for v in values) and all(
            _is_number(v) or v is None or v is MISSING or v == NO_VALUE for v in values
        )


@dataclass(frozen=True)
class _BuiltinColumn(ReportColumn):
    """A column of the plugin's own: read from the row's own fields, not ``summary.columns``."""

    reader: Callable[[Entry], Any] = field(default=lambda entry: MISSING)
    shown: Callable[[Entry], str] | None = None
    """The cell's text, when it says more than the compared value (each sample's verdict)."""
    compared_as: str | None = None
    look: str = ""
    """How the HTML page draws it: ``verdict`` (a badge), ``allowed`` (a verdict list)."""
    tables: bool = True
    sorter: Callable[[Entry], Any] | None = None
    """What the page sorts by, when not the value (checks: passed minus total)."""
    like_with_like: Callable[[Entry], str | None] | None = None
    """Both sides of a change in one shape (tokens: ``prompt+completion`` when both have it)."""
    unrecorded: bool = False
    """None means "not recorded" (tokens of an older report): compared only when both have one."""

    @property
    def label(self) -> str:
        return self.compared_as or self.header

    @property
    def in_tables(self) -> bool:
        return self.tables

    def read(self, entry: Entry) -> Any:
        return self.reader(entry)

    def compared_value(self, entry: Entry) -> Any:
        value = super().compared_value(entry)
        return MISSING if value is None and self.unrecorded else value

    def cell(self, entry: Entry) -> str:
        return self.shown(entry) if self.shown is not None else super().cell(entry)

    def change_text(self, value: Any) -> str:
        return compared_text(value)

    def sort_value(self, entry: Entry) -> Any:
        return self.sorter(entry) if self.sorter is not None else super().sort_value(entry)

    def numeric(self, entries: Sequence[Entry]) -> bool:
        return self.sorter is not None or self.name in ("score", "rounds", "tokens")

    def compared_texts(self, old: Entry, new: Entry) -> tuple[str, str] | None:
        if self.like_with_like is None:
            return None
        old_text, new_text = self.like_with_like(old), self.like_with_like(new)
        if old_text is not None and new_text is not None:
            return old_text, new_text
        return str(self.read(old)), str(self.read(new))


# --------------------------------------------------------------------------- reading a row


def token_total(tokens: Any) -> int | None:
    """A token count, whichever shape the report gives it: a number, a mapping with a
    ``total`` (number or nested usage), or ``prompt``/``completion`` counts (``_tokens`` names
    too); None when nothing was recorded (no count, or zero requests)."""
    if isinstance(tokens, bool):
        return None
    if isinstance(tokens, int):
        return tokens
    if not isinstance(tokens, Mapping):
        return None
    total = tokens.get("total")
    if isinstance(total, Mapping):
        return token_total(total)
    if isinstance(total, int) and not isinstance(total, bool):
        return total
    if tokens.get("requests") == 0:
        return None
    names = ("prompt", "completion", "prompt_tokens", "completion_tokens")
    counts = [tokens[name] for name in names if isinstance(tokens.get(name), int)]
    return sum(counts) if counts else None


def scenario_tokens(summary: Mapping[str, Any]) -> int | None:
    """The tokens of one scenario row: its ``usage`` (per stage and in total), else its
    ``tokens``; None for a run that recorded none (a scripted model, an older report)."""
    return token_total(summary["usage"] if "usage" in summary else summary.get("tokens"))


def split_tokens_text(summary: Mapping[str, Any]) -> str | None:
    """``prompt+completion`` of one scenario row; None when the row has no such split (no
    request, or a report that gives a bare total)."""
    usage = summary.get("usage")
    total = usage.get("total") if isinstance(usage, Mapping) else None
    if isinstance(total, Mapping) and total.get("requests"):
        return f"{total.get('prompt_tokens')}+{total.get('completion_tokens')}"
    return None


def tokens_text(summary: Mapping[str, Any]) -> str:
    """The tokens cell as the terminal table writes it (``prompt+completion``)."""
    split = split_tokens_text(summary)
    if split is not None:
        return split
    count = scenario_tokens(summary)
    return NO_VALUE if count is None else str(count)


def failed_rules(rounds: Sequence[Mapping[str, Any]]) -> list[str]:
    """The gatekeeper's failed rules of every round, each once: a rule that failed in round 1
    and was fixed by the retry still moved."""
    rules: list[str] = []
    for round_data in rounds:
        for rule in (round_data.get("gatekeeper") or {}).get("failed_rules") or []:
            if rule not in rules:
                rules.append(rule)
    return rules


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _checks_sort(entry: Entry) -> int:
    checks = entry.get("checks") or {}
    return -int(checks.get("failed", 0))


def compared_text(value: Any) -> str:
    """A built-in column's value in a change line: ``—`` for None, a list in brackets."""
    if value is None:
        return NO_VALUE
    if isinstance(value, list):
        return "[" + ", ".join(str(item) for item in value) + "]"
    return str(value)


def _summary(entry: Entry) -> Mapping[str, Any]:
    summary = entry.get("summary")
    return summary if isinstance(summary, Mapping) else {}


def _result(entry: Entry) -> Mapping[str, Any] | None:
    result = entry.get("result")
    return result if isinstance(result, Mapping) else None


def _field(name: str) -> Callable[[Entry], Any]:
    return lambda entry: _summary(entry).get(name)


def _verdicts(entry: Entry) -> str:
    summary = _summary(entry)
    samples = summary.get("samples")
    if samples:
        return "/".join(str(sample.get("verdict")) for sample in samples)
    return cell_text(summary.get("verdict"))


def _tokens(entry: Entry) -> Any:
    return scenario_tokens(_summary(entry))


def _agreement(entry: Entry) -> Any:
    return _summary(entry).get("agreement", MISSING)


def _reference(entry: Entry) -> Any:
    return _summary(entry).get("reference", MISSING)


def _checks(entry: Entry) -> Any:
    checks = entry.get("checks") or {}
    return {"passed": checks.get("passed", 0), "failed": checks.get("failed", 0)}


def _checks_text(entry: Entry) -> str:
    checks = entry.get("checks") or {}
    passed, failed = checks.get("passed", 0), checks.get("failed", 0)
    flaky = checks.get("flaky", 0)
    text = f"{passed}/{passed + failed}"
    return f"{text}, {flaky} flaky" if flaky else text


def _from_result(name: str) -> Callable[[Entry], Any]:
    def read(entry: Entry) -> Any:
        result = _result(entry)
        return None if result is None else result.get(name)

    return read


def _failed_rules(entry: Entry) -> Any:
    result = _result(entry)
    return failed_rules(result.get("rounds") or [] if result is not None else [])


def _no_value(ctx: ColumnContext) -> Any:  # a built-in column's value is in the row already
    return MISSING


BUILTIN_COLUMNS: tuple[ReportColumn, ...] = (
    _BuiltinColumn(
        "expected_verdict", "expected", _no_value, compare=False,
        reader=_field("expected_verdict"), look="allowed",
    ),
    _BuiltinColumn(
        "verdict", "actual", _no_value, reader=_field("verdict"), shown=_verdicts,
        compared_as="verdict", look="verdict",
    ),
    _BuiltinColumn("score", "score", _no_value, str, reader=_field("score")),
    _BuiltinColumn(
        "severity", "gatekeeper", _no_value, reader=_field("severity"), compared_as="severity"
    ),
    _BuiltinColumn(
        "failed_rules", "failed rules", _no_value, reader=_failed_rules, tables=False
    ),
    _BuiltinColumn(
        "answer_kind", "answer kind", _no_value, reader=_from_result("answer_kind"), tables=False
    ),
    _BuiltinColumn(
        "final_answer", "final answer", _no_value, reader=_from_result("final_answer"),
        tables=False,
    ),
    _BuiltinColumn("rounds", "rounds", _no_value, str, compare=False, reader=_field("rounds")),
    _BuiltinColumn(
        "tokens", "tokens", _no_value, reader=_tokens,
        shown=lambda entry: tokens_text(_summary(entry)),
        like_with_like=lambda entry: split_tokens_text(_summary(entry)), unrecorded=True,
    ),
    _BuiltinColumn(
        "agreement", "agree", _no_value, compare=False, reader=_agreement,
        shown=lambda entry: str(_summary(entry).get("agreement", "1/1")),
    ),
    _BuiltinColumn(
        "reference", "vs reference", _no_value, compare=False, reader=_reference,
    ),
    _BuiltinColumn(
        "checks", "checks", _no_value, compare=False, reader=_checks, shown=_checks_text,
        look="checks", sorter=_checks_sort,
    ),
)  # fmt: skip
"""The plugin's columns, in table order (the added ones go before the last, ``checks``, which
sums the row up): ``failed_rules``, ``answer_kind`` and ``final_answer``
are compared with the baseline but too long for a cell; ``agree`` shows when a scenario ran
several samples; ``vs reference``, for a recorded scenario, the model's evidence against the
built-in reference agent's on the same question and world
(:func:`~pytest_diageval.agents.reference.yardstick.evidence_recall`)."""

BUILTIN_NAMES = frozenset(column.name for column in BUILTIN_COLUMNS)
RESERVED_NAMES = BUILTIN_NAMES | {"id", "scenario", "status", "title", "tags", "columns"}
"""Names an added column cannot take: the built-in columns and the page's own cells."""


# --------------------------------------------------------------------------- registered checks


@dataclass(frozen=True)
class _CheckColumn(ReportColumn):
    """A registered ``expect`` key: its outcome in each scenario that sets it."""

    def read(self, entry: Entry) -> Any:
        for record in entry.get("check_results") or []:
            if record.get("name") == self.name:
                return record.get("outcome")
        return MISSING


_OUTCOMES = {"passed": "pass", "failed": "FAIL", "skipped": "skip"}


def _outcome_text(outcome: Any) -> str:
    return _OUTCOMES.get(outcome, cell_text(outcome))


def _check_value(ctx: ColumnContext) -> Any:  # the outcome comes from the check's own item
    return MISSING


def check_columns(entries: Iterable[Entry], taken: Iterable[str] = ()) -> list[ReportColumn]:
    """A column per registered (not built-in) ``expect`` key that ran in any of ``entries``,
    in the order first seen; a key whose name an added column has is left to that column."""
    names: dict[str, None] = {}
    skip = set(taken) | BUILTIN_NAMES
    for entry in entries:
        for record in entry.get("check_results") or []:
            name = record.get("name")
            if isinstance(name, str) and name not in EXPECT_KEYS and name not in skip:
                names.setdefault(name)
    return [_CheckColumn(name, name, _check_value, _outcome_text) for name in names]


def is_check_column_key(key: str) -> bool:
    """Whether an item's ``expect`` key is a registered check, hence a column."""
    return key not in EXPECT_KEYS


# --------------------------------------------------------------------------- the run's columns


_COLUMNS_KEY = pytest.StashKey[tuple[ReportColumn, ...]]()


def report_columns(config: pytest.Config, *, final: bool = True) -> tuple[ReportColumn, ...]:
    """The columns ``conftest.py`` files and plugins add (``pytest_diageval_report_columns``);
    a :class:`ReportColumnError` names a column that is not a ReportColumn, or a name taken
    twice or by a built-in column. ``final``: asked once collection is over, kept for the run
    (while collecting, a sub-folder's ``conftest.py`` may still add one)."""
    if _COLUMNS_KEY in config.stash:
        return config.stash[_COLUMNS_KEY]
    added: list[ReportColumn] = []
    for answer in config.hook.pytest_diageval_report_columns(config=config):
        for column in answer or ():
            if not isinstance(column, ReportColumn):
                raise ReportColumnError(
                    f"pytest_diageval_report_columns returned {column!r}: each item must be a"
                    " pytest_diageval.ReportColumn"
                )
            if column.name in RESERVED_NAMES or any(c.name == column.name for c in added):
                raise ReportColumnError(
                    f"report column {column.name!r} is already a column (built-in: "
                    f"{', '.join(sorted(RESERVED_NAMES))}; or added twice): choose another name"
                )
            added.append(column)
    if final:
        config.stash[_COLUMNS_KEY] = tuple(added)
    return tuple(added)


def column_values(columns: Sequence[ReportColumn], ctx: ColumnContext) -> dict[str, Any]:
    """Each added column's value for one run, as it goes into the row. A ``value`` that raises
    or gives something JSON cannot hold is written as that error in the cell, with a warning:
    a column of one's own never stops the scenario's checks."""
    values: dict[str, Any] = {}
    for column in columns:
        try:
            value = column.value(ctx)
            json.dumps(value)
        except Exception as error:  # a user's function: whatever it raises is reported
            what = f"{type(error).__name__}: {error}"
            value = f"error: {what}"
            warnings.warn(
                pytest.PytestWarning(
                    f"report column {column.name!r} of scenario {ctx.scenario.scenario_id!r}:"
                    f" value(ctx) failed ({what}); its value must be JSON (str, int, float,"
                    " bool, None, list, dict)"
                ),
                stacklevel=2,
            )
        values[column.name] = value
    return values


def columns_of(entries: Sequence[Entry], added: Sequence[ReportColumn] = ()) -> list[ReportColumn]:
    """The columns a table of ``entries`` shows, in order: the built-in ones, then the added
    ones (``added``, then any a row holds that ``added`` does not know: a column of a
    ``conftest.py`` only an xdist worker loaded) and the registered checks, then ``checks``,
    the row's sum; a column no entry has a value for is left out."""
    known = {column.name for column in added}
    unknown: dict[str, None] = {}
    for entry in entries:
        values = _summary(entry).get("columns")
        if isinstance(values, Mapping):
            unknown.update(dict.fromkeys(name for name in values if name not in known))
    extra = [ReportColumn(name, name, _no_value) for name in unknown if name not in RESERVED_NAMES]
    *first, last = BUILTIN_COLUMNS
    every = [*first, *added, *extra]
    every += check_columns(entries, [column.name for column in every])
    every.append(last)
    return [column for column in every if any(column.read(e) is not MISSING for e in entries)]
