"""Recorded model traffic: vcrpy cassettes for scenario runs.

``with CassetteSession(path, record_mode=..., secrets=[api_key]) as handle: <run>`` and then
``handle.verify()``. vcrpy patches ``httpx2`` (the transport of openai 3.x), and only it, so the
real SDK code path runs in replay too.

Record modes (pytest-recording's names and meanings):

* ``none`` (default): replay only. A request that is not in the cassette fails at once and no
  network is touched; a missing cassette is an error.
* ``once``: record if the cassette file does not exist (staged like ``rewrite``, so a failed
  run leaves no partial cassette), otherwise behave like ``none``.
* ``new_episodes``: replay what is recorded, record (and append) what is not.
* ``all``: never replay; every request goes to the server and is recorded.
* ``rewrite``: record everything anew.

A recording keeps exactly the interactions its run used (vcrpy's ``drop_unused_requests``): one
it no longer asks for (another model) would be left unplayed by the next replay.

Every mode that records writes a staging file beside the cassette (for ``all`` and
``new_episodes`` a copy of it first), which replaces the committed cassette when the session
ends, unless the run failed (:meth:`CassetteSession.abandon`) or raised (Ctrl-C included):
an interrupted recording never leaves a hybrid cassette that replays green. The staging file
is written on entry, so a folder that cannot be written fails before the first model call.

Recording needs an endpoint and a model, checked before any file is touched (the runner asks
:attr:`CassetteSession.may_record`, computed once); a replay sends the cassette's own model,
endpoint and request options.

SDK retries: a recording allows them, so a flaky server may answer a request with a 5xx/408/
429 first. The retried request (``x-stainless-retry-count`` above 0) replaces the recorded
answer it retries and never plays from the cassette: a cassette holds each request's final
answer only, which is what a replay (no SDK retries) asks for.

Matching rule: method, URL path and the canonical request body (model, messages, tools,
tool_choice, response_format, temperature and any extra body key, but not ``max_tokens`` and
the other ``UNMATCHED_BODY_KEYS``: parsed JSON re-serialised with ``stable_json``).
Scheme, host, port and query are ignored (a cassette recorded against a local server replays
with any base URL). Headers are never matched, so the volatile SDK headers (``x-stainless-*``,
including the retry counter ``x-stainless-retry-count``, and ``user-agent``) cannot cause a miss;
they are not even stored. Each recorded interaction plays once, in order among equal requests.

In replay, a miss raises :class:`StaleCassetteError` (stage, round, message diff from
:mod:`~pytest_diageval.harness.cassettes.diff`, re-record command); recorded interactions left
unplayed make :meth:`CassetteSession.verify` raise :class:`UnplayedInteractionsError`. The
stale error derives from ``openai.OpenAIError`` because the SDK re-raises those untouched
(anything else from a transport is retried, slept on and wrapped as a connection error).

Secrets (:mod:`~pytest_diageval.harness.cassettes.secrets`): request headers are stored from
an allowlist, secret response headers are dropped, every given secret (whatever its length)
becomes :data:`SCRUBBED`, each written file is scanned for the exact secrets and key-like
strings (:func:`scan_for_secrets`), and :func:`cassette_transport` scrubs them from every
answer before the run reads it. Cassettes are readable YAML
(:mod:`~pytest_diageval.harness.cassettes.cassette_file`): decoded bodies, JSON pretty-printed with
real Chinese characters; the recorded request body is only ever compared, never sent again,
so reformatting it is safe.

vcrpy patches httpx2 process-wide: one cassette session at a time per process.
"""

from __future__ import annotations

import functools
import json
import os
import ssl
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import httpx2
import openai
import vcr
from vcr.request import Request

