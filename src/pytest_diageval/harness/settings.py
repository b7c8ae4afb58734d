"""What a pytest run needs to know before any scenario runs, with no heavy imports.

``plugin.py`` imports this module in ``pytest_configure`` and ``pytest_collect_file`` of every
pytest run, including runs that collect no scenario, so it must not pull in openai, instructor
or vcrpy: those load only when a scenario file is actually collected.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

import pytest

from pytest_diageval.agents.request_options import (
    OPTION_FLAGS,
    OptionKind,
    RequestOptions,
    RequestOptionsError,
    configured_options,
    parse_entries,
)
from pytest_diageval.harness.outputs import output_path_problem

__all__ = [
    "DEFAULT_SCENARIO_DIRS",
    "DEFAULT_TIMEOUT",
    "KEY_VARIABLE",
    "NEVER_COLLECTED_DIRS",
    "PROGRESS_PLUGIN",
    "RECORD_MODES",
    "REFERENCE_MODEL",
    "SCENARIO_SUFFIXES",
    "SETTINGS_KEY",
    "KeyRefusedError",
    "MissingEndpointError",
    "RecordMode",
    "RunSettings",
    "SettingsError",
    "allowed_roots",
    "configured_cassette_dir",
    "configured_scenario_dirs",
    "explicit_paths",
    "html_option",
    "is_scenario_file",
    "positive_seconds",
    "repeat_option",
    "report_option",
    "request_option",
    "request_options",
    "run_settings",
    "summary_option",
    "timeout_option",
]

RecordMode = Literal["none", "once", "new_episodes", "all", "rewrite"]
RECORD_MODES: tuple[RecordMode, ...] = get_args(RecordMode)
NEVER_COLLECTED_DIRS = frozenset({"worlds", "cassettes"})
DEFAULT_SCENARIO_DIRS: tuple[str, ...] = ("scenarios",)
"""Folders whose YAML files are scenarios (ini ``diageval_scenario_dirs``)."""
SCENARIO_SUFFIXES = (".yaml", ".yml")
DEFAULT_TIMEOUT = 60.0
REFERENCE_MODEL = "reference"
"""The model name that runs the built-in reference agent instead of a model
(``pytest_diageval.agents.reference``; not imported here: settings import nothing heavy)."""
KEY_VARIABLE = "OPENAI_API_KEY"
"""Where a recording's API key comes from (there is no option: a key never sits in a command)."""
_REFUSED = re.compile(r"HTTP (401|403)\b")
"""Seconds per model request; a small local model may need far more (``--diageval-timeout``)."""


@dataclass(frozen=True)
class RunSettings:
    """What the command line and environment say about the model endpoint and cassettes."""

    record_mode: RecordMode = "none"
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    request_options: RequestOptions = field(default_factory=RequestOptions)
    """Per stage: temperature, max_tokens, extra body, for requests that are recorded."""
    contract_points: bool = False
    """``--diageval-points offer``: recordings offer points in the executor's contract."""
    progress: Callable[[str, str, str, Mapping[str, object], float], None] | None = field(
        default=None, compare=False, repr=False
    )
    """Told of each request a recording sends (scenario id, stage, round, usage, seconds)."""

    @classmethod
    def from_env(
        cls,
        record_mode: RecordMode,
        base_url: str | None,
        model: str | None,
        timeout: float | None = None,
        request_options: RequestOptions | None = None,
    ) -> RunSettings:
        return cls(
            record_mode=record_mode,
            base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
            model=model or os.environ.get("DIAGEVAL_MODEL"),
            api_key=os.environ.get("OPENAI_API_KEY") or None,
            timeout=timeout or _timeout_from_env(),
            request_options=request_options or RequestOptions(),
        )

    @property
    def reference(self) -> bool:
        """``--diageval-model reference``: the built-in reference agent answers every scenario
        that has no script (no cassette is read or written)."""
        return self.model == REFERENCE_MODEL

    def require_endpoint(self, cassette: Path) -> tuple[str, str]:
        """The base URL and model to record ``cassette`` with; :class:`MissingEndpointError`
        names the options and variables to set when either is missing.

        Recording with a made-up endpoint would only fail later, far from the cause (and a
        made-up model name would be written into the cassette).
        """
        if self.base_url and self.model:
            return self.base_url, self.model
        needed = (
            ("endpoint", self.base_url, "give --diageval-base-url or set OPENAI_BASE_URL"),
            ("model", self.model, "give --diageval-model or set DIAGEVAL_MODEL"),
        )
        missing = [(name, hint) for name, value, hint in needed if not value]
        names = " and no ".join(name for name, _ in missing)
        verb = "is" if len(missing) == 1 else "are"
        raise MissingEndpointError(
            f"--diageval-record={self.record_mode} would record {cassette}, but no {names} "
            f"{verb} set: {'; '.join(hint for _, hint in missing)}"
        )

    def refused_key_error(self, run_error: str | None, base_url: str) -> KeyRefusedError | None:
        """When a recording stopped because ``base_url`` answered 401 or 403: the error that
        says whether the key was missing or refused, and where it is set; else None."""
        found = _REFUSED.search(run_error or "")
        if found is None:
            return None
        status = found.group(1)
        if self.api_key is None:
            why = (
                f"no API key is set ({KEY_VARIABLE} is unset or empty), so the request carried"
                " only a placeholder"
            )
        else:
            why = f"it refused the key in {KEY_VARIABLE}"
        return KeyRefusedError(
            f"--diageval-record={self.record_mode}: {base_url} answered HTTP {status}: {why};"
            f" set {KEY_VARIABLE} to a key this endpoint accepts and record again"
            f" ({KEY_VARIABLE}=… <the same command>). The model call said: {run_error}"
        )


