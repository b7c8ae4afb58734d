"""Compare this run with a baseline: a previous ``--diageval-report`` JSON file.

The review of a prompt change is "what moved, and why": per scenario, every column of
:mod:`.columns` that compares (the verdict, score, gatekeeper severity, failed rules, answer
kind, final answer and tokens; a column a ``conftest.py`` or plugin added; a registered check's
outcome) of the baseline next to this run's. Tokens are compared as totals; where a page shows
both sides it shows them in one shape (``prompt+completion`` when both runs split them, else
both totals), and a changed final answer is shown as a diff (:func:`answer_diff`).
The terminal summary and the HTML report both read one :class:`Comparison`, built from the
same report data the ``--diageval-report`` JSON holds, so the two can never disagree.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

from pytest_diageval.harness.report.columns import (
    BUILTIN_COLUMNS,
    MISSING,
    ReportColumn,
    columns_of,
    compared_text,
    failed_rules,
    scenario_tokens,
    split_tokens_text,
    token_total,
    tokens_text,
)

__all__ = [
    "COMPARED_FIELDS",
    "BaselineError",
    "Comparison",
    "FieldChange",
    "answer_diff",
    "comparable_values",
    "compare_reports",
    "failed_rules",
    "load_baseline",
    "scenario_tokens",
    "split_tokens_text",
    "token_total",
    "tokens_text",
]

COMPARED_FIELDS: dict[str, str] = {
    column.name: column.label for column in BUILTIN_COLUMNS if column.compare
}
"""The built-in compared columns: name → its label for people (an added column with
``compare`` is compared too)."""

REPORT_VERSION = 1
MISSING_LISTED = 5
"""More baseline scenarios than this missing from the run are counted, not listed."""


class BaselineError(Exception):
    """The baseline file cannot be read as a ``--diageval-report`` JSON file."""


def load_baseline(path: Path) -> dict[str, Any]:
    """The report in ``path``; :class:`BaselineError` names the file and what is wrong."""
    where = f"--diageval-baseline {path}"
    if path.exists() and not path.is_file():  # /dev/zero would be read for ever
        raise BaselineError(f"{where}: is not a regular file; give a file that {_WROTE}")
    try:
        text = path.read_text("utf-8")
    except OSError as exc:
        raise BaselineError(f"{where}: cannot read the file ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise BaselineError(
            f"{where}: is not UTF-8 text (byte {exc.start}: {exc.reason}); give a file that"
            f" {_WROTE}"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(
            f"{where}:{exc.lineno}:{exc.colno}: not JSON ({exc.msg}); give a file that {_WROTE}"
        ) from None
    except RecursionError:
        raise BaselineError(
            f"{where}: its JSON is nested too deeply to read; give a file that {_WROTE}"
        ) from None
    except ValueError as exc:  # a number of more digits than Python converts
        raise BaselineError(f"{where}: {exc}; give a file that {_WROTE}") from None
    _check_shape(data, where)
    return data  # type: ignore[no-any-return]


_WROTE = "--diageval-report wrote"


def _check_shape(data: Any, where: str) -> None:
    if not isinstance(data, dict) or "scenarios" not in data:
        raise BaselineError(
            f"{where}: not a diageval report (expected an object with 'version' and "
            "'scenarios'); give a file that --diageval-report wrote"
        )
    if data.get("version") != REPORT_VERSION:
        raise BaselineError(
            f"{where}: report version {data.get('version')!r} is not supported "
            f"(allowed: {REPORT_VERSION})"
        )
    scenarios = data["scenarios"]
    if not isinstance(scenarios, list):
        raise BaselineError(f"{where}: 'scenarios' must be a list")
    for index, entry in enumerate(scenarios):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise BaselineError(f"{where}: scenarios[{index}] has no string 'id'")
        problem = _entry_problem(entry, f"scenarios[{index}]")
        if problem is not None:
            raise BaselineError(f"{where}: {problem}; give a file that {_WROTE}")


def _entry_problem(entry: Mapping[str, Any], at: str) -> str | None:
    """The first value :func:`comparable_values` reads that has the wrong shape (``summary``
    a string, say), or None: a baseline is checked whole before any scenario runs."""
    summary = entry.get("summary")
    shapes: list[tuple[str, Any, type]] = [
        (f"{at}.summary", summary, Mapping),
        (f"{at}.result", entry.get("result"), Mapping),
        (f"{at}.checks", entry.get("checks"), Mapping),
        (f"{at}.check_results", entry.get("check_results"), list),
    ]
    if isinstance(summary, Mapping):
        shapes.append((f"{at}.summary.columns", summary.get("columns"), Mapping))
    for number, record in enumerate(entry.get("check_results") or []):
        shapes.append((f"{at}.check_results[{number}]", record, Mapping))
    result = entry.get("result")
    if isinstance(result, Mapping):
        shapes.append((f"{at}.result.rounds", result.get("rounds"), list))
        for number, data in enumerate(result.get("rounds") or []):
            shapes.append((f"{at}.result.rounds[{number}]", data, Mapping))
            gatekeeper = data.get("gatekeeper") if isinstance(data, Mapping) else None
            name = f"{at}.result.rounds[{number}].gatekeeper"
            shapes.append((name, gatekeeper, Mapping))
            if isinstance(gatekeeper, Mapping):
                rules = gatekeeper.get("failed_rules")
                shapes.append((f"{name}.failed_rules", rules, list))
    for name, value, kind in shapes:
        if value is not None and not isinstance(value, kind):
            wanted = "a mapping" if kind is Mapping else "a list"
            return f"{name} must be {wanted}; got {type(value).__name__}"
    return None


def comparable_values(
    record: Mapping[str, Any], columns: Sequence[ReportColumn] = BUILTIN_COLUMNS
) -> dict[str, Any]:
    """The compared values of one scenario entry of a report, by column name (the columns
    with ``compare``; :data:`MISSING` where the entry has none)."""
    return {column.name: column.compared_value(record) for column in columns if column.compare}


@dataclass(frozen=True)
class FieldChange:
    """One compared field whose value differs from the baseline's."""

    field: str
    before: Any
    after: Any
    before_text: str | None = dataclass_field(default=None, compare=False)
    after_text: str | None = dataclass_field(default=None, compare=False)
    """How a page shows the two values side by side, in one shape (tokens: both
    ``prompt+completion`` or both totals); None: as :meth:`text` shows them."""
    column: ReportColumn | None = dataclass_field(default=None, compare=False, repr=False)
    """The column compared (its label and how it writes a value); None: a built-in one."""

    @property
    def label(self) -> str:
        if self.column is not None:
            return self.column.label
        return COMPARED_FIELDS.get(self.field, self.field)

    def text(self) -> str:
        if self.field == "final_answer":  # the page shows the diff; a line has no room for it
            return f"{self.label} changed"
        return f"{self.label} {self._shown(self.before)} → {self._shown(self.after)}"

    def _shown(self, value: Any) -> str:
        return _shown(value) if self.column is None else self.column.change_text(value)


