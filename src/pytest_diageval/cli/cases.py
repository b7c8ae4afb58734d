"""``diageval scaffold --from cases.jsonl|cases.csv -o DIR``: one scenario file per question.

Each row of the cases file (a JSON object per line, or a CSV row under a header) is one
question: ``query`` (required), ``id`` (default ``<file stem>-<row>``), ``world`` (a packaged
name or a YAML path relative to the cases file; default ``default``), ``tags`` (a list in
JSONL, ``;``-separated in CSV) and ``verdict`` (the expected verdict, or several joined by
``|``). Each becomes ``DIR/<id>.yaml``: id, title (the query's first line), query, world, tags
and ``expect: verdict`` (every verdict when the row names none), with no ``llm``: the scenario's
cassette is the default one, ``<cassette dir>/<id>.yaml``, which ``--diageval-record=once``
records when it is missing. Every row is checked first, and one bad row (its file line, row
number and column in the message) writes nothing; existing files are kept unless ``force``.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from pytest_diageval.agents.reference import reference_script
from pytest_diageval.core.evidence.world import load_world

__all__ = [
    "ANY_VERDICT",
    "CASE_KEYS",
    "VERDICTS",
    "Case",
    "CasesError",
    "read_cases",
    "scaffold_cases",
    "scenario_text",
]

CASE_KEYS = ("id", "query", "world", "tags", "verdict")
VERDICTS = ("PASS", "LOW_CONFID", "REJECT")
ANY_VERDICT = list(VERDICTS)
"""``expect: verdict`` of a row that names none: the recording passes whatever it reaches."""
_TITLE_CHARS = 80
_LISTED_PROBLEMS = 20


class CasesError(ValueError):
    """Rows that cannot become scenarios (or files that would be overwritten); nothing was
    written. One line per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:_LISTED_PROBLEMS]
        more = len(problems) - len(shown)
        tail = [f"… and {more} more problem{'s' if more != 1 else ''}"] if more > 0 else []
        super().__init__("\n".join([*shown, *tail]))


Answers = Literal["record", "reference", "script"]
"""Who answers a scaffolded scenario: a model, recorded later (no ``llm``); the reference agent
(``llm: {reference: true}``); or the reference agent's answers written out as ``llm.script``,
for an author to edit one of them into a failure case."""


@dataclass(frozen=True)
class Case:
    """One row, checked: what its scenario file holds."""

    row: int
    scenario_id: str
    query: str
    world: str
    """The ``world:`` value as the cases file gives it (a name, or a path from that file)."""
    world_path: Path | None
    """The world file, when ``world`` is a path."""
    tags: list[str]
    verdict: str | list[str] | None


@dataclass(frozen=True)
class _Row:
    number: int
    line: int
    values: dict[str, Any]


def read_cases(source: Path) -> list[Case]:
    """Every row of ``source`` checked; :class:`CasesError` lists every bad row."""
    problems: list[str] = []
    cases: list[Case] = []
    seen: dict[str, int] = {}
    worlds: dict[str, str | None] = {}
    rows = 0
    for row in _rows(source, problems):  # a row's problems in the order of the file
        rows += 1
        case = _case(source, row, problems, worlds, seen)
        if case is not None:
            cases.append(case)
    if not rows and not problems:
        problems.append(f"{source.name}: no case in the file (one question per row)")
    if problems:
        raise CasesError(problems)
    return cases


def scaffold_cases(
    source: Path, output: Path, *, force: bool = False, answers: Answers = "record"
) -> list[Path]:
    """Write one scenario file per case of ``source`` into ``output``; all or nothing.
    ``answers``: who answers them (:data:`Answers`)."""
    if output.exists() and not output.is_dir():
        raise CasesError([f"-o {output}: not a folder (with --from, -o names the folder)"])
    cases = read_cases(source)
    targets = [output / f"{case.scenario_id}.yaml" for case in cases]
    texts = [scenario_text(case, source, output, answers=answers) for case in cases]
    existing = [path for path in targets if path.exists()]
    if existing and not force:
        raise CasesError([f"{path}: exists; give --force to overwrite it" for path in existing])
    output.mkdir(parents=True, exist_ok=True)
    for path, text in zip(targets, texts, strict=True):
        path.write_text(text, "utf-8")
    return targets