def positive_seconds(text: str) -> float:
    """A positive, finite number of seconds from text; ``ValueError`` says what is wrong."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{text!r} is not a positive number of seconds")
    return value


def timeout_option(text: str) -> float:
    """argparse type of ``--diageval-timeout``: a bad value is a usage error naming it."""
    try:
        return positive_seconds(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{error} (give, say, 60 or 900)") from None


def repeat_option(text: str) -> int:
    """argparse type of ``--diageval-repeat``: how many samples, 1 to 100."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of samples from 1 to 100 (give, say, 3)"
        )
    return value


def report_option(text: str) -> str:
    """argparse type of ``--diageval-report``: a JSON file path this run can write."""
    return _output_option(text, "JSON", "diageval-report.json")


def html_option(text: str) -> str:
    """argparse type of ``--diageval-html``: an HTML file path this run can write."""
    return _output_option(text, "HTML", "diageval-report.html")


def summary_option(text: str) -> str:
    """argparse type of ``--diageval-summary``: a Markdown file path this run can write."""
    return _output_option(text, "Markdown", "diageval-summary.md")


def _output_option(text: str, kind: str, example: str) -> str:
    """``text`` when :func:`output_path_problem` finds nothing wrong with it; else a usage
    error (argparse's names the option) that says what is wrong, before anything runs."""
    problem = output_path_problem(text)
    if problem is None:
        return text
    if problem == "is a directory":
        folder = text.rstrip("/") or "/"
        raise argparse.ArgumentTypeError(
            f"{text!r} is a directory; give the {kind} file to write, such as"
            f" {folder.rstrip('/')}/{example}"
        )
    raise argparse.ArgumentTypeError(
        f"{text!r} {problem}; give the {kind} file to write, in a folder this run can write"
    )


def request_option(kind: OptionKind) -> Callable[[str], str]:
    """argparse type of ``--diageval-temperature`` / ``-max-tokens`` / ``-extra-body``: one
    ``[STAGE=]VALUE`` entry, checked (a bad one is a usage error naming it), kept as text."""

    def check(text: str) -> str:
        try:
            parse_entries(kind, [text], "")  # argparse's message names the option
        except RequestOptionsError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return text

    return check


def request_options(config: pytest.Config) -> RequestOptions:
    """The run's request options from the command line and the ini (the command line's
    entries replace the ini's, per option); a bad entry is a :class:`pytest.UsageError`.

    Read in ``pytest_configure``, so a bad entry stops the run before anything is collected.
    """
    found = config.stash.get(REQUEST_OPTIONS_KEY, None)
    if found is None:
        given = {kind: config.getoption(f"diageval_{kind}") for kind in OPTION_FLAGS}
        ini = {
            kind: [str(line) for line in config.getini(f"diageval_{kind}")] for kind in OPTION_FLAGS
        }
        try:
            found = configured_options(given, ini)
        except RequestOptionsError as error:
            raise pytest.UsageError(str(error)) from None
        config.stash[REQUEST_OPTIONS_KEY] = found
    return found


def _ini_lines(config: pytest.Config, name: str) -> list[str]:
    return [str(line) for line in config.getini(name)]


def _timeout_from_env() -> float:
    text = os.environ.get("DIAGEVAL_TIMEOUT") or ""
    if not text.strip():
        return DEFAULT_TIMEOUT
    try:
        return positive_seconds(text)
    except ValueError as error:
        raise SettingsError(
            f"environment variable DIAGEVAL_TIMEOUT: {error}; set it to a positive number"
            f" (default {DEFAULT_TIMEOUT:g}) or unset it"
        ) from None


class SettingsError(ValueError):
    """The environment holds a value the plugin cannot use (named in the message)."""


