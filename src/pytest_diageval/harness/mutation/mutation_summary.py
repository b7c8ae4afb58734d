"""The mutation summary: a terminal table per scenario and kind, survivors, JSON totals.

Registered by the plugin instead of the scenario reporter when ``--diageval-mutate`` is on.
Each mutant item's report carries a plain dict (``report.diageval_mutant``), so the
controller of a pytest-xdist run builds the same summary as a single process does.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_diageval.harness.checks.evidence_lines import table
from pytest_diageval.harness.mutation.mutant_items import mutant_payload, not_mutated_payload
from pytest_diageval.harness.mutation.mutants import KINDS
from pytest_diageval.harness.outputs import write_atomically

__all__ = ["OUTCOMES", "MutationReporter", "MutationSummary"]

OUTCOMES = ("killed", "survived", "equivalent", "error")
"""A mutant is *tried* when it is not equivalent: tried = killed + survived + error."""


def _counts(payloads: Iterable[dict[str, Any]]) -> dict[str, int]:
    outcomes = Counter(p["outcome"] for p in payloads)
    counts = {name: outcomes[name] for name in OUTCOMES}
    return {"tried": counts["killed"] + counts["survived"] + counts["error"], **counts}


def _kind_order(kind: str) -> int:
    return KINDS.index(kind) if kind in KINDS else len(KINDS)


@dataclass
class MutationSummary:
    """Every mutant's payload, by node id (a rerun item replaces its earlier payload)."""

    mutants: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, payload: dict[str, Any]) -> None:
        self.mutants[payload["nodeid"]] = payload

    def _groups(self) -> dict[tuple[str, str], list[dict[str, Any]]]:
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for payload in self.mutants.values():
            groups.setdefault((payload["scenario"], payload["kind"]), []).append(payload)
        return dict(sorted(groups.items(), key=lambda kv: (kv[0][0], _kind_order(kv[0][1]))))

    def by_kind(self) -> dict[str, dict[str, int]]:
        kinds = sorted({p["kind"] for p in self.mutants.values()}, key=_kind_order)
        return {k: _counts(p for p in self.mutants.values() if p["kind"] == k) for k in kinds}

    def survivors(self) -> list[dict[str, Any]]:
        return [p for _, p in sorted(self.mutants.items()) if p["outcome"] == "survived"]

    def table_lines(self) -> list[str]:
        header = ["scenario", "kind", "tried", "killed", "survived", "equivalent", "error"]
        rows = [
            [scenario, kind, *(str(v) for v in _counts(payloads).values())]
            for (scenario, kind), payloads in self._groups().items()
        ]
        return table(header, rows)

    def kind_lines(self) -> list[str]:
        header = ["kind", "tried", "killed", "survived", "equivalent", "error"]
        rows = [[kind, *(str(v) for v in c.values())] for kind, c in self.by_kind().items()]
        rows.append(["total", *(str(v) for v in _counts(self.mutants.values()).values())])
        return table(header, rows)

    def survivor_lines(self) -> list[str]:
        return [f"  {p['nodeid']}: {p['verdict']} — {p['change']}" for p in self.survivors()]

    def as_json(self) -> dict[str, Any]:
        by_scenario: dict[str, dict[str, dict[str, int]]] = {}
        for (scenario, kind), payloads in self._groups().items():
            by_scenario.setdefault(scenario, {})[kind] = _counts(payloads)
        return {
            "totals": _counts(self.mutants.values()),
            "by_kind": self.by_kind(),
            "by_scenario": by_scenario,
            "mutants": [payload for _, payload in sorted(self.mutants.items())],
        }


class MutationReporter:
    """Collects mutant payloads from reports and writes the summary once, on the controller."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.summary = MutationSummary()
        self.not_mutated: dict[str, dict[str, str]] = {}  # by node id: scenario and reason

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "call":
            payload = mutant_payload(item)
            if payload is not None:
                report.diageval_mutant = payload  # type: ignore[attr-defined]
            skipped = not_mutated_payload(item)
            if skipped is not None:
                report.diageval_not_mutated = skipped  # type: ignore[attr-defined]
                if report.skipped and isinstance(report.longrepr, tuple):
                    # The skip's place is the scenario file, not the line that skipped.
                    # (pytest itself puts None there for a skip mark: no line number)
                    place = (str(item.path), None, report.longrepr[2])
                    report.longrepr = place  # type: ignore[assignment]
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = getattr(report, "diageval_mutant", None)
        if payload is not None:
            self.summary.add(payload)
        skipped = getattr(report, "diageval_not_mutated", None)
        if skipped is not None:
            self.not_mutated[skipped["nodeid"]] = skipped

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.summary.mutants and not self.not_mutated:
            return
        write = terminalreporter.write_line
        terminalreporter.write_sep("=", "diageval mutation")
        if self.not_mutated:
            write(f"scenarios not mutated ({len(self.not_mutated)}):")
            for _, skipped in sorted(self.not_mutated.items()):
                write(f"  {skipped['scenario']}: {skipped['reason'].removeprefix('not mutated: ')}")
            if not self.summary.mutants:
                return
            write("")
        for line in self.summary.table_lines():
            write(line)
        write("")
        write("per kind (tried = killed + survived + error; equivalent mutants are not run):")
        for line in self.summary.kind_lines():
            write(line)
        survivors = self.summary.survivor_lines()
        write("")
        write(f"surviving mutants ({len(survivors)}):" if survivors else "surviving mutants: none")
        for line in survivors:
            write(line)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        target = self.config.getoption("diageval_report")
        if target is None or hasattr(self.config, "workerinput"):
            return
        mutation = self.summary.as_json()
        mutation["not_mutated"] = [
            {"scenario": p["scenario"], "reason": p["reason"]}
            for _, p in sorted(self.not_mutated.items())
        ]
        report = {"version": 1, "mode": "mutate", "mutation": mutation}
        text = json.dumps(report, ensure_ascii=False, indent=2, sort_keys=True)
        try:
            write_atomically(Path(target), text + "\n")
        except OSError as error:  # a full disk: said, and the run fails (no traceback)
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                message = f"--diageval-report {target}: cannot write the report: {error}"
                reporter.write_line(f"ERROR: {message}", red=True)
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