def scenario_text(case: Case, source: Path, output: Path, *, answers: Answers = "record") -> str:
    """The scenario file of one case, to be written into ``output``."""
    world = case.world
    if case.world_path is not None:
        world = Path(os.path.relpath(case.world_path, output.absolute())).as_posix()
    scenario: dict[str, Any] = {
        "id": case.scenario_id,
        "title": _title(case.query),
        "query": case.query,
        "world": world,
    }
    if case.tags:
        scenario["tags"] = case.tags
    if answers == "reference":
        scenario["llm"] = {"reference": True}
    elif answers == "script":
        world_spec = case.world_path if case.world_path is not None else case.world
        script = reference_script(case.query, load_world(world_spec))
        scenario["llm"] = {"script": script}
    scenario["expect"] = {"verdict": ANY_VERDICT if case.verdict is None else case.verdict}
    header = [
        f"# Scaffolded from {source.name} row {case.row}. No script and no cassette yet: the",
        f"# default cassette (<cassette dir>/{case.scenario_id}.yaml) is recorded by",
        "# pytest --diageval-record=once. Then write the title and the expectations.",
    ]
    if answers != "record":
        what = "answers" if answers == "reference" else "'s answers are the script below"
        header = [
            f"# Scaffolded from {source.name} row {case.row}. The built-in reference agent{what}",
            "# (docs/reference-agent.md). Then write the title and the expectations.",
        ]
    if case.verdict is None:
        header.append("# The row names no verdict: any verdict passes until you pin one.")
    text = yaml.safe_dump(
        scenario, allow_unicode=True, sort_keys=False, width=100, default_flow_style=None
    )
    return "\n".join(header) + "\n" + text


def _title(query: str) -> str:
    first = " ".join(query.split())
    return first if len(first) <= _TITLE_CHARS else first[: _TITLE_CHARS - 1] + "…"


# --------------------------------------------------------------------------- reading