def run_settings(config: pytest.Config) -> RunSettings:
    """The run's settings, read once when the first scenario needs them.

    Not in ``pytest_configure``: a bad ``DIAGEVAL_TIMEOUT`` must not break the pytest runs of
    projects without scenarios. Raises :class:`SettingsError` (each scenario then fails with
    it, as an invalid scenario).
    """
    settings = config.stash.get(SETTINGS_KEY, None)
    if settings is None:
        record = config.getoption("diageval_record")
        settings = RunSettings.from_env(
            # stale: replay what is recorded, record what is missing; stale ones get rewrite.
            "once" if record == "stale" else record,
            config.getoption("diageval_base_url"),
            config.getoption("diageval_model"),
            config.getoption("diageval_timeout"),
            request_options(config),
        )
        if config.getoption("diageval_points", "omit") == "offer":
            settings = dataclasses.replace(settings, contract_points=True)
        if settings.reference and settings.record_mode != "none":
            raise SettingsError(
                f"--diageval-model {REFERENCE_MODEL} runs the built-in reference agent, which"
                f" records nothing: drop --diageval-record={record}, or name the real model to"
                " record with --diageval-model <model> --diageval-base-url <endpoint>"
            )
        progress = config.pluginmanager.get_plugin(PROGRESS_PLUGIN)
        if progress is not None:
            settings = dataclasses.replace(settings, progress=progress.request)
        config.stash[SETTINGS_KEY] = settings
    return settings


class MissingEndpointError(Exception):
    """A cassette would be recorded, but the endpoint or model to record from is not set."""


class KeyRefusedError(Exception):
    """A recording's endpoint answered 401/403: the API key is missing or refused."""


SETTINGS_KEY = pytest.StashKey[RunSettings]()
REQUEST_OPTIONS_KEY = pytest.StashKey[RequestOptions]()
PROGRESS_PLUGIN = "diageval-recording-progress"
"""The plugin that shows a recording's requests as they are answered (if registered)."""
EXPLICIT_PATHS_KEY = pytest.StashKey[frozenset[Path]]()


def is_scenario_file(
    path: Path,
    cassette_dir: Path | None = None,
    roots: Sequence[Path] = (),
    *,
    scenario_dirs: Sequence[str] = DEFAULT_SCENARIO_DIRS,
    explicit: Collection[Path] = (),
) -> bool:
    """Whether pytest collects ``path`` as a scenario (see docs/guide.md, *What is collected*).

    A ``*.yaml`` / ``*.yml`` file is a scenario when it was named on the command line
    (``explicit``), or when it lies in a folder named in ``scenario_dirs`` (ini
    ``diageval_scenario_dirs``: a folder name matches at any depth, a path with a ``/`` is
    relative to the first root); files under a ``worlds`` or ``cassettes`` folder or under
    the configured ``diageval_cassette_dir`` never are, unless named explicitly. Every other
    YAML file of a project (``docker-compose.yaml``, CI workflows, Helm values) is not ours.

    Only folders below the outermost of ``roots`` (rootdir, invocation dir) that holds the
    file count, that root's own name included: a project that lives in some ``~/worlds/`` or
    ``~/scenarios/`` is neither hidden nor claimed whole.
    """
    if path.suffix not in SCENARIO_SUFFIXES:
        return False
    if path in explicit:
        return True
    folders = _parts_below(path, roots)[:-1]
    if NEVER_COLLECTED_DIRS.intersection(folders[1:]):
        return False
    if cassette_dir is not None and path.is_relative_to(cassette_dir):
        return False
    return _in_scenario_dir(path, folders, scenario_dirs, roots)


def _in_scenario_dir(
    path: Path, folders: Sequence[str], scenario_dirs: Sequence[str], roots: Sequence[Path]
) -> bool:
    base = roots[0] if roots else Path("/")
    for entry in scenario_dirs:
        if "/" in entry.strip("/"):
            if path.is_relative_to(base / entry):
                return True
        elif entry.strip("/") in folders:
            return True
    return False


def _parts_below(path: Path, roots: Sequence[Path]) -> tuple[str, ...]:
    """The path's parts from the outermost root that holds it (that root's name first)."""
    holding = [root for root in roots if path.is_relative_to(root)]
    if not holding:
        return path.parts
    outermost = min(holding, key=lambda root: len(root.parts))
    return path.relative_to(outermost.parent).parts


def explicit_paths(config: pytest.Config) -> frozenset[Path]:
    """The files named on the command line (``path::node`` selections included), absolute."""
    cached = config.stash.get(EXPLICIT_PATHS_KEY, None)
    if cached is None:
        base = config.invocation_params.dir
        cached = frozenset(
            Path(os.path.abspath(Path(base, str(arg).split("::", 1)[0]))) for arg in config.args
        )
        config.stash[EXPLICIT_PATHS_KEY] = cached
    return cached


def allowed_roots(config: pytest.Config) -> tuple[Path, ...]:
    """Where worlds and cassettes may live: rootdir and the ini ``diageval_allowed_roots``
    (relative to rootdir)."""
    extra = (Path(config.rootpath, str(entry)) for entry in config.getini("diageval_allowed_roots"))
    return (config.rootpath, *extra)


def configured_scenario_dirs(config: pytest.Config) -> tuple[str, ...]:
    return tuple(str(entry) for entry in config.getini("diageval_scenario_dirs"))


def configured_cassette_dir(config: pytest.Config) -> Path | None:
    configured = str(config.getini("diageval_cassette_dir") or "")
    return Path(config.rootpath, configured) if configured else None
