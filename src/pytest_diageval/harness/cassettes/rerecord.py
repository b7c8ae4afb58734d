"""Re-recording: what a cassette was recorded with, and the command that records it again.

A recording writes the endpoint, the model, the timeout and every stage's request options
(temperature, max_tokens, extra body) it used into the cassette, as a ``diageval:`` mapping
at the top of the file (never the key), and the world it ran on (a
packaged name, or a file path relative to the cassette's folder; an inline world is not
written), so that ``diageval scaffold`` can replay the cassette on its own world. vcrpy reads only
``interactions`` and ignores it; it rewrites the file without it, so the runner writes it
again after every recording. Older cassettes without it fall back to the endpoint and model
of their first request, and to the default request options. A replay sends the recorded
request options, as it sends the recorded model.

The printed command runs the interpreter of this run (``python -m pytest``), so it works
when pasted whichever ``pytest`` is first on ``PATH``, and names everything a recording
needs; the key comes from ``OPENAI_API_KEY`` as always.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from pytest_diageval.agents.request_options import RequestOptions, RequestOptionsError
from pytest_diageval.core.evidence.yaml_limits import YamlLimitError, safe_load_limited
from pytest_diageval.harness.cassettes.check import is_token_count
from pytest_diageval.harness.outputs import write_atomically

__all__ = [
    "METADATA_KEY",
    "RecordingMetadata",
    "display_path",
    "read_metadata",
    "recorded_totals",
    "rerecord_command",
    "write_metadata",
]

METADATA_KEY = "diageval"
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FIRST_URI = re.compile(r"^\s+uri: (\S+)/chat/completions\s*$", re.MULTILINE)
_FIRST_MODEL = re.compile(r'^\s+"model": "([^"]+)"', re.MULTILINE)


@dataclass(frozen=True)
class RecordingMetadata:
    """What a recording was made with (any of it may be unknown for an old cassette)."""

    base_url: str | None = None
    model: str | None = None
    timeout: float | None = None
    world: str | None = None
    """The world of the recording: a packaged name or a path relative to the cassette's folder."""
    request_options: RequestOptions | None = None
    """Per stage: temperature, max_tokens, extra body (None: not recorded, the defaults)."""
    request_options_error: str | None = None
    """What is wrong with recorded request options that cannot be used."""
    contract_points: bool = False
    """Recorded with points offered in the executor's contract (``--diageval-points offer``);
    a cassette without the key was recorded without them."""

    def options(self) -> list[str]:
        """The command-line options that record with the same endpoint, model, timeout and
        request options (those that differ from the defaults)."""
        found = [
            ("--diageval-base-url", self.base_url),
            ("--diageval-model", self.model),
            ("--diageval-timeout", None if self.timeout is None else f"{self.timeout:g}"),
        ]
        flags = [part for flag, value in found if value for part in (flag, value)]
        if self.request_options is not None:
            flags += self.request_options.command_line()
        if self.contract_points:
            flags += ["--diageval-points", "offer"]
        return flags

    def replay_options(self, cassette: Path) -> RequestOptions:
        """The request options a replay sends: the recorded ones, else the defaults;
        :class:`RequestOptionsError` when the recorded ones cannot be used."""
        if self.request_options_error is not None:
            raise RequestOptionsError(
                f"cassette {display_path(cassette)}: {METADATA_KEY}."
                f"{self.request_options_error}; fix it or re-record the cassette"
            )
        return self.request_options or RequestOptions()


def read_metadata(cassette: Path) -> RecordingMetadata | None:
    """The cassette's ``diageval:`` metadata, else its first request's endpoint and model;
    None when the file cannot be read."""
    try:
        # Bytes, then UTF-8: read_text's line-ending translation costs twice the read; the
        # head's YAML and the patterns below take ``\r\n`` as it is.
        text = cassette.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    head = text.split("\ninteractions:", 1)[0]
    if head.startswith(f"{METADATA_KEY}:"):
        try:
            # libyaml with the alias limits: read for every cassette scenario that runs.
            block = safe_load_limited(head)[METADATA_KEY]
        except (yaml.YAMLError, YamlLimitError, TypeError, KeyError, ValueError, RecursionError):
            block = None  # 5,000 digits are a ValueError of the int they would make
        if isinstance(block, dict):
            return RecordingMetadata(
                _text(block.get("base_url")),
                _text(block.get("model")),
                _seconds(block.get("timeout")),
                _text(block.get("world")),
                *_request_options(block),
                contract_points=block.get("contract_points") is True,
            )
    uri, model = _FIRST_URI.search(text), _FIRST_MODEL.search(text)
    return RecordingMetadata(uri.group(1) if uri else None, model.group(1) if model else None)


