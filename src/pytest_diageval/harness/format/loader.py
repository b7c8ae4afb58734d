"""Scenario files: YAML in, :class:`Scenario` out, and one clear line per problem.

YAML is loaded with ``yaml.SafeLoader`` (``yaml.safe_load`` semantics) but through the node
tree, so every problem points at a line and column: ``file:line:col: field.path: message``.
Pydantic's error locations are mapped back onto the nodes (see ``_errors`` below); union
branches (a verdict or a list of verdicts, a world name or an inline world) are reduced to
the branch that matches what the file holds, so a typo gets one message, not one per branch.

Paths inside a scenario (world file, cassette) are relative to the scenario file. The plugin
decides where default cassettes live and passes that folder to :func:`resolve_cassette_path`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import yaml
from pydantic import ValidationError

from pytest_diageval.core.evidence.world import World, WorldError, available_worlds, load_world
from pytest_diageval.core.evidence.yaml_limits import (
    YamlLimitError,
    load_limited,
    path_problem,
    read_limited,
)
from pytest_diageval.harness.cassettes.rerecord import rerecord_command
from pytest_diageval.harness.format import errors as _errors
from pytest_diageval.harness.format.errors import ScenarioProblem
from pytest_diageval.harness.format.registry import CheckRegistry
from pytest_diageval.harness.format.scenario import ID_PATTERN, Expect, Scenario
from pytest_diageval.harness.format.script_checks import script_content_problems
from pytest_diageval.harness.format.yaml_mistakes import mistake_position

__all__ = [
    "ScenarioError",
    "ScenarioProblem",
    "default_cassette_path",
    "duplicate_id_error",
    "duplicate_ids",
    "load_scenario",
    "load_scenario_world",
    "resolve_cassette_path",
    "resolve_world_spec",
    "unexpected_error",
]


class ScenarioError(ValueError):
    """A scenario file that cannot be used; ``str()`` is one line per problem."""

    def __init__(
        self,
        path: str | Path,
        line: int | None,
        column: int | None,
        field_path: str,
        message: str,
        *,
        more: Sequence[ScenarioProblem] = (),
    ) -> None:
        self.path = Path(path)
        self.line = line
        self.column = column
        self.field_path = field_path
        self.message = message
        self.problems: tuple[ScenarioProblem, ...] = (
            ScenarioProblem(line, column, field_path, message),
            *more,
        )
        super().__init__(str(self))

    @classmethod
    def from_problems(cls, path: str | Path, problems: Sequence[ScenarioProblem]) -> ScenarioError:
        first, *rest = problems
        return cls(path, first.line, first.column, first.field_path, first.message, more=rest)

    def __str__(self) -> str:
        return "\n".join(problem.format(self.path) for problem in self.problems)


# --------------------------------------------------------------------------- loading

# libyaml's parser when installed (about 15x faster, which matters for a thousand-file suite);
# both build the same safe node tree with positions.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_REQUIRED_KEYS = ", ".join(
    name for name, field in Scenario.model_fields.items() if field.is_required()
)


def load_scenario(path: str | Path, checks: CheckRegistry | None = None) -> Scenario:
    """Read, parse and validate one scenario file; the id defaults to the file's stem.

    ``checks``: the run's registry, whose registered ``expect`` keys the file may use (the
    built-in keys alone without it).
    """
    path = Path(path)
    root, data = _parse(path, _read(path))
    if root is None or data is None:
        raise ScenarioError(
            path, 1, 1, "", f"the file is empty: a scenario needs at least {_REQUIRED_KEYS}"
        )
    if not isinstance(data, dict):
        line, column = _errors.line_column(root.start_mark)
        raise ScenarioError(
            path,
            line,
            column,
            "",
            "the top level must be a mapping of scenario keys"
            f" ({', '.join(Scenario.model_fields)}); got {_errors.describe_value(data)}",
        )
    duplicates = _errors.duplicate_keys(root)
    if duplicates:
        raise ScenarioError.from_problems(path, duplicates)
    _check_default_id(path, data)
    try:
        context = {"default_id": path.stem, "checks": checks}
        scenario = Scenario.model_validate(data, context=context)
    except ValidationError as error:
        expect = checks.expect_model() if checks is not None else Expect
        found = _errors.problems(root, error.errors(), expect)
        raise ScenarioError.from_problems(path, found) from None
    content = script_content_problems(root, scenario)
    if content:
        raise ScenarioError.from_problems(path, content)
    return scenario


def unexpected_error(path: str | Path, error: BaseException) -> ScenarioError:
    """The ScenarioError of a failure no check foresaw, at the file (the catch-all of a
    collector: a user's file never ends the session in a traceback)."""
    try:
        detail = " ".join(str(error).split())
    except Exception:  # even the message of the error cannot be made
        detail = ""
    detail = detail if len(detail) <= 200 else detail[:200] + "…"
    return ScenarioError(
        path,
        None,
        None,
        "",
        f"cannot be used ({type(error).__name__}{': ' + detail if detail else ''}); look in it,"
        " its world and its cassette for an unusual value, and report the file to"
        " pytest-diageval if it looks valid",
    )


def _read(path: Path) -> str:
    try:
        raw = read_limited(path)
    except YamlLimitError as error:
        raise ScenarioError(path, None, None, "", str(error)) from None
    except OSError as error:
        raise ScenarioError(
            path, None, None, "", f"cannot read the file: {error.strerror}"
        ) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise ScenarioError(path, line, None, "", f"not UTF-8 text: {error.reason}") from None


def _parse(path: Path, text: str) -> tuple[yaml.Node | None, Any]:
    """``yaml.safe_load`` within the limits of core.evidence.yaml_limits, with the node tree (for
    positions)."""
    try:
        return load_limited(text)
    except YamlLimitError as error:
        line, column = _errors.line_column(error.mark) if error.mark else (None, None)
        raise ScenarioError(path, line, column, "", f"invalid YAML: {error.message}") from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line, column = _errors.line_column(mark) if mark is not None else (None, None)
        detail = error.problem or error.context or "cannot parse"
        context = f" ({error.context})" if error.context and error.problem else ""
        hint = "; a tab: indent YAML with spaces" if _is_tab(text, line, column) else ""
        if not hint:  # PyYAML stops at a token after the mistake: point at the mistake
            line, column, hint = mistake_position(text, error, line, column)
        message = f"invalid YAML: {detail}{context}{hint}"
        raise ScenarioError(path, line, column, "", message) from None
    except yaml.YAMLError as error:
        raise ScenarioError(path, None, None, "", f"invalid YAML: {error}") from None


def _is_tab(text: str, line: int | None, column: int | None) -> bool:
    """Whether the parser stopped at a tab (libyaml's message does not name the character)."""
    if line is None or column is None:
        return False
    lines = text.splitlines()
    row = lines[line - 1] if 0 < line <= len(lines) else ""
    return row[column - 1 : column] == "\t"


def _check_default_id(path: Path, data: dict[Any, Any]) -> None:
    if "id" not in data and not _errors.matches(ID_PATTERN, path.stem):
        raise ScenarioError(
            path,
            1,
            1,
            "id",
            f"the file name gives the default id {path.stem!r}, which is not a valid id"
            " (letters, digits, '.', '_', '-', starting with a letter or digit);"
            " add an `id:` key or rename the file",
        )


# --------------------------------------------------------------------------- world


def resolve_world_spec(
    scenario: Scenario, scenario_path: str | Path, *, roots: Sequence[Path] = ()
) -> str | Path | dict[str, Any]:
    """The world as :func:`load_world` takes it: a packaged name, an existing file, a mapping.

    Raises :class:`ScenarioError` at the ``world`` line for an unknown name, a missing file,
    a file that is not YAML, or (when ``roots`` are given) a file outside every root.
    """
    scenario_path = Path(scenario_path)
    spec = scenario.world
    if isinstance(spec, dict):
        return spec
    if _looks_like_world_name(spec):
        names = available_worlds()
        if spec in names:
            return spec
        _raise_at(
            scenario_path,
            ("world",),
            f"unknown world name {spec!r}; packaged worlds: {', '.join(names) or 'none'}"
            " (or give a YAML file path relative to this scenario)",
        )
    # Absolute, so that load_world does not join the scenario folder a second time.
    path = (scenario_path.parent / spec).absolute()
    _check_path(path, scenario_path, ("world",), "world file")
    if not path.name.endswith((".yaml", ".yml")):
        _raise_at(
            scenario_path,
            ("world",),
            f"a world file must be a .yaml or .yml file: {spec} (the file was not opened)",
        )
    _confine(path, roots, scenario_path, ("world",), "world file")
    if not path.is_file():
        _raise_at(scenario_path, ("world",), f"world file not found: {spec} (looked for {path})")
    return path


def load_scenario_world(
    scenario: Scenario, scenario_path: str | Path, *, roots: Sequence[Path] = ()
) -> World:
    """Load the scenario's world; any problem is a :class:`ScenarioError` at ``world``."""
    scenario_path = Path(scenario_path)
    spec = resolve_world_spec(scenario, scenario_path, roots=roots)
    try:
        return load_world(
            spec,
            scenario_path.parent,
            label=f"{scenario_path} (inline world)",
            # An inline world's problems name their line in the scenario file.
            yaml_text=_text_or_none(scenario_path) if isinstance(spec, dict) else None,
            yaml_at=("world",),
        )
    except WorldError as error:
        _raise_at(scenario_path, ("world",), f"invalid world: {error}")


def _text_or_none(path: Path) -> str | None:
    try:
        return path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _looks_like_world_name(spec: str) -> bool:
    # Mirrors core.world.load_world: a bare name without folder or YAML suffix is packaged.
    has_folder = "/" in spec or "\\" in spec
    return not has_folder and not spec.endswith((".yaml", ".yml")) and not spec.startswith(".")


# --------------------------------------------------------------------------- cassettes


def default_cassette_path(scenario_id: str, cassette_dir: str | Path) -> Path:
    """Where a scenario without ``llm`` keeps its cassette: ``<cassette dir>/<id>.yaml``."""
    return Path(cassette_dir) / f"{scenario_id}.yaml"


def resolve_cassette_path(
    scenario: Scenario,
    scenario_path: str | Path,
    cassette_dir: str | Path,
    *,
    must_exist: bool = False,
    roots: Sequence[Path] = (),
    reference: bool = False,
) -> Path | None:
    """The scenario's cassette file, or None for a scripted or reference scenario (and, with
    ``reference`` (``--diageval-model reference``), for every scenario that is not scripted).

    ``llm.cassette`` is relative to the scenario file; without ``llm`` the default is
    :func:`default_cassette_path`. With ``must_exist`` (replay mode) a missing file is a
    :class:`ScenarioError` pointing at ``llm.cassette`` (or at ``id`` for the default); so is
    a cassette outside every one of ``roots`` (when given).
    """
    scenario_path = Path(scenario_path)
    llm = scenario.llm
    if llm is not None and (llm.script is not None or llm.reference):
        return None
    if reference:
        return None
    where: tuple[str, ...]
    if llm is not None and llm.cassette is not None:
        path, where = scenario_path.parent / llm.cassette, ("llm", "cassette")
    else:
        path, where = default_cassette_path(scenario.scenario_id, cassette_dir), ("id",)
    _check_path(path, scenario_path, where, "cassette")
    _confine(path, roots, scenario_path, where, "cassette")
    if must_exist and not path.is_file():
        _raise_at(
            scenario_path,
            where,
            f"cassette not found: {path}; record it with"
            f" `{rerecord_command([str(scenario_path)], 'once')}"
            " --diageval-base-url <endpoint> --diageval-model <model>`",
        )
    return path


def _check_path(path: Path, scenario_path: Path, loc: tuple[str, ...], what: str) -> None:
    """A ScenarioError at ``loc`` for a path that can name no file (core.evidence.yaml_limits)."""
    problem = path_problem(path)
    if problem is not None:
        shown = repr(str(path)) if len(str(path)) <= 120 else repr(str(path)[:120]) + "…"
        _raise_at(scenario_path, loc, f"the {what} {shown} cannot be opened: {problem}")


def _confine(
    path: Path, roots: Sequence[Path], scenario_path: Path, loc: tuple[str, ...], what: str
) -> None:
    """A ScenarioError unless ``path`` (symlinks resolved) lies inside one of ``roots``.

    Checked before the file is opened: a scenario must not read (and echo into an error
    message) ``/proc/self/environ`` or a secret next to the project.
    """
    if not roots:
        return
    real = path.resolve()
    if any(real.is_relative_to(root.resolve()) for root in roots):
        return
    allowed = ", ".join(str(root) for root in roots)
    _raise_at(
        scenario_path,
        loc,
        f"the {what} {path} is outside the project (allowed: {allowed}); it was not opened."
        " Move it inside, or list its folder in the ini option diageval_allowed_roots",
    )


# --------------------------------------------------------------------------- run-level


def duplicate_id_error(scenario_id: str, first: Path, second: Path) -> ScenarioError:
    """The error for ``second`` reusing ``first``'s id, at the ``id`` line (line 1 when the
    id is the file's stem)."""
    line, column = _key_position(second, ("id",))
    (message,) = duplicate_ids([(scenario_id, first), (scenario_id, second)])
    return ScenarioError(second, line or 1, column or 1, "id", message)


def duplicate_ids(pairs: Iterable[tuple[str, str | Path]]) -> list[str]:
    """One message per scenario id used by more than one file, naming every such file."""
    files: defaultdict[str, list[str]] = defaultdict(list)
    for scenario_id, path in pairs:
        files[scenario_id].append(str(path))
    return [
        f"duplicate scenario id {scenario_id!r} in {' and '.join(paths)}: ids must be unique"
        " in a run (give all but one of them a distinct `id:`)"
        for scenario_id, paths in files.items()
        if len(paths) > 1
    ]


def _raise_at(path: Path, loc: tuple[str, ...], message: str) -> NoReturn:
    """Raise a ScenarioError at the key ``loc`` (the file start when it cannot be found)."""
    line, column = _key_position(path, loc)
    raise ScenarioError(path, line, column, ".".join(loc), message)


def _key_position(path: Path, loc: tuple[str, ...]) -> tuple[int | None, int | None]:
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"), Loader=_Loader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None, None
    if root is None:
        return None, None
    return _errors.key_position(root, loc)
