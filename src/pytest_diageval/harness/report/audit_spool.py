"""Audit records kept on disk, not in memory, until the JSON report is written.

A suite of thousands of scenarios with ``--diageval-report`` would otherwise hold every full
audit trail (tens of kilobytes each) until the session ends. Each record is written as one
JSON document to an anonymous temporary file as it arrives; the report reads them back one
at a time and streams itself to its path, byte for byte what
``json.dumps(report, ensure_ascii=False, indent=2, sort_keys=True)`` of the whole would be.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from pytest_diageval.harness.outputs import replacing

__all__ = ["AuditSpool", "write_report"]

REPORT_VERSION = 1


class AuditSpool:
    """Audit records by scenario id, on disk; a later record of the same id replaces it."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._where: dict[str, tuple[int, int]] = {}
        self._held: dict[str, dict[str, Any]] = {}
        """Records the temporary file could not take (a full disk), kept in memory."""

    def __contains__(self, scenario_id: str) -> bool:
        return scenario_id in self._where or scenario_id in self._held

    def __len__(self) -> int:
        return len(self._where) + len(self._held)

    def add(self, scenario_id: str, record: dict[str, Any]) -> None:
        """Keep ``record``: on disk, or in memory when the temporary folder cannot take it
        (a full ``TMPDIR`` must cost memory, not the report, and never the session)."""
        data = json.dumps(record, ensure_ascii=False).encode("utf-8")
        try:
            if self._file is None:
                # Unbuffered: a write that fails says so now, and leaves nothing to flush.
                self._file = tempfile.TemporaryFile(buffering=0)  # noqa: SIM115 (close())
            offset = self._file.seek(0, 2)
            if self._file.write(data) != len(data):
                raise OSError("short write")
        except OSError:
            self._held[scenario_id] = record
            self._where.pop(scenario_id, None)
            return
        self._held.pop(scenario_id, None)
        self._where[scenario_id] = (offset, len(data))

    def get(self, scenario_id: str) -> dict[str, Any] | None:
        if scenario_id in self._held:
            return self._held[scenario_id]
        where = self._where.get(scenario_id)
        if where is None or self._file is None:
            return None
        self._file.seek(where[0])
        record: dict[str, Any] = json.loads(self._file.read(where[1]).decode("utf-8"))
        return record

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
        self._file = None
        self._where.clear()
        self._held.clear()


def write_report(path: Path, scenarios: Iterable[dict[str, Any]]) -> None:
    """``{"scenarios": [...], "version": 1}`` written one scenario at a time.

    The bytes equal ``json.dumps(..., ensure_ascii=False, indent=2, sort_keys=True) + "\\n"``
    of the whole report ("scenarios" sorts before "version"), without ever holding it.
    """
    with replacing(path) as out:  # a run killed while writing leaves the previous report
        out.write('{\n  "scenarios": [')
        count = 0
        for scenario in scenarios:
            text = json.dumps(scenario, ensure_ascii=False, indent=2, sort_keys=True)
            out.write(("," if count else "") + "\n" + textwrap.indent(text, " " * 4))
            count += 1
        out.write("\n  ]" if count else "]")
        out.write(f',\n  "version": {REPORT_VERSION}\n}}\n')
