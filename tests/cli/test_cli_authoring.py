"""The author-facing ``diageval`` commands: --version, --help, ask's failure and overrides,
``world`` (tool output with raw paths) and ``scaffold`` (a cassette to a scripted scenario)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pytest_diageval.cli.command import main
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.evidence.tools import Toolbox
from pytest_diageval.core.evidence.world import load_world
from pytest_diageval.harness.format.loader import load_scenario
from pytest_diageval.harness.runner import run_scenario
from pytest_diageval.harness.settings import RunSettings
from support.fake_openai_server import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "tests" / "plugin" / "data" / "example-scenario.yaml"
QUERY = "只确认 order-service 是否存在 HighMemoryUsage 告警"
KEY = "sk-" + "authoring-canary-000000000000000001"


def test_version_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as version:
        main(["--version"])
    assert version.value.code == 0
    assert capsys.readouterr().out == "diageval 0.1.0\n"
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "``" not in text
    assert "world" in text
    assert "scaffold" in text


def test_ask_that_fails_says_so_once_and_leaves_no_database(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeOpenAIServer([]) as server:
        base_url = server.base_url
    # The server is gone: the port refuses connections.
    code = main(["ask", QUERY, "--base-url", base_url, "--model", "m", "--timeout", "2"])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.err.count("LLM unavailable") == 1
    assert captured.err.startswith("诊断未完成: LLM unavailable (planner, round 1): ")
    assert list(tmp_path.iterdir()) == []


def test_ask_prints_the_overrides_the_code_made(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = yaml.safe_load(EXAMPLE.read_text("utf-8"))["llm"]["script"]
    binding = script[2]["content"]["claims"][0]["evidence_bindings"][0]
    binding["evidence_excerpt"] = "HighMemoryUsage resolved, service=order-service, current=12%"
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    db = tmp_path / "audit.sqlite"
    with FakeOpenAIServer(script) as server:
        code = main(["ask", QUERY, "--base-url", server.base_url, "--model", "m", "--db", str(db)])
    out = capsys.readouterr().out
    assert code == 0
    assert "model verdict: PASS 1.0" in out
    overrides = [line for line in out.splitlines() if line.startswith("override ")]
    assert any(
        line.startswith("override gatekeeper.reject: ") and "-> REJECT (" in line
        for line in overrides
    )
    assert "verdict: REJECT" in out
    assert db.is_file()
    Store(db).close()


def test_world_prints_the_output_and_every_ref_to_cite(
    capsys: pytest.CaptureFixture[str],
) -> None:
    arguments = {"service": "order-service", "keywords": ["内存"]}
    assert main(["world", "query_logs", json.dumps(arguments, ensure_ascii=False)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "query_logs on world default: success=true evidence_status=supported"
        " source_invocation_id=1 (in a run: its call number)"
    )
    refs = out[
        out.index("evidence refs (cite raw_path; quote evidence_excerpt from the text):") + 1 :
    ]
    logs = Toolbox(load_world("default")).call("query_logs", arguments)["logs"]
    assert len(refs) == len(logs) == 5
    assert refs[4].startswith("  $.logs[4]  ")
    assert "内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB" in refs[4]


def test_world_says_how_a_no_hit_may_be_cited(capsys: pytest.CaptureFixture[str]) -> None:
    arguments = '{"service": "inventory-service", "keywords": ["HikariCP"]}'
    assert main(["world", "query_logs", arguments]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(
        "query_logs on world default: success=true evidence_status=no_evidence"
    )
    assert out[-1] == (
        "evidence refs: none (no hit). A no-hit supports only a negative_observation: cite"
        " raw_path '$.logs' with the message '未找到匹配的日志' as excerpt"
    )


def test_world_refuses_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["world", "query_logs", "[1]"]) == 2
    assert capsys.readouterr().err == "diageval world: the arguments must be a JSON object\n"
    assert main(["world", "no_such_tool", "{}"]) == 2
    assert capsys.readouterr().err.startswith("diageval world: ")


def test_scaffold_turns_a_cassette_into_a_scripted_scenario_that_replays_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cassette = REPO / "cassettes" / "live-high-memory.yaml"
    assert main(["scaffold", str(cassette), "--id", "scaffolded"]) == 0
    path = tmp_path / "scaffolded.yaml"
    path.write_text(capsys.readouterr().out, "utf-8")

    scenario = load_scenario(path)
    recorded = yaml.safe_load(cassette.read_text("utf-8"))["interactions"]
    assert scenario.query == QUERY
    assert scenario.llm is not None
    assert scenario.llm.script is not None
    assert len(scenario.llm.script) == len(recorded)
    # The scripted replay reaches the verdict the cassette replay reaches.
    live = REPO / "scenarios" / "live" / "live-high-memory.yaml"
    settings = RunSettings()
    replay = run_scenario(
        load_scenario(live), live, cassette=cassette, settings=settings, rerecord_command=""
    )
    scripted = run_scenario(scenario, path, cassette=None, settings=settings, rerecord_command="")
    assert scripted.error is None
    assert replay.result is not None
    assert scripted.result is not None
    assert scripted.result.final_verdict == replay.result.final_verdict
    assert scripted.result.final_answer == replay.result.final_answer


def test_scaffold_turns_an_ask_session_into_a_scripted_scenario(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = yaml.safe_load(EXAMPLE.read_text("utf-8"))["llm"]["script"]
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    db = tmp_path / "ask.sqlite"
    with FakeOpenAIServer(script) as server:
        assert (
            main(["ask", QUERY, "--base-url", server.base_url, "--model", "m", "--db", str(db)])
            == 0
        )
    asked = capsys.readouterr().out

    assert main(["scaffold", str(db), "--id", "from-ask"]) == 0
    path = tmp_path / "from-ask.yaml"
    path.write_text(capsys.readouterr().out, "utf-8")

    scenario = load_scenario(path)
    assert scenario.query == QUERY
    assert scenario.expect.verdict == "PASS"
    assert scenario.llm is not None
    assert [entry.stage for entry in scenario.llm.script or []] == [
        "planner",
        "executor",
        "executor",
        "verifier",
    ]
    scripted = run_scenario(
        scenario, path, cassette=None, settings=RunSettings(), rerecord_command=""
    )
    assert scripted.result is not None
    assert scripted.result.final_verdict == "PASS"
    assert scripted.result.final_answer in asked


def test_scaffold_of_an_empty_audit_file_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "empty.sqlite"
    Store(db).close()
    assert main(["scaffold", str(db)]) == 2
    assert capsys.readouterr().err == (
        "diageval scaffold: the SQLite file holds no diagnosis session\n"
    )
