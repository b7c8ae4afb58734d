"""``--diageval-record=stale``: re-record exactly the scenarios whose cassettes went stale.

After collection every cassette scenario is replayed once (offline, as in mode ``none``); a
replay that fails because the cassette no longer matches the run (a stale request, recorded
interactions left unplayed) or a cassette that does not exist marks the scenario for
re-recording (``rewrite``, staged: a failed recording leaves the committed cassette). The
others keep their replay, which their items then check: nothing is run twice. Before the
first request goes out, the run says how many scenarios, requests and tokens (as last
recorded, from the cassettes' ``usage``) the re-recording will cost.

A normal run that meets stale cassettes ends with the one command that does this.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_diageval.harness.cassettes.cassette_file import holds_recording
from pytest_diageval.harness.cassettes.cassette_session import (
    MissingCassetteError,
    StaleCassetteError,
    UnplayedInteractionsError,
)
from pytest_diageval.harness.cassettes.rerecord import display_path, recorded_totals
from pytest_diageval.harness.items import ScenarioItem, ScenarioNode

__all__ = ["STALE_MODE", "StaleRerecording", "is_stale_error"]

STALE_MODE = "stale"


def is_stale_error(error: BaseException | None) -> bool:
    """Whether a run stopped because its cassette no longer fits it (or does not exist)."""
    return isinstance(error, StaleCassetteError | UnplayedInteractionsError | MissingCassetteError)


class StaleRerecording:
    """The plugin object of one ``--diageval-record=stale`` run."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        nodes = list(
            dict.fromkeys(
                item.scenario_node
                for item in items
                if isinstance(item, ScenarioItem) and item.scenario_node.cassette is not None
            )
        )
        stale = [node for node in nodes if self._needs_recording(node)]
        for node in stale:
            node.forget_run()
            node.record_mode = "rewrite"
        self._announce(stale, len(nodes))

    def _needs_recording(self, node: ScenarioNode) -> bool:
        assert node.cassette is not None
        if not holds_recording(node.cassette):
            return True
        return is_stale_error(node.run_error())

    def _announce(self, stale: list[ScenarioNode], total: int) -> None:
        reporter: Any = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        if not stale:
            reporter.write_line(
                f"diageval: none of the {total} cassette scenario(s) is stale: nothing to record"
            )
            return
        costs = [recorded_totals(node.cassette) for node in stale if node.cassette is not None]
        requests, tokens = sum(c[0] for c in costs), sum(c[1] for c in costs)
        reporter.write_line(
            f"diageval: re-recording {len(stale)} of {total} cassette scenario(s):"
            f" {requests} request(s) and {tokens} token(s) as last recorded"
        )
        for node, (count, used) in zip(stale, costs, strict=True):
            assert node.cassette is not None
            what = f"{count} request(s), {used} token(s)" if count else "no cassette yet"
            reporter.write_line(f"  {node.scenario_id}: {display_path(node.cassette)} ({what})")
