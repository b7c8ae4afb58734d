"""A tiny OpenAI-compatible HTTP server on 127.0.0.1 for recording tests.

It listens on a free port in a background thread (stdlib ``http.server``) and answers
``POST /v1/chat/completions`` by handing the request to a :class:`ScriptedTransport`, so the
answers are the scripted model's, but they travel over a real socket: that is what a vcrpy
recording sees in a live run. Every request is kept with the headers it arrived with, which
lets a test prove that a canary API key really was sent (and then never reached a cassette).

``extra_headers`` are added to every response (e.g. ``Set-Cookie``, ``OpenAI-Organization``)
to test that response secrets are dropped; ``gzip=True`` compresses the answers when the
client accepts it, to test that cassettes keep decoded bodies. ``transient_errors`` maps a
request number (1-based, in arrival order) to an HTTP status answered instead of the script,
which the script does not see: a flaky server whose next attempt succeeds.
"""

from __future__ import annotations

import gzip as gzip_module
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

import httpx2

from pytest_diageval.agents.scripted.model import ScriptedTransport, ScriptError
from pytest_diageval.core.evidence.store import stable_json

__all__ = ["FakeOpenAIServer", "ReceivedRequest"]


@dataclass(frozen=True)
class ReceivedRequest:
    """One request as it arrived on the socket (header names lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class FakeOpenAIServer:
    """``with FakeOpenAIServer(script) as server: ... server.base_url ...``"""

    def __init__(
        self,
        script: Sequence[Mapping[str, Any]],
        *,
        extra_headers: Mapping[str, str] | None = None,
        gzip: bool = False,
        transient_errors: Mapping[int, int] | None = None,
    ) -> None:
        self.transport = ScriptedTransport(script)
        self.transient_errors = dict(transient_errors or {})
        self.extra_headers = dict(extra_headers or {})
        self.gzip = gzip
        self.received: list[ReceivedRequest] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        self._server.daemon_threads = True
        # Keep-alive connections from the client must not make shutdown wait for them.
        self._server.block_on_close = False
        # A short poll interval: stop() waits for the serving loop to notice the shutdown.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def answer(self, received: ReceivedRequest) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body for one request (serialised: the script is ordered)."""
        with self._lock:
            self.received.append(received)
            status = self.transient_errors.get(len(self.received))
            if status is not None:
                return _transient_error(status)
            request = httpx2.Request(
                received.method,
                f"http://127.0.0.1:{self.port}{received.path}",
                headers=received.headers,
                content=received.body,
            )
            try:
                response = self.transport.handle_request(request)
            except ScriptError as exc:
                error = {"error": {"message": str(exc), "type": "script_error"}}
                return 400, {"content-type": "application/json"}, stable_json(error).encode()
        headers = {"content-type": "application/json", **self.extra_headers}
        body = response.read()
        if self.gzip and "gzip" in received.headers.get("accept-encoding", ""):
            body = gzip_module.compress(body, mtime=0)
            headers["content-encoding"] = "gzip"
        return response.status_code, headers, body


def _transient_error(status: int) -> tuple[int, dict[str, str], bytes]:
    error = {"error": {"message": f"transient failure {status}", "type": "server_error"}}
    # OpenAI's own hint, honoured by the SDK: retry after 1 ms instead of its ~1 s backoff.
    headers = {"content-type": "application/json", "retry-after-ms": "1"}
    return status, headers, stable_json(error).encode()


def _handler_class(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            received = ReceivedRequest(
                method="POST",
                path=self.path,
                headers={key.lower(): value for key, value in self.headers.items()},
                body=self.rfile.read(length),
            )
            status, headers, body = server.answer(received)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Silence the per-request log lines on stderr."""

    return Handler
