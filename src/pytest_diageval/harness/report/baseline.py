"""Compare this run with a baseline: a previous ``--diageval-report`` JSON file.

The review of a prompt change is "what moved, and why": per scenario, the verdict, score,
gatekeeper severity, failed rules, answer kind, final answer and tokens of the baseline next to
this run's. Tokens are compared as totals; where a page shows both sides it shows them in one
shape (``prompt+completion`` when both runs split them, else both totals), and a changed final
answer is shown as a diff (:func:`answer_diff`).
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

__all__ = [
    "COMPARED_FIELDS",
    "BaselineError",
    "Comparison",
    "FieldChange",
    "answer_diff",
    "comparable_values",
    "compare_reports",
    "load_baseline",
    "scenario_tokens",
    "split_tokens_text",
    "token_total",
    "tokens_text",
]

COMPARED_FIELDS: dict[str, str] = {
    "verdict": "verdict",
    "score": "score",
    "severity": "severity",
    "failed_rules": "failed rules",
    "answer_kind": "answer kind",
    "final_answer": "final answer",
    "tokens": "tokens",
}
"""Field name in the comparison → its label for people."""

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
    shapes: list[tuple[str, Any, type]] = [
        (f"{at}.summary", entry.get("summary"), Mapping),
        (f"{at}.result", entry.get("result"), Mapping),
    ]
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
    return "—" if count is None else str(count)


def comparable_values(record: Mapping[str, Any]) -> dict[str, Any]:
    """The compared fields of one scenario entry of a report."""
    summary = record.get("summary") or {}
    result = record.get("result") or {}
    return {
        "verdict": summary.get("verdict"),
        "score": summary.get("score"),
        "severity": summary.get("severity"),
        "failed_rules": _failed_rules(result.get("rounds") or []),
        "answer_kind": result.get("answer_kind"),
        "final_answer": result.get("final_answer"),
        "tokens": scenario_tokens(summary),
    }


def _failed_rules(rounds: Sequence[Mapping[str, Any]]) -> list[str]:
    # Every round's: a rule that failed in round 1 and was fixed by the retry still moved.
    rules: list[str] = []
    for round_data in rounds:
        for rule in (round_data.get("gatekeeper") or {}).get("failed_rules") or []:
            if rule not in rules:
                rules.append(rule)
    return rules


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

    @property
    def label(self) -> str:
        return COMPARED_FIELDS[self.field]

    def text(self) -> str:
        if self.field == "final_answer":  # the page shows the diff; a line has no room for it
            return f"{self.label} changed"
        return f"{self.label} {_shown(self.before)} → {_shown(self.after)}"


def _shown(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, list):
        return "[" + ", ".join(str(item) for item in value) + "]"
    return str(value)


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
    current: Mapping[str, Any], baseline: Mapping[str, Any], baseline_name: str
) -> Comparison:
    """Compare two report dicts (``--diageval-report`` shape) scenario by scenario.

    Tokens count as a change only when both runs recorded them: a baseline from before
    token reporting must not mark every scenario changed.
    """
    now = {entry["id"]: entry for entry in current.get("scenarios", [])}
    before = {entry["id"]: entry for entry in baseline.get("scenarios", [])}
    changes: dict[str, list[FieldChange]] = {}
    for key in sorted(now.keys() & before.keys()):
        old, new = comparable_values(before[key]), comparable_values(now[key])
        moved = [
            _change(name, old[name], new[name], before[key], now[key])
            for name in COMPARED_FIELDS
            if old[name] != new[name] and not _unrecorded_tokens(name, old[name], new[name])
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
    name: str, old: Any, new: Any, old_entry: Mapping[str, Any], new_entry: Mapping[str, Any]
) -> FieldChange:
    if name != "tokens":
        return FieldChange(name, old, new)
    # Like with like: prompt+completion against prompt+completion, else total against total.
    old_split = split_tokens_text(old_entry.get("summary") or {})
    new_split = split_tokens_text(new_entry.get("summary") or {})
    if old_split is not None and new_split is not None:
        return FieldChange(name, old, new, old_split, new_split)
    return FieldChange(name, old, new, str(old), str(new))


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


def _unrecorded_tokens(name: str, old: Any, new: Any) -> bool:
    return name == "tokens" and (old is None or new is None)
