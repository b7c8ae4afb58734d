"""The author-facing ``diageval`` commands: --version, --help, ask's failure and overrides,
``world`` (tool output with raw paths) and ``scaffold`` (a cassette to a scripted scenario)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
import yaml

from pytest_diageval.cli.command import main
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.evidence.tools import Toolbox
from pytest_diageval.core.evidence.world import load_world
from pytest_diageval.harness.cassettes.rerecord import read_metadata, write_metadata
from pytest_diageval.harness.format.loader import load_scenario
from pytest_diageval.harness.runner import run_scenario
from pytest_diageval.harness.settings import RunSettings
from support.fake_openai_server import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "tests" / "plugin" / "data" / "example-scenario.yaml"
PACKAGE_WORLDS = REPO / "src" / "pytest_diageval" / "worlds"
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


def test_scaffold_of_a_session_whose_verifier_was_re_asked_keeps_both_requests(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = yaml.safe_load(EXAMPLE.read_text("utf-8"))["llm"]["script"]
    cut = {"stage": "verifier", "raw_arguments": '{"verdict": "PA', "finish_reason": "length"}
    script.insert(len(script) - 1, cut)  # the verifier's answer is cut, its re-ask is good
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    db = tmp_path / "ask.sqlite"
    with FakeOpenAIServer(script) as server:
        argv = ["ask", QUERY, "--base-url", server.base_url, "--model", "m", "--db", str(db)]
        assert main(argv) == 0
    capsys.readouterr()

    assert main(["scaffold", str(db), "--id", "reasked"]) == 0
    path = tmp_path / "reasked.yaml"
    path.write_text(capsys.readouterr().out, "utf-8")
    scenario = load_scenario(path)
    assert scenario.llm is not None
    entries = scenario.llm.script or []
    assert [entry.stage for entry in entries][-2:] == ["verifier", "verifier"]
    assert entries[-2].raw is not None
    assert "cut off at max_tokens" in entries[-2].raw
    scripted = run_scenario(
        scenario, path, cassette=None, settings=RunSettings(), rerecord_command=""
    )
    assert scripted.result is not None
    assert scripted.result.final_verdict == "PASS"


def test_scaffold_of_an_empty_audit_file_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "empty.sqlite"
    Store(db).close()
    assert main(["scaffold", str(db)]) == 2
    assert capsys.readouterr().err == (
        "diageval scaffold: the SQLite file holds no diagnosis session\n"
    )


def _model_verdicts(scenario_text: str) -> list[str]:
    script = yaml.safe_load(scenario_text)["llm"]["script"]
    return [e["content"]["verdict"] for e in script if e["stage"] == "verifier" and "content" in e]


def _recorded_verifier_verdicts(cassette: Path) -> list[str]:
    """The verdict of each verifier answer that parsed as JSON, in recording order."""
    verdicts = []
    for interaction in yaml.safe_load(cassette.read_text("utf-8"))["interactions"]:
        headers = {k.lower(): v for k, v in interaction["request"]["headers"].items()}
        if headers.get("x-diageval-stage") != ["verifier"]:
            continue
        answer = json.loads(interaction["response"]["body"]["string"])
        for call in answer["choices"][0]["message"].get("tool_calls") or []:
            try:
                verdicts.append(json.loads(call["function"]["arguments"])["verdict"])
            except (ValueError, KeyError):
                continue
    return verdicts


def test_scaffold_expects_the_codes_verdict_and_the_scaffold_passes_as_written(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    # The scaffold scripts what the model said and expects what the code made of it.
    live = REPO / "scenarios" / "live" / "live-high-memory.yaml"
    replayed = run_scenario(
        load_scenario(live),
        live,
        cassette=REPO / "cassettes" / "live-high-memory.yaml",
        settings=RunSettings(),
        rerecord_command="",
    ).result
    assert replayed is not None
    assert replayed.final_verdict is not None
    cassette = pytester.path / "recorded" / "cassettes" / "high-memory.yaml"
    cassette.parent.mkdir(parents=True)
    shutil.copy(REPO / "cassettes" / "live-high-memory.yaml", cassette)
    target = pytester.path / "scenarios" / "high-memory.yaml"
    target.parent.mkdir()

    assert main(["scaffold", str(cassette), "-o", str(target)]) == 0

    assert capsys.readouterr().err == f"diageval scaffold: wrote {target}\n"
    text = target.read_text("utf-8")
    assert _model_verdicts(text) == _recorded_verifier_verdicts(cassette)
    scenario = yaml.safe_load(text)
    verdict = replayed.final_verdict
    assert scenario["expect"] == {"verdict": verdict}
    assert scenario["world"] == "default"
    rounds = len(replayed.rounds)
    assert f"# Replayed, the code reaches {verdict} (score " in text
    assert f", {rounds} round{'s' if rounds > 1 else ''}" in text
    result = pytester.runpytest("-p", "no:cacheprovider", str(target))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*high-memory*| {verdict} *| {verdict} *"])


def _record_on_a_custom_world(pytester: pytest.Pytester) -> Path:
    """The example scenario recorded through the plugin (fake server) on a world where the
    order-service heap alert reads 97%: the model still quotes 91% and says PASS."""
    world = yaml.safe_load((PACKAGE_WORLDS / "default.yaml").read_text("utf-8"))
    alert = next(a for a in world["alerts"] if a["alert_name"] == "HighMemoryUsage")
    alert["current"], alert["samples"] = "97%", [91.0, 93.5, 97.0]
    (pytester.path / "worlds").mkdir()
    (pytester.path / "worlds" / "hot.yaml").write_text(
        yaml.safe_dump(world, allow_unicode=True), "utf-8"
    )
    scenario = yaml.safe_load(EXAMPLE.read_text("utf-8"))
    script = scenario["llm"]["script"]
    scenario.update(id="hot", world="../worlds/hot.yaml", llm={"cassette": "cassettes/hot.yaml"})
    scenario["expect"] = {"verdict": "REJECT"}
    path = pytester.path / "scenarios" / "hot.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(scenario, allow_unicode=True), "utf-8")
    with FakeOpenAIServer(script) as server:
        recorded = pytester.runpytest(
            *("-p", "no:cacheprovider", "--diageval-record=once"),
            *("--diageval-base-url", server.base_url, "--diageval-model", "m"),
        )
    recorded.assert_outcomes(passed=1)
    path.unlink()  # the cassette alone is what scaffold starts from
    return pytester.path / "scenarios" / "cassettes" / "hot.yaml"


def test_scaffold_replays_a_cassette_on_the_custom_world_it_was_recorded_on(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = _record_on_a_custom_world(pytester)
    metadata = read_metadata(cassette)
    assert metadata is not None
    assert metadata.world == "../../worlds/hot.yaml"  # the recording names its world
    target = pytester.path / "scenarios" / "hot" / "hot.yaml"
    target.parent.mkdir()

    assert main(["scaffold", str(cassette), "-o", str(target)]) == 0

    capsys.readouterr()
    text = target.read_text("utf-8")
    assert _model_verdicts(text) == ["PASS"]
    scenario = yaml.safe_load(text)
    assert scenario["world"] == "../../worlds/hot.yaml"
    assert scenario["expect"] == {"verdict": "REJECT"}
    assert "on world ../../worlds/hot.yaml (recorded)." in text
    result = pytester.runpytest("-p", "no:cacheprovider", str(target))
    result.assert_outcomes(passed=1)

    # A cassette that names no world (recorded before they did) replays stale on the
    # default world: scaffold says so, and --world tells it the recording's world.
    write_metadata(cassette, dataclasses.replace(metadata, world=None))
    assert main(["scaffold", str(cassette)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"diageval scaffold: {cassette} does not replay on world default")
    assert "stale cassette" in err
    assert err.endswith("(give the world it was recorded on with --world)\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(pytester.path)
        assert main(["scaffold", str(cassette), "--world", "worlds/hot.yaml"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["world"] == "worlds/hot.yaml"
    assert printed["expect"] == {"verdict": "REJECT"}


def test_scaffold_finds_the_world_of_the_scenario_that_names_the_cassette(tmp_path: Path) -> None:
    """A cassette recorded before its metadata named the world: the scenario naming it says."""
    shipped = REPO / "cassettes" / "live-forged-trap.yaml"
    data = yaml.safe_load(shipped.read_text("utf-8"))
    assert data["diageval"].pop("world") == "../scenarios/worlds/default-injected-instruction.yaml"
    (tmp_path / "cassettes").mkdir()
    cassette = tmp_path / "cassettes" / "trap.yaml"
    cassette.write_text(yaml.safe_dump(data, allow_unicode=True), "utf-8")
    world = REPO / "scenarios" / "worlds" / "default-injected-instruction.yaml"
    (tmp_path / "scenarios").mkdir()
    named = yaml.safe_load((REPO / "scenarios" / "live" / "live-forged-trap.yaml").read_text())
    named["llm"]["cassette"] = "../cassettes/trap.yaml"
    named["world"] = str(world)
    (tmp_path / "scenarios" / "trap.yaml").write_text(yaml.safe_dump(named, allow_unicode=True))
    assert main(["scaffold", str(cassette), "-o", str(tmp_path / "x.yaml")]) == 0
    scenario = yaml.safe_load((tmp_path / "x.yaml").read_text("utf-8"))
    assert (tmp_path / scenario["world"]).resolve() == world  # relative to the written file
    assert scenario["expect"] == {"verdict": "REJECT"}
    header = (tmp_path / "x.yaml").read_text("utf-8").splitlines()[1]
    assert header.endswith(f"(of {tmp_path / 'scenarios' / 'trap.yaml'}).")


def test_scaffold_takes_the_world_a_cassette_recorded(tmp_path: Path) -> None:
    cassette = REPO / "cassettes" / "live-forged-trap.yaml"
    assert main(["scaffold", str(cassette), "-o", str(tmp_path / "x.yaml")]) == 0
    scenario = yaml.safe_load((tmp_path / "x.yaml").read_text("utf-8"))
    world = REPO / "scenarios" / "worlds" / "default-injected-instruction.yaml"
    assert (tmp_path / scenario["world"]).resolve() == world
    header = (tmp_path / "x.yaml").read_text("utf-8").splitlines()[1]
    world_name = "../scenarios/worlds/default-injected-instruction.yaml"
    assert header.endswith(f"on world {world_name} (recorded).")