def _rows(source: Path, problems: list[str]) -> Iterator[_Row]:
    try:
        text = source.read_text("utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        problems.append(f"{source}: cannot read the cases file: {error}")
        return
    suffix = source.suffix.lower()
    if suffix == ".csv":
        yield from _csv_rows(source, text, problems)
    elif suffix == ".jsonl":
        yield from _jsonl_rows(source, text, problems)
    else:
        problems.append(f"{source}: give a .jsonl or .csv cases file")


def _jsonl_rows(source: Path, text: str, problems: list[str]) -> Iterator[_Row]:
    number = 0
    for line, content in enumerate(text.splitlines(), start=1):
        if not content.strip():
            continue
        number += 1
        where = f"{source.name}:{line}: row {number}: "
        try:
            values = json.loads(content)
        except json.JSONDecodeError as error:
            problems.append(where + f"not JSON ({error.msg}, column {error.colno})")
            continue
        if not isinstance(values, dict):
            problems.append(where + 'a row must be a JSON object such as {"query": "…"}')
            continue
        unknown = [key for key in values if key not in CASE_KEYS]
        if unknown:
            problems.append(where + _unknown(unknown, "key"))
            continue
        yield _Row(number, line, {k: v for k, v in values.items() if v is not None})


def _csv_rows(source: Path, text: str, problems: list[str]) -> Iterator[_Row]:
    reader = csv.reader(text.splitlines(keepends=True))
    header = next(reader, None)
    if header is None:
        return
    names = [name.strip() for name in header]
    unknown = [name for name in names if name not in CASE_KEYS]
    if unknown or "query" not in names or len(set(names)) != len(names):
        problem = _unknown(unknown, "column") if unknown else "the header needs a query column"
        if len(set(names)) != len(names):
            problem = "a column is named twice in the header"
        problems.append(f"{source.name}:1: header: {problem}")
        return
    number, line = 0, reader.line_num + 1
    for cells in reader:
        start, line = line, reader.line_num + 1
        if not any(cell.strip() for cell in cells):
            continue
        number += 1
        if len(cells) > len(names):
            problems.append(
                f"{source.name}:{start}: row {number}: {len(cells)} cells under a header of"
                f" {len(names)} columns"
            )
            continue
        values: dict[str, Any] = {
            name: cell.strip() for name, cell in zip(names, cells, strict=False) if cell.strip()
        }
        if "tags" in values:
            values["tags"] = [tag.strip() for tag in values["tags"].split(";") if tag.strip()]
        yield _Row(number, start, values)


def _unknown(names: list[str], kind: str) -> str:
    listed = ", ".join(repr(name) for name in names)
    return f"unknown {kind} {listed}; allowed: {', '.join(CASE_KEYS)}"


def _where(source: Path, row: _Row, key: str) -> str:
    kind = "column" if source.suffix.lower() == ".csv" else "key"
    return f"{source.name}:{row.line}: row {row.number}, {kind} {key}: "


# --------------------------------------------------------------------------- checking


def _case(
    source: Path,
    row: _Row,
    problems: list[str],
    worlds: dict[str, str | None],
    seen: dict[str, int],
) -> Case | None:
    before = len(problems)
    values = row.values

    def bad(key: str, message: str) -> None:
        problems.append(_where(source, row, key) + message)

    scenario_id = _scenario_id(source, row, bad)
    if scenario_id:  # ids name the files: two that differ only in case collide on some disks
        earlier = seen.setdefault(scenario_id.casefold(), row.number)
        if earlier != row.number:
            bad("id", f"duplicate id {scenario_id!r}: row {earlier} has it too")
    query = values.get("query")
    if not isinstance(query, str) or not query.strip():
        bad("query", "missing: every row needs the question (a non-empty text)")
        query = ""
    world, world_path = _world(source, values.get("world", "default"), bad, worlds)
    tags = _tags(values.get("tags", []), bad)
    verdict = _verdict(values.get("verdict"), bad)
    if len(problems) > before:
        return None
    case = Case(row.number, scenario_id, query.strip(), world, world_path, tags, verdict)
    return case if _valid_scenario(source, row, case, problems) else None


def _scenario_id(source: Path, row: _Row, bad: Any) -> str:
    from pytest_diageval.harness.format.scenario import ID_PATTERN

    given = row.values.get("id")
    if given is None:
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", source.stem).strip("-._") or "case"
        return f"{stem}-{row.number:03d}"
    if not isinstance(given, str) or not re.match(ID_PATTERN, given) or len(given) > 100:
        bad(
            "id",
            f"{given!r} is not a scenario id (letters, digits, '_', '.', '-', starting with a"
            " letter or digit, at most 100 characters)",
        )
        return ""
    return given


def _world(
    source: Path, spec: Any, bad: Any, checked: dict[str, str | None]
) -> tuple[str, Path | None]:
    from pytest_diageval.core.evidence.world import WorldError, available_worlds, load_world

    if not isinstance(spec, str) or not spec.strip():
        bad("world", "a world is a packaged name or a YAML file path (text)")
        return "", None
    spec = spec.strip()
    is_name = not (
        "/" in spec or "\\" in spec or spec.endswith((".yaml", ".yml")) or spec[0] == "."
    )
    if is_name:
        if spec not in available_worlds():
            bad(
                "world",
                f"unknown world {spec!r}; packaged worlds: {', '.join(available_worlds())} (or a"
                f" YAML file path relative to {source.name})",
            )
        return spec, None
    path = (source.absolute().parent / spec).resolve()
    if spec not in checked:
        checked[spec] = None
        if not path.name.endswith((".yaml", ".yml")):
            checked[spec] = f"a world file must be a .yaml or .yml file: {spec}"
        elif not path.is_file():
            checked[spec] = f"unknown world {spec!r}: no such file (looked for {path})"
        else:
            try:
                load_world(path, path.parent)
            except WorldError as error:
                checked[spec] = f"invalid world {spec}: {error}"
    problem = checked[spec]
    if problem is not None:
        bad("world", problem)
    return spec, path


def _tags(tags: Any, bad: Any) -> list[str]:
    from pytest_diageval.harness.format.scenario import RESERVED_TAGS, TAG_PATTERN

    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        bad("tags", f'{tags!r} is not a list of tags (JSONL: ["a", "b"]; CSV: a;b)')
        return []
    wrong = [tag for tag in tags if not re.match(TAG_PATTERN, tag)]
    reserved = sorted(set(tags) & RESERVED_TAGS)
    twice = sorted({tag for tag in tags if tags.count(tag) > 1})
    if wrong:
        bad("tags", f"{', '.join(map(repr, wrong))}: a tag is an identifier (letters, digits, _)")
    if reserved:
        bad("tags", f"{', '.join(map(repr, reserved))}: a pytest marker or operator, not a tag")
    if twice:
        bad("tags", f"{', '.join(twice)} given twice")
    return tags


def _verdict(value: Any, bad: Any) -> str | list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        parts = [part.strip() for part in value.split("|")]
    elif isinstance(value, list) and all(isinstance(part, str) for part in value):
        parts = [part.strip() for part in value]
    else:
        bad("verdict", f"{value!r} is not a verdict")
        return None
    unknown = [part for part in parts if part not in VERDICTS]
    if unknown or not parts:
        bad(
            "verdict",
            f"unknown verdict {', '.join(map(repr, unknown))}; allowed: {', '.join(VERDICTS)}"
            " (or several joined by |)",
        )
        return None
    if len(set(parts)) != len(parts):
        bad("verdict", f"{'|'.join(parts)} names a verdict twice")
        return None
    return parts[0] if len(parts) == 1 else parts


def _valid_scenario(source: Path, row: _Row, case: Case, problems: list[str]) -> bool:
    """What the scenario model itself refuses (the same checks the loader makes)."""
    from pydantic import ValidationError

    from pytest_diageval.harness.format.scenario import Scenario

    data = yaml.safe_load(scenario_text(case, source, source.absolute().parent))
    try:
        Scenario.model_validate(data)
    except ValidationError as error:
        for detail in error.errors():
            field = ".".join(str(part) for part in detail["loc"]) or "row"
            problems.append(f"{source.name}:{row.line}: row {row.number}: {field}: {detail['msg']}")
        return False
    return True
