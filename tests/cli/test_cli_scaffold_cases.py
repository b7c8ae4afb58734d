"""``diageval scaffold --from cases.csv|cases.jsonl -o DIR``: one scenario file per question,
from real files. The written files load (the loader, their world included), the scenario JSON
Schema accepts them, and ``--diageval-record=once`` records their cassettes; a bad row writes
nothing and says where it is."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import jsonschema
import pytest
import yaml

from pytest_diageval.cli.command import main
from pytest_diageval.core.evidence.world import load_world
from pytest_diageval.harness.format.loader import load_scenario, load_scenario_world
from pytest_diageval.harness.format.schema import scenario_json_schema
from support.fake_openai_server import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "tests" / "plugin" / "data" / "example-scenario.yaml"
HIGH_MEMORY = "只确认 order-service 是否存在 HighMemoryUsage 告警"
LONG_QUERY = (
    "payment-service 从 11:00 起响应变慢，请根据告警、日志和知识库判断是否与数据库连接池有关，"
    "并说明还缺哪些证据才能下结论，以及下一步应该查询哪些指标和日志来确认或排除这个猜测"
)
CSV = (
    "id,query,world,tags,verdict\n"
    f"high-memory,{HIGH_MEMORY},default,memory;narrow,PASS\n"
    f',"{LONG_QUERY}",worlds/slow.yaml,,LOW_CONFID|REJECT\n'
    ",inventory-service 有 HikariCP 连接池耗尽吗？,,negative,\n"
)
SLOW_NOW = datetime.fromisoformat("2026-07-09T08:00:00+08:00")
HEADER_LINE_1 = "# Scaffolded from cases.csv row 1. No script and no cassette yet: the"


def _world_file(folder: Path) -> Path:
    """A small world file beside the cases file (a path relative to it)."""
    path = folder / "worlds" / "slow.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    world = {"now": SLOW_NOW.isoformat(), "alerts": [], "logs": [], "knowledge": []}
    path.write_text(yaml.safe_dump(world), "utf-8")
    return path


def _write_cases(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, "utf-8")
    return path


def test_three_csv_rows_become_three_scenarios_that_load_and_pass_the_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = _write_cases(tmp_path / "cases", "cases.csv", CSV)
    world = _world_file(cases.parent)
    out = tmp_path / "scenarios" / "from-cases"

    assert main(["scaffold", "--from", str(cases), "-o", str(out)]) == 0

    assert capsys.readouterr().err == (
        f"diageval scaffold: wrote 3 scenario file(s) into {out}; record their cassettes with"
        " --diageval-record=once\n"
    )
    assert sorted(p.name for p in out.iterdir()) == [
        "cases-002.yaml",
        "cases-003.yaml",
        "high-memory.yaml",
    ]
    first = (out / "high-memory.yaml").read_text("utf-8")
    assert first.splitlines()[0] == HEADER_LINE_1
    assert yaml.safe_load(first) == {
        "id": "high-memory",
        "title": HIGH_MEMORY,
        "query": HIGH_MEMORY,
        "world": "default",
        "tags": ["memory", "narrow"],
        "expect": {"verdict": "PASS"},
    }
    second = yaml.safe_load((out / "cases-002.yaml").read_text("utf-8"))
    assert second["title"] == LONG_QUERY[:79] + "…"
    assert second["query"] == LONG_QUERY
    assert second["world"] == "../../cases/worlds/slow.yaml"  # relative to the written file
    assert second["expect"] == {"verdict": ["LOW_CONFID", "REJECT"]}
    assert "tags" not in second
    third_text = (out / "cases-003.yaml").read_text("utf-8")
    third = yaml.safe_load(third_text)
    assert (third["world"], third["tags"]) == ("default", ["negative"])
    assert third["expect"] == {"verdict": ["PASS", "LOW_CONFID", "REJECT"]}  # none named
    assert "# The row names no verdict: any verdict passes until you pin one." in third_text

    validator = jsonschema.Draft202012Validator(scenario_json_schema())
    for path in sorted(out.iterdir()):
        data = yaml.safe_load(path.read_text("utf-8"))
        assert [error.message for error in validator.iter_errors(data)] == [], path.name
        scenario = load_scenario(path)
        assert scenario.scenario_id == path.stem
        assert scenario.llm is None  # no script, no cassette: the default one gets recorded
        now = load_scenario_world(scenario, path).now
        assert now == (SLOW_NOW if path.stem == "cases-002" else load_world("default").now)
    assert load_scenario(out / "cases-002.yaml").world == "../../cases/worlds/slow.yaml"
    assert world.is_file()


def test_jsonl_rows_take_lists_and_write_the_same_scenarios(tmp_path: Path) -> None:
    rows = [
        {
            "id": "high-memory",
            "query": HIGH_MEMORY,
            "tags": ["memory", "narrow"],
            "verdict": "PASS",
        },
        {"query": LONG_QUERY, "world": "worlds/slow.yaml", "verdict": ["LOW_CONFID", "REJECT"]},
        {"query": "inventory-service 有 HikariCP 连接池耗尽吗？", "tags": ["negative"]},
    ]
    jsonl = "\n".join(json.dumps(row, ensure_ascii=False) for row in rows) + "\n\n"
    cases = _write_cases(tmp_path / "cases", "cases.jsonl", jsonl)
    csv_cases = _write_cases(tmp_path / "cases", "cases.csv", CSV)
    _world_file(cases.parent)

    assert main(["scaffold", "--from", str(cases), "-o", str(tmp_path / "a")]) == 0
    assert main(["scaffold", "--from", str(csv_cases), "-o", str(tmp_path / "b")]) == 0

    written = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert written == ["cases-002.yaml", "cases-003.yaml", "high-memory.yaml"]
    for name in written:  # the same scenario, whichever file it came from
        jsonl_text = (tmp_path / "a" / name).read_text("utf-8")
        csv_text = (tmp_path / "b" / name).read_text("utf-8")
        assert jsonl_text == csv_text.replace("cases.csv", "cases.jsonl")


BAD_CSV = (
    "id,query,world,tags,verdict\n"
    "a,q1,nowhere,x;skip,MAYBE\n"
    "a,,default,1bad,PASS|PASS\n"
    "ok,q3,default,fine,REJECT\n"
)


def test_bad_csv_rows_are_named_by_line_row_and_column_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = _write_cases(tmp_path, "cases.csv", BAD_CSV)
    out = tmp_path / "out"

    assert main(["scaffold", "--from", str(cases), "-o", str(out)]) == 2

    assert capsys.readouterr().err.splitlines() == [
        f"diageval scaffold: {cases}: nothing was written:",
        "cases.csv:2: row 1, column world: unknown world 'nowhere'; packaged worlds: default"
        " (or a YAML file path relative to cases.csv)",
        "cases.csv:2: row 1, column tags: 'skip': a pytest marker or operator, not a tag",
        "cases.csv:2: row 1, column verdict: unknown verdict 'MAYBE'; allowed: PASS,"
        " LOW_CONFID, REJECT (or several joined by |)",
        "cases.csv:3: row 2, column id: duplicate id 'a': row 1 has it too",
        "cases.csv:3: row 2, column query: missing: every row needs the question (a non-empty"
        " text)",
        "cases.csv:3: row 2, column tags: '1bad': a tag is an identifier (letters, digits, _)",
        "cases.csv:3: row 2, column verdict: PASS|PASS names a verdict twice",
    ]
    assert not out.exists()


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ('{"id": "A", "query": "q"}', "key id: duplicate id 'A': row 1 has it too"),
        ('{"tags": ["x"]}', "key query: missing: every row needs the question"),
        ('{"query": "q", "world": "w.yaml"}', "key world: unknown world 'w.yaml': no such file"),
        ('{"query": "q", "verdict": "FAIL"}', "key verdict: unknown verdict 'FAIL'"),
        ('{"query": "q", "tags": "x;y"}', "key tags: 'x;y' is not a list of tags"),
        ('{"query": "q", "tags": ["a-b"]}', "key tags: 'a-b': a tag is an identifier"),
        ('{"qeury": "q"}', "unknown key 'qeury'; allowed: id, query, world, tags, verdict"),
        ('["q"]', "a row must be a JSON object"),
        ('{"id": "has space", "query": "q"}', "key id: 'has space' is not a scenario id"),
    ],
)
def test_a_bad_jsonl_row_is_refused_with_its_line_and_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], row: str, problem: str
) -> None:
    cases = _write_cases(tmp_path, "cases.jsonl", '{"id": "a", "query": "q"}\n\n' + row + "\n")

    assert main(["scaffold", "--from", str(cases), "-o", str(tmp_path / "out")]) == 2

    (line,) = capsys.readouterr().err.splitlines()[1:]
    separator = ", " if problem.startswith("key ") else ": "
    assert line.startswith(f"cases.jsonl:3: row 2{separator}{problem}")
    assert not (tmp_path / "out").exists()


def test_existing_files_are_kept_unless_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = _write_cases(tmp_path, "cases.csv", "query,verdict\nq1,PASS\nq2,REJECT\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "cases-002.yaml").write_text("mine\n", "utf-8")

    assert main(["scaffold", "--from", str(cases), "-o", str(out)]) == 2
    assert capsys.readouterr().err.splitlines()[1:] == [
        f"{out / 'cases-002.yaml'}: exists; give --force to overwrite it"
    ]
    assert sorted(p.name for p in out.iterdir()) == ["cases-002.yaml"]  # nothing written
    assert (out / "cases-002.yaml").read_text("utf-8") == "mine\n"

    assert main(["scaffold", "--from", str(cases), "-o", str(out), "--force"]) == 0
    assert yaml.safe_load((out / "cases-002.yaml").read_text("utf-8"))["query"] == "q2"
    assert sorted(p.name for p in out.iterdir()) == ["cases-001.yaml", "cases-002.yaml"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--from", "c.csv"], "--from needs -o DIR, the folder to write the scenario files into"),
        (["x.yaml", "--from", "c.csv", "-o", "o"], "give either x.yaml or --from c.csv, not both"),
        ([], "give a cassette, a `diageval ask` SQLite file, or --from CASES"),
    ],
)
def test_from_needs_a_folder_and_no_cassette(
    capsys: pytest.CaptureFixture[str], arguments: list[str], message: str
) -> None:
    assert main(["scaffold", *arguments]) == 2
    assert capsys.readouterr().err == f"diageval scaffold: {message}\n"


def test_a_header_without_query_or_with_an_unknown_column_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for header, problem in [
        ("id,verdict", "the header needs a query column"),
        ("query,verdikt", "unknown column 'verdikt'; allowed: id, query, world, tags, verdict"),
    ]:
        cases = _write_cases(tmp_path, "cases.csv", f"{header}\na,PASS\n")
        assert main(["scaffold", "--from", str(cases), "-o", str(tmp_path / "out")]) == 2
        assert capsys.readouterr().err.splitlines()[1:] == [f"cases.csv:1: header: {problem}"]


def test_a_scaffolded_case_records_its_cassette_with_record_once(
    pytester: pytest.Pytester,
) -> None:
    cases = _write_cases(pytester.path, "cases.csv", f"id,query,verdict\nmem,{HIGH_MEMORY},PASS\n")
    out = pytester.path / "scenarios" / "from-cases"
    assert main(["scaffold", "--from", str(cases), "-o", str(out)]) == 0
    script = yaml.safe_load(EXAMPLE.read_text("utf-8"))["llm"]["script"]

    with FakeOpenAIServer(script) as server:
        recorded = pytester.runpytest(
            *("-p", "no:cacheprovider", "--diageval-record=once"),
            *("--diageval-base-url", server.base_url, "--diageval-model", "m"),
        )
    replayed = pytester.runpytest("-p", "no:cacheprovider")

    recorded.assert_outcomes(passed=1)
    cassette = out / "cassettes" / "mem.yaml"
    assert cassette.is_file()
    assert len(yaml.safe_load(cassette.read_text("utf-8"))["interactions"]) == len(script)
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines(["*mem *| PASS *| PASS *"])