from pytest_diageval.harness.cassettes.cassette_file import (
    ReadableYaml,
    Utf8Persister,
    holds_recording,
)
from pytest_diageval.harness.cassettes.diff import (
    CANONICAL_BODY_KEYS,
    body_matcher,
    canonical_body,
    describe_request,
    request_diff,
)
from pytest_diageval.harness.cassettes.interrupt import RecordingInterrupted
from pytest_diageval.harness.cassettes.replay import SessionCassette
from pytest_diageval.harness.cassettes.secrets import (
    DROPPED_HEADERS,
    MIN_SECRET_LENGTH,
    SCRUBBED,
    ScrubbingTransport,
    before_save_scrubber,
    find_secret,
)
from pytest_diageval.harness.cassettes.vcr_adapter import PATCHER_NAMES, cassette_context
from pytest_diageval.harness.settings import RECORD_MODES, RecordMode

__all__ = [
    "CANONICAL_BODY_KEYS",
    "DROPPED_HEADERS",
    "MIN_SECRET_LENGTH",
    "PATCHED_LIBRARY",
    "RECORD_MODES",
    "SCRUBBED",
    "CassetteError",
    "CassetteReplayError",
    "CassetteSession",
    "MissingCassetteError",
    "RecordMode",
    "SecretLeakError",
    "StaleCassetteError",
    "UnplayedInteractionsError",
    "canonical_body",
    "cassette_transport",
    "describe_request",
    "request_diff",
    "scan_for_secrets",
]

# rewrite records into an empty staging file, where new_episodes records everything.
_VCR_MODE: dict[RecordMode, str] = {
    "none": "none",
    "once": "once",
    "new_episodes": "new_episodes",
    "all": "all",
    "rewrite": "new_episodes",
}


class CassetteError(Exception):
    """Base of every cassette problem."""


class MissingCassetteError(CassetteError):
    """Replay was asked for, but the cassette file does not exist."""


class StaleCassetteError(CassetteError, openai.OpenAIError):
    """A request in replay matches no recorded interaction (the prompt or inputs changed)."""


class CassetteReplayError(CassetteError):
    """The replayed answers stopped the run (an error answer the SDK raised on, say)."""


class UnplayedInteractionsError(CassetteError):
    """Replay ended with recorded interactions never asked for (a shorter path)."""


class SecretLeakError(CassetteError):
    """A written cassette contains something that looks like a credential."""


# Model calls go through openai's httpx2 transport only (cassette_transport), so only httpx2
# is patched: vcrpy would otherwise patch eight more HTTP libraries on every cassette entry
# and undo it on exit, about a third of a replayed cassette's setup.
PATCHED_LIBRARY = "httpx2"
_VCR = vcr.VCR(
    serializer="readable-yaml",
    match_on=("method", "path", "diageval_body"),
    decode_compressed_response=True,
    record_on_exception=True,
    skip_patchers=tuple(name for name in PATCHER_NAMES if name != PATCHED_LIBRARY),
)
_VCR.register_serializer("readable-yaml", ReadableYaml())
_VCR.register_matcher("diageval_body", body_matcher)