def _shown(value: Any) -> str:
    return compared_text(value)


@dataclass(frozen=True)
class Comparison:
    """This run against the baseline, scenario by scenario."""

    baseline: str
    changes: dict[str, list[FieldChange]]
    """Scenarios in both runs whose compared fields differ (id → the differing fields)."""
    compared: int
    added: list[str]
    """Scenarios of this run the baseline does not have."""
    missing: list[str]
    """Scenarios of the baseline that this run did not run."""

    def is_changed(self, scenario_id: str) -> bool:
        return scenario_id in self.changes or scenario_id in self.added

    def field_change(self, scenario_id: str, name: str) -> FieldChange | None:
        return next((c for c in self.changes.get(scenario_id, []) if c.field == name), None)

    def terminal_lines(self) -> list[str]:
        changed = len(self.changes)
        lines = [
            f"changes since baseline {self.baseline}: {changed} of {self.compared} "
            f"compared scenario{'s' if self.compared != 1 else ''} changed"
        ]
        lines.extend(
            f"  {key}: " + "; ".join(change.text() for change in changes)
            for key, changes in sorted(self.changes.items())
        )
        lines.extend(f"  {key}: new (not in the baseline)" for key in self.added)
        if len(self.missing) > MISSING_LISTED:  # a narrower run (-k, -m, a path): keep it short
            lines.append(f"  {len(self.missing)} scenarios of the baseline not run now")
        else:
            lines.extend(f"  {key}: in the baseline, not run now" for key in self.missing)
        return lines


def compare_reports(
    current: Mapping[str, Any],
    baseline: Mapping[str, Any],
    baseline_name: str,
    added: Sequence[ReportColumn] = (),
) -> Comparison:
    """Compare two report dicts (``--diageval-report`` shape) scenario by scenario, column by
    column (:func:`~.columns.columns_of` both reports, with the ``added`` columns).

    A column counts as a change only where both runs have a value for it: a baseline from
    before token reporting, or before a column was added, must not mark every scenario changed.
    """
    now = {entry["id"]: entry for entry in current.get("scenarios", [])}
    before = {entry["id"]: entry for entry in baseline.get("scenarios", [])}
    columns = columns_of([*now.values(), *before.values()], added)
    changes: dict[str, list[FieldChange]] = {}
    for key in sorted(now.keys() & before.keys()):
        moved = [
            change
            for column in columns
            if (change := _change(column, before[key], now[key])) is not None
        ]
        if moved:
            changes[key] = moved
    return Comparison(
        baseline=baseline_name,
        changes=changes,
        compared=len(now.keys() & before.keys()),
        added=sorted(now.keys() - before.keys()),
        missing=sorted(before.keys() - now.keys()),
    )


def _change(
    column: ReportColumn, old_entry: Mapping[str, Any], new_entry: Mapping[str, Any]
) -> FieldChange | None:
    old, new = column.compared_value(old_entry), column.compared_value(new_entry)
    if old is MISSING or new is MISSING or old == new:
        return None
    texts = column.compared_texts(old_entry, new_entry)
    before_text, after_text = (None, None) if texts is None else texts
    return FieldChange(column.name, old, new, before_text, after_text, column)


def answer_diff(before: Any, after: Any) -> list[str]:
    """The unified diff (:mod:`difflib`) of two final answers, line by line; its first two
    lines name the sides (``--- baseline``, ``+++ this run``)."""
    return list(
        difflib.unified_diff(
            str(before or "").splitlines(),
            str(after or "").splitlines(),
            "baseline",
            "this run",
            lineterm="",
        )
    )
