"""The audit trail: an embedded SQLite store (stdlib ``sqlite3``).

Three tables, as the seeds name them: ``diagnosis_session``, ``tool_invocation`` and
``agent_step``. ``self_evaluation`` is a container of channels (``rule_evaluation``,
``verifier_evaluation``, …); a channel is replaced on its own with read-modify-write inside
``BEGIN IMMEDIATE``, so concurrent writers of different channels never lose each other.

Invocation ids are SQLite ``INTEGER PRIMARY KEY`` values: 1, 2, 3 … in call order in a fresh
store, which is what makes recorded requests (that name those ids) byte-identical.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from pytest_diageval.core.contract.contracts import RetrievalDetails, ToolInvocation

__all__ = ["SELF_EVALUATION_CHANNELS", "Store", "StoreError", "stable_json"]

SELF_EVALUATION_CHANNELS = ("rule_evaluation", "verifier_evaluation", "scope_contract")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS diagnosis_session (
    id TEXT PRIMARY KEY,
    query TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'running',
    step_count INTEGER NOT NULL DEFAULT 0,
    tool_call_count INTEGER NOT NULL DEFAULT 0,
    self_evaluation TEXT,
    final_verdict TEXT,
    final_answer TEXT,
    error_message TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tool_invocation (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES diagnosis_session(id),
    round INTEGER NOT NULL,
    tool_name TEXT NOT NULL,
    input_params TEXT NOT NULL,
    duration_ms INTEGER NOT NULL,
    success INTEGER NOT NULL,
    error_message TEXT,
    output_preview TEXT,
    output_truncated INTEGER NOT NULL DEFAULT 0,
    retrieval_details TEXT
);
CREATE INDEX IF NOT EXISTS tool_invocation_session ON tool_invocation(session_id, id);
CREATE TABLE IF NOT EXISTS agent_step (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES diagnosis_session(id),
    round INTEGER NOT NULL,
    agent TEXT NOT NULL,
    step_index INTEGER NOT NULL,
    input TEXT NOT NULL,
    output TEXT NOT NULL
);
"""


@functools.cache
def _empty_store_image() -> bytes:
    """The pages of an in-memory store with the schema and no rows."""
    with closing(sqlite3.connect(":memory:")) as conn:
        conn.executescript(_SCHEMA)
        return conn.serialize()


class StoreError(RuntimeError):
    """A store operation that cannot be carried out (unknown session, bad channel)."""