def _request_options(block: dict[str, object]) -> tuple[RequestOptions | None, str | None]:
    """The recorded request options, or what is wrong with them (none recorded: None)."""
    if "request_options" not in block:
        return None, None
    try:
        return RequestOptions.from_metadata(block["request_options"]), None
    except RequestOptionsError as error:
        return None, str(error)


def _seconds(value: object) -> float | None:
    """A recorded timeout: a positive, finite number of seconds, else None (not recorded):
    a number of hundreds of digits is no timeout, and must not stop the run."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        seconds = float(value)
    except OverflowError:
        return None
    return seconds if math.isfinite(seconds) and seconds > 0 else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


_URI_PORT = re.compile(r"^(\s+uri: [a-z]+://[^/:\s]+):\d+(?=/)", re.MULTILINE)


def write_metadata(cassette: Path, metadata: RecordingMetadata) -> None:
    """Put ``metadata`` at the top of the cassette file (replacing what was there), and drop
    the port from every request's ``uri``.

    Requests match on their path, and a local server's port changes from run to run: left in,
    it would make every re-recording a diff of every ``uri`` line. The endpoint a recording
    used, port included, is the metadata's ``base_url``.
    """
    text = _URI_PORT.sub(r"\1", cassette.read_text("utf-8"))
    if text.startswith(f"{METADATA_KEY}:"):
        text = text[text.index("\ninteractions:") + 1 :]
    block = {
        METADATA_KEY: {
            key: value
            for key, value in (
                ("base_url", metadata.base_url),
                ("model", metadata.model),
                ("timeout", metadata.timeout),
                ("world", metadata.world),
                ("request_options", _written(metadata.request_options)),
                ("contract_points", True if metadata.contract_points else None),
            )
            if value is not None
        }
    }
    head = yaml.safe_dump(block, sort_keys=False, allow_unicode=True)
    write_atomically(cassette, head + text)  # never a half-written cassette


def _written(options: RequestOptions | None) -> dict[str, dict[str, object]] | None:
    return None if options is None else options.to_metadata()


def display_path(path: str | os.PathLike[str]) -> str:
    """A path as a message shows it: ``..`` resolved, relative to the working directory when
    below it (``scenarios/live/../../cassettes/x.yaml`` → ``cassettes/x.yaml``)."""
    normal = Path(os.path.normpath(os.path.abspath(path)))
    cwd = Path.cwd()
    return str(normal.relative_to(cwd)) if normal.is_relative_to(cwd) else str(normal)


def rerecord_command(targets: Sequence[str], mode: str, options: Sequence[str] = ()) -> str:
    """``<this python> -m pytest <targets> --diageval-record=<mode> <options>`` (the options
    of :meth:`RecordingMetadata.options`: endpoint, model, timeout, request options)."""
    parts = [sys.executable, "-m", "pytest", *targets, f"--diageval-record={mode}", *options]
    return shlex.join(parts)


def recorded_totals(cassette: Path) -> tuple[int, int]:
    """How many requests the cassette holds and the tokens their answers reported."""
    try:
        data = yaml.load(cassette.read_text("utf-8"), Loader=_Loader)
    except (OSError, ValueError, RecursionError, yaml.YAMLError):  # ValueError: 5,000 digits
        return 0, 0
    interactions = data.get("interactions") if isinstance(data, dict) else None
    if not isinstance(interactions, list):
        return 0, 0
    tokens = 0
    for interaction in interactions:
        try:
            body = json.loads(interaction["response"]["body"]["string"])
            total = body["usage"]["total_tokens"]
        except (KeyError, TypeError, ValueError):
            continue  # an answer without usage counts no tokens
        if is_token_count(total):  # minus a million, infinity: no count (the replay says so)
            tokens += total
    return len(interactions), tokens
