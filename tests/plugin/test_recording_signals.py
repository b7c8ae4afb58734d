"""Ctrl-C (SIGINT) or SIGTERM in the middle of a recording (issue 41, item 7): the committed
cassette is left byte for byte, no staging file is left beside it, the run says so, and the
next run records again. A real pytest process records against the local fake server of
tests/support, which holds one answer back until the signal has been sent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from support.fake_openai_server import FakeOpenAIServer, ReceivedRequest

if TYPE_CHECKING:
    from conftest import ScenarioDir

SCENARIO = "scenarios/memory.yaml"
CASSETTE = "scenarios/cassettes/memory.yaml"
COMMITTED = "# committed cassette, must survive\ninteractions: []\nversion: 1\n"


class HoldingServer(FakeOpenAIServer):
    """The fake server, but request number ``hold`` (1-based) waits until :attr:`release`
    is set; :attr:`reached` says that it arrived."""

    def __init__(self, script: list[dict[str, Any]], hold: int) -> None:
        super().__init__(script)
        self.hold = hold
        self.arrived = 0
        self.reached = threading.Event()
        self.release = threading.Event()

    def answer(self, received: ReceivedRequest) -> tuple[int, dict[str, str], bytes]:
        self.arrived += 1
        if self.arrived == self.hold:
            self.reached.set()
            self.release.wait(timeout=60)
        return super().answer(received)


def _recording(root: Path, base_url: str, mode: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--junitxml", "junit.xml"]
    endpoint = ["--diageval-base-url", base_url, "--diageval-model", "m"]
    return subprocess.Popen(
        [*command, f"--diageval-record={mode}", *endpoint],
        cwd=root,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("mode", ["rewrite", "once"])
def test_a_recording_stopped_by_a_signal_leaves_the_committed_cassette_and_says_so(
    pytester: pytest.Pytester, scenarios: ScenarioDir, signum: signal.Signals, mode: str
) -> None:
    data = scenarios.full()
    script = scenarios.script(data)
    data["llm"] = {"cassette": "cassettes/memory.yaml"}
    scenarios.write(SCENARIO, data)
    cassette = pytester.path / CASSETTE
    if mode != "once":  # once records a cassette that does not exist yet
        scenarios.write_text(CASSETTE, COMMITTED)

    with HoldingServer(script, hold=3) as server:  # the executor's second request
        process = _recording(pytester.path, server.base_url, mode)
        try:
            assert server.reached.wait(timeout=60), "the recording never reached request 3"
            process.send_signal(signum)
            output, _ = process.communicate(timeout=60)
        finally:
            server.release.set()
            process.kill()

    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    how = "SIGTERM" if signum == signal.SIGTERM else "Ctrl-C (SIGINT)"
    said = f"the recording of {cassette} was stopped by {how}: the committed cassette is left"
    assert said in " ".join(output.split()), output
    if mode == "once":
        assert not cassette.exists()
    else:
        assert cassette.read_text("utf-8") == COMMITTED
    assert sorted(p.name for p in cassette.parent.iterdir()) == (
        [] if mode == "once" else ["memory.yaml"]
    )
    assert (pytester.path / "junit.xml").is_file()

    # The next run records again.
    with FakeOpenAIServer(script) as server:
        again = _recording(pytester.path, server.base_url, "rewrite" if mode != "once" else "once")
        output, _ = again.communicate(timeout=120)
    assert again.returncode == pytest.ExitCode.OK, output
    assert "interactions:" in cassette.read_text("utf-8")
    assert len(server.received) == 4