def stable_json(value: Any) -> str:
    """The one JSON serialisation of the project: fixed key order, real Chinese characters."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


class Store:
    """A SQLite file (WAL mode) or ``:memory:``; safe to share between threads."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        # isolation_level=None: we issue BEGIN ourselves, so BEGIN IMMEDIATE really is one.
        self._conn = sqlite3.connect(
            self.path, timeout=30.0, isolation_level=None, check_same_thread=False
        )
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        if self.path != ":memory:":
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.executescript(_SCHEMA)
        elif hasattr(self._conn, "deserialize"):  # SQLite built with its serialize API
            # A copy of an empty store's pages: about a tenth of what parsing the schema for
            # every scenario's store costs.
            self._conn.deserialize(_empty_store_image())
        else:
            self._conn.executescript(_SCHEMA)
        self._conn.execute("PRAGMA busy_timeout=30000")

    def close(self) -> None:
        self._conn.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    # ------------------------------------------------------------------ sessions

    def create_session(self, session_id: str, query: str, now: str) -> None:
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO diagnosis_session (id, query, created_at, updated_at)"
                " VALUES (?, ?, ?, ?)",
                (session_id, query, now, now),
            )

    def get_session(self, session_id: str) -> dict[str, Any]:
        row = self._fetchone("SELECT * FROM diagnosis_session WHERE id = ?", (session_id,))
        if row is None:
            raise StoreError(f"no diagnosis_session with id {session_id!r}")
        session = dict(row)
        raw = session["self_evaluation"]
        session["self_evaluation"] = None if raw is None else json.loads(raw)
        return session

    def finish_session(
        self,
        session_id: str,
        *,
        status: str,
        now: str,
        final_verdict: str | None = None,
        final_answer: str | None = None,
        error_message: str | None = None,
    ) -> None:
        with self._transaction() as conn:
            cursor = conn.execute(
                "UPDATE diagnosis_session SET status = ?, final_verdict = ?, final_answer = ?,"
                " error_message = ?, updated_at = ? WHERE id = ?",
                (status, final_verdict, final_answer, error_message, now, session_id),
            )
            self._require_row(cursor, session_id)

    def update_self_evaluation(self, session_id: str, channel: str, value: Any) -> None:
        """Replace one channel of ``self_evaluation``; every other channel stays."""
        self.modify_self_evaluation(session_id, channel, lambda _old: value)

    def modify_self_evaluation(
        self, session_id: str, channel: str, update: Callable[[Any], Any]
    ) -> None:
        """Read-modify-write one channel: ``update(old value or None)`` gives the new value.

        Read and write happen inside one ``BEGIN IMMEDIATE`` transaction, so concurrent
        writers never lose each other's updates. The container object is created only when
        the column is NULL; it is never replaced whole once it exists.
        """
        self.modify_self_evaluation_channels(session_id, {channel: update})

    def modify_self_evaluation_channels(
        self, session_id: str, updates: Mapping[str, Callable[[Any], Any]]
    ) -> None:
        """:meth:`modify_self_evaluation` of several channels, in one transaction: the
        container is read, parsed and written once (it holds every round's audit record)."""
        for channel in updates:
            if channel not in SELF_EVALUATION_CHANNELS:
                raise StoreError(
                    f"unknown self_evaluation channel {channel!r};"
                    f" allowed: {', '.join(SELF_EVALUATION_CHANNELS)}"
                )
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT self_evaluation FROM diagnosis_session WHERE id = ?", (session_id,)
            ).fetchone()
            if row is None:
                raise StoreError(f"no diagnosis_session with id {session_id!r}")
            container = {} if row[0] is None else json.loads(row[0])
            for channel, update in updates.items():
                container[channel] = update(container.get(channel))
            conn.execute(
                "UPDATE diagnosis_session SET self_evaluation = ? WHERE id = ?",
                (stable_json(container), session_id),
            )

    # ------------------------------------------------------------------ tool invocations

    def insert_invocation(
        self,
        *,
        session_id: str,
        round: int,
        tool_name: str,
        input_params: dict[str, Any],
        duration_ms: int,
        success: bool,
        error_message: str | None,
        output_preview: str | None,
        output_truncated: bool,
        retrieval_details: RetrievalDetails | None,
    ) -> int:
        """Write one evidence row, bump the session's ``tool_call_count``, return the id."""
        details = None if retrieval_details is None else retrieval_details.model_dump_json()
        with self._transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO tool_invocation (session_id, round, tool_name, input_params,"
                " duration_ms, success, error_message, output_preview, output_truncated,"
                " retrieval_details) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    round,
                    tool_name,
                    stable_json(input_params),
                    duration_ms,
                    int(success),
                    error_message,
                    output_preview,
                    int(output_truncated),
                    details,
                ),
            )
            self._bump(conn, session_id, "tool_call_count")
            assert cursor.lastrowid is not None
            return cursor.lastrowid

    def get_invocation(self, invocation_id: int) -> ToolInvocation | None:
        row = self._fetchone("SELECT * FROM tool_invocation WHERE id = ?", (invocation_id,))
        return None if row is None else _invocation_from_row(row)

    def list_invocations(self, session_id: str) -> list[ToolInvocation]:
        rows = self._fetchall(
            "SELECT * FROM tool_invocation WHERE session_id = ? ORDER BY id", (session_id,)
        )
        return [_invocation_from_row(row) for row in rows]

    # ------------------------------------------------------------------ agent steps

    def add_agent_step(
        self, session_id: str, *, round: int, agent: str, input: Any, output: Any
    ) -> int:
        """Persist one agent model step and bump the session's ``step_count``."""
        with self._transaction() as conn:
            (index,) = conn.execute(
                "SELECT COUNT(*) FROM agent_step WHERE session_id = ?", (session_id,)
            ).fetchone()
            cursor = conn.execute(
                "INSERT INTO agent_step (session_id, round, agent, step_index, input, output)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, round, agent, index, stable_json(input), stable_json(output)),
            )
            self._bump(conn, session_id, "step_count")
            assert cursor.lastrowid is not None
            return cursor.lastrowid

    def list_agent_steps(self, session_id: str) -> list[dict[str, Any]]:
        rows = self._fetchall(
            "SELECT * FROM agent_step WHERE session_id = ? ORDER BY step_index", (session_id,)
        )
        steps = []
        for row in rows:
            step = dict(row)
            step["input"] = json.loads(step["input"])
            step["output"] = json.loads(step["output"])
            steps.append(step)
        return steps

    # ------------------------------------------------------------------ helpers

    # Reads take the lock too: the connection is shared, and a read must never see another
    # thread's transaction half done.
    def _fetchone(self, sql: str, params: tuple[Any, ...]) -> sqlite3.Row | None:
        with self._lock:
            row: sqlite3.Row | None = self._conn.execute(sql, params).fetchone()
            return row

    def _fetchall(self, sql: str, params: tuple[Any, ...]) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def _bump(self, conn: sqlite3.Connection, session_id: str, column: str) -> None:
        cursor = conn.execute(
            f"UPDATE diagnosis_session SET {column} = {column} + 1 WHERE id = ?", (session_id,)
        )
        self._require_row(cursor, session_id)

    @staticmethod
    def _require_row(cursor: sqlite3.Cursor, session_id: str) -> None:
        if cursor.rowcount == 0:
            raise StoreError(f"no diagnosis_session with id {session_id!r}")


def _invocation_from_row(row: sqlite3.Row) -> ToolInvocation:
    details = row["retrieval_details"]
    return ToolInvocation(
        id=row["id"],
        session_id=row["session_id"],
        round=row["round"],
        tool_name=row["tool_name"],
        input_params=json.loads(row["input_params"]),
        duration_ms=row["duration_ms"],
        success=bool(row["success"]),
        error_message=row["error_message"],
        output_preview=row["output_preview"],
        output_truncated=bool(row["output_truncated"]),
        retrieval_details=(
            None if details is None else RetrievalDetails.model_validate_json(details)
        ),
    )
