"""The ``diageval`` command line.

- ``diageval ask "<query>"``: one diagnosis against a live OpenAI-compatible endpoint; prints
  the final answer and a short audit, and leaves the session in a SQLite file.
- ``diageval schema [--world]``: prints the JSON Schema of the scenario YAML format (of a
  world file).
- ``diageval serve-local``: runs the small local model (the ``local`` extra) behind an
  OpenAI-compatible server on 127.0.0.1 and prints the settings to record against it.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from pytest_diageval.cli.authoring import add_authoring_commands
from pytest_diageval.local.server import (
    DEFAULT_GENERATION_TIMEOUT,
    DEFAULT_N_CTX,
    DEFAULT_PROMPT_CACHE_MB,
)

if TYPE_CHECKING:
    from pytest_diageval.local.server import LocalServer

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``diageval`` command; its exit code.

    A reader that stops early (``diageval world … | head``) ends the command quietly with
    141 (128 + SIGPIPE, what a shell reports for such a pipeline), never with a traceback.
    """
    try:
        try:
            return _command(argv)
        finally:
            sys.stdout.flush()  # what is still buffered meets a closed pipe here, not at exit
    except BrokenPipeError:
        # Python flushes stdout once more at exit: that flush must find no pipe either.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return CLOSED_PIPE


CLOSED_PIPE = 128 + signal.SIGPIPE
"""The exit code of a command whose reader closed the pipe."""


def _command(argv: Sequence[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    result: int = handler(args)
    return result


DESCRIPTION = "Run, record and write evidence-grounded diagnosis scenarios (pytest-diageval)."


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="diageval", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"diageval {_version()}")
    commands = parser.add_subparsers(title="commands")

    ask = commands.add_parser("ask", help="run one diagnosis against a live endpoint")
    ask.add_argument("query", help="the on-call question, e.g. 只确认 order-service 是否存在告警")
    ask.add_argument("--world", default="default", help="world name or YAML path")
    ask.add_argument("--model", default=os.environ.get("DIAGEVAL_MODEL"), help="model name")
    ask.add_argument(
        "--base-url", default=os.environ.get("OPENAI_BASE_URL"), help="OpenAI-compatible base URL"
    )
    ask.add_argument("--db", default="diageval.sqlite", help="SQLite audit file")
    ask.add_argument("--timeout", type=float, default=60.0, help="seconds per model request")
    ask.add_argument("--session-id", default=None, help="session id (default: derived from time)")
    ask.add_argument(
        "--points",
        choices=("offer", "omit"),
        default="omit",
        help="offer points in the executor's contract (docs/points.md); default omit",
    )
    ask.set_defaults(handler=_ask)

    schema = commands.add_parser("schema", help="print the scenario JSON Schema")
    schema.add_argument(
        "--world", action="store_true", help="print the JSON Schema of a world file instead"
    )
    schema.set_defaults(handler=_schema)

    serve = commands.add_parser(
        "serve-local", help="serve the local model (needs the 'local' extra) until Ctrl-C"
    )
    serve.add_argument("--port", type=int, default=None, help="port (default: a free one)")
    serve.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="model cache (default ~/.cache/pytest-diageval)",
    )
    serve.add_argument("--n-ctx", type=int, default=DEFAULT_N_CTX, help="context window in tokens")
    serve.add_argument(
        "--prompt-cache-mb",
        type=_cache_megabytes,
        default=DEFAULT_PROMPT_CACHE_MB,
        metavar="MB",
        help="RAM for a prompt cache: a request that shares a prefix with an earlier prompt"
        f" reads only the rest; 0: none (default {DEFAULT_PROMPT_CACHE_MB}: measured no faster on"
        " 2 cores, see docs/local-model.md)",
    )
    serve.add_argument(
        "--startup-timeout", type=float, default=120.0, help="seconds to wait for the server"
    )
    serve.add_argument(
        "--generation-timeout",
        type=_positive_seconds,
        default=DEFAULT_GENERATION_TIMEOUT,
        metavar="SECONDS",
        help="wall-clock bound on one request's generation; the answer then holds what was"
        f" generated so far (default {DEFAULT_GENERATION_TIMEOUT:g})",
    )
    serve.set_defaults(handler=_serve_local)
    add_authoring_commands(commands)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-diageval")
    except PackageNotFoundError:  # a source tree that was never installed
        return "unknown"