class CassetteSession:
    """One scenario run against one cassette: ``with CassetteSession(...) as handle``."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        record_mode: RecordMode = "none",
        secrets: Sequence[str | None] = (),
        rerecord_command: str | None = None,
    ) -> None:
        if record_mode not in RECORD_MODES:
            raise ValueError(
                f"record_mode must be one of {', '.join(RECORD_MODES)}; got {record_mode!r}"
            )
        self.path = Path(path)
        self.record_mode = record_mode
        self.secrets = tuple(s for s in secrets if s)
        self.rerecord_command = rerecord_command
        # Whether this session may send requests to the endpoint, known before entering (an
        # empty file is recorded over, as vcrpy treats a missing one).
        existing = record_mode == "once" and holds_recording(self.path)
        self.may_record = record_mode != "none" and not existing
        # Every session that may record writes a staging file beside the cassette, which
        # replaces it only after a run that completes (a failed or stopped one must neither
        # lose the committed cassette nor leave a partial one): all and new_episodes start
        # from a copy of the committed cassette, rewrite and once from nothing.
        self.record_path = _staging_path(self.path) if self.may_record else self.path
        self._seed = record_mode in ("all", "new_episodes")
        self.stale: list[StaleCassetteError] = []
        self.replay_only = False
        self.abandoned = False
        self._context: Any = None
        self._cassette: Any = None
        self._persister = Utf8Persister(CassetteError)

    @property
    def cassette(self) -> Any:
        """The underlying ``vcr.cassette.Cassette`` (inside the ``with`` block and after it)."""
        if self._cassette is None:
            raise RuntimeError("the cassette session has not been entered")
        return self._cassette

    def __enter__(self) -> Self:
        if self.record_path != self.path:
            self._prepare_staging()
        if self.record_mode == "none" and not self.path.is_file():
            raise MissingCassetteError(
                f"cassette {self.path} does not exist (record mode none replays only)"
                + self._rerecord_hint()
            )
        self._persister = Utf8Persister(CassetteError)
        self._context = cassette_context(SessionCassette, _VCR, self._cassette_config)
        self._cassette = self._context.__enter__()
        self._cassette.on_miss = self._stale_error
        self.replay_only = bool(self._cassette.write_protected)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._context.__exit__(exc_type, exc, tb)
        staged = self.record_path != self.path
        if staged and (exc is not None or self.abandoned):
            self.record_path.unlink(missing_ok=True)  # the committed cassette stays
            if isinstance(exc, KeyboardInterrupt):  # Ctrl-C, SIGTERM: said, and the run stops
                raise RecordingInterrupted.of(self.path, exc) from exc
            return
        # Scanned here, not in the persister: an error inside vcrpy's exit would leave the
        # HTTP libraries patched. A leak stops a rewrite before it replaces anything.
        if self._persister.saved:
            scan_for_secrets(self.record_path, self.secrets)
        if staged and self._persister.saved:
            self.record_path.replace(self.path)
        elif staged:  # nothing new was recorded: the committed cassette stays as it is
            self.record_path.unlink(missing_ok=True)

    def _prepare_staging(self) -> None:
        """Write the staging file now (a copy of the cassette, or empty): a folder that cannot
        be written fails here, before the first model call, not after the whole recording."""
        try:
            self.record_path.parent.mkdir(parents=True, exist_ok=True)
            seed = self.path.read_bytes() if self._seed and self.path.is_file() else b""
            # One left by an interruption (or a symlink in its place) is unlinked, not followed.
            self.record_path.unlink(missing_ok=True)
            with self.record_path.open("xb") as staging:
                staging.write(seed)
        except OSError as error:
            raise CassetteError(
                f"cannot record cassette {self.path}: {self.record_path.parent} is not"
                f" writable ({error.strerror}); nothing was sent to the model"
            ) from None

    def abandon(self) -> None:
        """Say, inside the ``with`` block, that the run failed (e.g. the model was unreachable):
        a recording from scratch (rewrite, once) then writes no partial cassette."""
        self.abandoned = True

    def _cassette_config(self) -> dict[str, Any]:
        return {
            "path": str(self.record_path),
            "record_mode": _VCR_MODE[self.record_mode],
            "before_save_interaction": before_save_scrubber(self.secrets),
            "persister": self._persister,
            "drop_unused_requests": self.may_record,  # a replay never rewrites its cassette
        }

    @property
    def recorded_model(self) -> str | None:
        """The model of the first recorded request (from the cassette vcrpy already loaded)."""
        for request in self.cassette.requests:
            try:
                body = json.loads(request.body or b"{}")
            except ValueError:
                continue
            if isinstance(body, dict) and isinstance(body.get("model"), str):
                return str(body["model"])
        return None

    @property
    def recorded_base_url(self) -> str | None:
        """The endpoint of the first recorded request (its URL less ``/chat/completions``)."""
        uris = (str(request.uri).split("?")[0] for request in self.cassette.requests)
        return next((uri.removesuffix("/chat/completions") for uri in uris), None)

    @property
    def play_count(self) -> int:
        return int(self.cassette.play_count)

    @property
    def recorded_count(self) -> int:
        """Interactions recorded in this session (not loaded from the file)."""
        return len(self.cassette.data) - int(self.cassette.loaded_count)

    def verify(self, run_error: str | None = None) -> None:
        """After the run: raise the first stale miss, then the error that stopped the run
        (``run_error``, what the model calls raised), then complain about unplayed records.

        The order matters: a run that stopped early always leaves interactions unplayed, so
        their count alone would hide why it stopped.
        """
        if self.stale:
            raise self.stale[0]
        if not self.replay_only:
            return
        cassette = self.cassette
        unplayed = [
            (number, request)
            for number, (request, _) in enumerate(cassette.data[: cassette.loaded_count], 1)
            if cassette.play_counts[number - 1] == 0
        ]
        if run_error is not None:
            left = f"; {len(unplayed)} recorded interaction(s) were then left unplayed"
            raise CassetteReplayError(
                f"cassette {self.path}: the replay stopped after {self.play_count} of"
                f" {cassette.loaded_count} recorded interaction(s): {run_error}"
                + (left if unplayed else "")
                + self._rerecord_hint()
            )
        if unplayed:
            listed = ", ".join(f"#{number} {describe_request(req)}" for number, req in unplayed)
            raise UnplayedInteractionsError(
                f"cassette {self.path}: {len(unplayed)} of {cassette.loaded_count} recorded "
                f"interaction(s) were never replayed: {listed}. The run took a shorter path "
                "than when it was recorded." + self._rerecord_hint()
            )

    def _stale_error(self, request: Request, number: int) -> StaleCassetteError:
        loaded = self.cassette.data[: self.cassette.loaded_count]
        recorded = loaded[number - 1][0] if number <= len(loaded) else None
        if recorded is None:
            detail = (
                f"the cassette holds only {len(loaded)} recorded request(s): this run makes "
                "more requests than when it was recorded."
            )
        else:
            detail = (
                f"the recorded request at the same position ({describe_request(recorded)}) "
                "differs from it:\n" + request_diff(recorded, request)
            )
        error = StaleCassetteError(
            f"stale cassette {self.path}: request #{number} of this run "
            f"({describe_request(request)}) matches no recorded interaction; {detail}"
            + self._rerecord_hint()
        )
        self.stale.append(error)
        return error

    def _rerecord_hint(self) -> str:
        if not self.rerecord_command:
            return ""
        return f"\nRe-record this scenario with: {self.rerecord_command}"


def _staging_path(path: Path) -> Path:
    # Hidden and not *.yaml: never collected as a scenario, nor mistaken for a cassette.
    return path.with_name(f".{path.name}.recording")


@functools.cache
def _shared_ssl_context() -> ssl.SSLContext:
    return httpx2.create_ssl_context()


def cassette_transport(secrets: Sequence[str] = ()) -> httpx2.BaseTransport:
    """A network transport for ``make_openai_client`` / ``LLM`` in cassette sessions; with
    ``secrets`` (the session's), every answer reaches the run with them scrubbed. vcrpy
    intercepts ``httpx2.HTTPTransport`` (not custom transports), so cassette runs need a real
    one; building it loads the CA bundle into a fresh SSL context, which costs more than
    replaying a whole scenario, so this one shares one context per process."""
    network = httpx2.HTTPTransport(verify=_shared_ssl_context())
    return ScrubbingTransport(network, secrets) if any(secrets) else network


def scan_for_secrets(path: str | os.PathLike[str], secrets: Sequence[str] = ()) -> None:
    """Raise :class:`SecretLeakError` at the first given secret or key-like string in the
    file (:func:`~.secrets.find_secret`); the message masks the value."""
    found = find_secret(path, secrets)
    if found is not None:
        raise SecretLeakError(
            f"{path}:{found.line_number}: the cassette contains {found.kind} "
            f"({found.value[:6]}…); it was written to disk: fix or delete it, and do not "
            "commit it"
        )