def _ask(args: argparse.Namespace) -> int:
    missing = _missing_settings(args)
    if missing:
        print(f"diageval ask: missing {missing}; nothing was sent.", file=sys.stderr)
        return 2
    from pytest_diageval.agents.chat_service import ChatService
    from pytest_diageval.agents.llm import LLM, LLMConfig
    from pytest_diageval.core.evidence.store import Store
    from pytest_diageval.core.evidence.world import WorldError, load_world

    try:
        world = load_world(args.world, Path.cwd())
    except WorldError as exc:
        print(f"diageval ask: {exc}", file=sys.stderr)
        return 2
    config = LLMConfig(
        base_url=args.base_url,
        model=args.model,
        api_key=os.environ["OPENAI_API_KEY"],
        timeout=args.timeout,
        contract_points=args.points == "offer",
    )
    # instructor logs each failed attempt at ERROR; the audit below reports what matters.
    logging.getLogger("instructor").setLevel(logging.CRITICAL)
    db = Path(args.db)
    existed = db.exists()
    store = Store(db)
    session_id = args.session_id or _fresh_session_id()
    result = ChatService(store=store).run(args.query, world, LLM(config), session_id=session_id)
    if result.status == "completed":
        print(_audit_text(result, args.db))
        return 0
    store.close()
    if not existed:  # a failed first run leaves no audit file behind in the working folder
        for leftover in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
            leftover.unlink(missing_ok=True)
    kept = f" (session {result.session_id} kept in {args.db})" if existed else ""
    print(f"诊断未完成: {result.error}{kept}", file=sys.stderr)
    return 1


def _missing_settings(args: argparse.Namespace) -> str:
    missing = []
    if not os.environ.get("OPENAI_API_KEY"):
        missing.append("OPENAI_API_KEY")
    if not args.base_url:
        missing.append("--base-url (or OPENAI_BASE_URL)")
    if not args.model:
        missing.append("--model (or DIAGEVAL_MODEL)")
    return ", ".join(missing)


def _fresh_session_id() -> str:
    # The CLI is the one place that may use the wall clock: it is never replayed.
    from datetime import UTC, datetime

    return "ask-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")


def _audit_text(result: object, db: str) -> str:
    from pytest_diageval.agents.results import ChatResult

    assert isinstance(result, ChatResult)
    last = result.last_round
    assert last is not None
    cited = [
        f"  - {row.claim_id or row.action_id}: {row.tool_name} #{row.source_invocation_id}"
        f" {row.raw_path} [{row.status}{' ' + row.rule if row.rule else ''}]"
        for row in last.gatekeeper.checked_bindings
    ]
    lines = [
        result.final_answer,
        "",
        "---- audit ----",
        f"verdict: {result.final_verdict}  score: {result.final_score}"
        f"  answer: {result.answer_kind}  rounds: {len(result.rounds)}",
        f"model verdict: {last.decision.model_verdict} {last.decision.model_score}",
        *(
            f"override {o.rule}: {o.from_value} -> {o.to_value} ({o.reason})"
            for o in last.decision.overrides
        ),
        f"gatekeeper: {last.gatekeeper.severity} {', '.join(last.gatekeeper.failed_rules)}",
        "cited evidence:",
        *(cited or ["  (none)"]),
        f"session {result.session_id} in {db}",
    ]
    return "\n".join(lines)


def _schema(args: argparse.Namespace) -> int:
    from pytest_diageval.harness.format.registry import project_checks
    from pytest_diageval.harness.format.schema import render_schema, render_world_schema

    # The project's own checks (its conftest.py, its plugins) join `expect`, as pytest sees them.
    sys.stdout.write(render_world_schema() if args.world else render_schema(project_checks()))
    return 0


def _serve_local(args: argparse.Namespace) -> int:
    from pytest_diageval.local.server import (
        LocalExtraMissing,
        LocalServer,
        LocalServerError,
        require_local_extra,
    )

    try:
        require_local_extra()
    except LocalExtraMissing as exc:
        print(f"diageval serve-local: {exc}", file=sys.stderr)
        return 2
    server = LocalServer(
        cache_dir=args.cache_dir,
        port=args.port,
        n_ctx=args.n_ctx,
        prompt_cache_mb=args.prompt_cache_mb,
        startup_timeout=args.startup_timeout,
        generation_timeout=args.generation_timeout,
    )
    # A plain `kill` or Ctrl-C must stop the model server's whole process tree, not orphan it.
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    for signum in STOP_SIGNALS:
        signal.signal(signum, _stopper(server))
    try:
        with server:
            print(f"export OPENAI_BASE_URL={server.base_url}")
            print(f"export DIAGEVAL_MODEL={server.model}")
            print(
                f"# any OPENAI_API_KEY works: the local server ignores it. Log: {server.log_path}."
                " Ctrl-C stops the server.",
                flush=True,
            )
            code = server.wait()
            print(server.describe_failure(f"the server exited with code {code}"), file=sys.stderr)
            return 1
    except LocalServerError as exc:
        print(f"diageval serve-local: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _stopper(server: LocalServer) -> Callable[[int, FrameType | None], None]:
    """A signal handler that stops ``server`` (its whole process group) and ends serve-local."""

    def stop(signum: int, frame: FrameType | None) -> None:
        for ignored in STOP_SIGNALS:  # a second Ctrl-C must not cut the stop short
            signal.signal(ignored, signal.SIG_IGN)
        server.stop()
        raise KeyboardInterrupt  # serve-local's normal end: exit code 0

    return stop


def _cache_megabytes(text: str) -> int:
    try:
        megabytes = int(text)
    except ValueError:
        megabytes = -1
    if megabytes < 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a whole number of megabytes >= 0 (0: no prompt cache)"
        )
    return megabytes


def _positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, not {text!r}")
    return seconds
