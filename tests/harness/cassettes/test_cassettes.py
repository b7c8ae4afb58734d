"""Cassettes: recorded against a real local socket, replayed offline, stale and leak checks.

Traffic is real: the ``openai`` client (and instructor for the planner) through ``LLM``,
the packaged prompts, the default world's tool output, sent to a local OpenAI-compatible
server that answers from a script.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
import urllib3.connectionpool
import yaml
from vcr.persisters.filesystem import CassetteNotFoundError
from vcr.request import Request

from pytest_diageval.agents.llm import LLM, LLMConfig, assistant_message, tool_result_message
from pytest_diageval.agents.planner import run_planner
from pytest_diageval.agents.prompts import load_prompt
from pytest_diageval.agents.request_options import RequestOptions
from pytest_diageval.core.evidence.tools import TOOL_DEFINITIONS, Toolbox
from pytest_diageval.core.evidence.world import default_world
from pytest_diageval.harness.cassettes.cassette_file import Utf8Persister
from pytest_diageval.harness.cassettes.cassette_session import (
    RECORD_MODES,
    SCRUBBED,
    CassetteError,
    CassetteSession,
    MissingCassetteError,
    SecretLeakError,
    StaleCassetteError,
    UnplayedInteractionsError,
    canonical_body,
    cassette_transport,
    request_diff,
    scan_for_secrets,
)
from pytest_diageval.harness.cassettes.rerecord import (
    RecordingMetadata,
    read_metadata,
    write_metadata,
)
from support.shipped import shipped_files

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/, for the support package
from support.fake_openai_server import FakeOpenAIServer

# Built at run time so that no key-like literal sits in the source tree.
CANARY_KEY = "sk-" + "canary-0123456789abcdefCANARY"
QUERY = "order-service 内存使用率持续升高，请确认是否存在 HighMemoryUsage 告警。"
CONCLUSION = "结论：order-service JVM 堆内存 3.8GB/4GB，内存使用率 91%。"
RERECORD = "pytest scenarios/memory.yaml --diageval-record=rewrite"
SCRIPT: list[dict[str, Any]] = [
    {"stage": "planner", "content": {"plan": "先查告警再查日志", "steps": ["查询告警"]}},
    {
        "stage": "executor",
        "tool_calls": [{"name": "query_metrics", "arguments": {"service": "order-service"}}],
    },
    {"stage": "executor", "raw": CONCLUSION},
]


def run_pipeline(llm: LLM, *, query: str = QUERY, calls: int = 3) -> list[Any]:
    """Planner, then the executor's tool loop: up to three model calls, results as dicts."""
    planner = run_planner(llm, query, round=1)
    assert planner.plan is not None, planner.error
    results: list[Any] = [planner.plan.model_dump()]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": load_prompt("executor")},
        {"role": "user", "content": f"{query}\n计划：{planner.plan.plan}"},
    ]
    for _ in range(calls - 1):
        completion = llm.chat(messages, stage="executor", round=1, tools=TOOL_DEFINITIONS)
        results.append(completion.model_dump())
        message = completion.choices[0].message
        messages.append(assistant_message(message))
        for call in message.tool_calls or []:
            output = Toolbox(default_world()).call(
                call.function.name,  # type: ignore[union-attr]
                json.loads(call.function.arguments),  # type: ignore[union-attr]
            )
            messages.append(tool_result_message(call.id, output))
    return results


def make_llm(base_url: str, api_key: str = CANARY_KEY) -> LLM:
    # max_retries stays at the default (2): a stale request must not be retried anyway.
    config = LLMConfig(base_url=base_url, model="gpt-test", api_key=api_key)
    return LLM(config, transport=cassette_transport())


def record(
    path: Path, script: list[dict[str, Any]], *, mode: str = "once", calls: int = 3, **server: Any
) -> tuple[list[Any], FakeOpenAIServer]:
    with FakeOpenAIServer(script, **server) as fake:
        session = CassetteSession(path, record_mode=mode, secrets=[CANARY_KEY])  # type: ignore[arg-type]
        with session as handle, make_llm(fake.base_url) as llm:
            results = run_pipeline(llm, calls=calls)
        handle.verify()
    return results, fake


def interactions(path: Path) -> list[dict[str, Any]]:
    return list(yaml.safe_load(path.read_text("utf-8"))["interactions"])


@pytest.fixture
def blocked_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every socket connect fails and is remembered."""
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError("network blocked by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    return attempts


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, list[Any], FakeOpenAIServer]:
    path = tmp_path / "cassettes" / "memory.yaml"
    results, fake = record(path, SCRIPT, extra_headers={"Set-Cookie": "session=abc123"})
    return path, results, fake


# ------------------------------------------------------------------ record, replay


def test_replay_offline_gives_the_recorded_responses(
    recorded: tuple[Path, list[Any], FakeOpenAIServer], blocked_network: list[Any]
) -> None:
    path, recorded_results, _ = recorded
    with pytest.raises(OSError, match="network blocked"):
        socket.create_connection(("127.0.0.1", 9))  # the block is real
    blocked_network.clear()
    # Another host, port and key than at recording time: none of them is matched.
    with CassetteSession(path) as handle, make_llm("http://elsewhere.invalid/v1", "k" * 20) as llm:
        replayed = run_pipeline(llm)
    handle.verify()
    assert replayed == recorded_results
    assert replayed[2]["choices"][0]["message"]["content"] == CONCLUSION
    assert handle.play_count == 3
    assert handle.recorded_count == 0
    assert blocked_network == []


def test_canary_key_reached_the_server_but_not_the_cassette(
    recorded: tuple[Path, list[Any], FakeOpenAIServer],
) -> None:
    path, _, fake = recorded
    assert [r.headers["authorization"] for r in fake.received] == [f"Bearer {CANARY_KEY}"] * 3
    assert any(name.startswith("x-stainless") for name in fake.received[0].headers)
    text = path.read_text("utf-8")
    assert CANARY_KEY not in text
    assert "canary" not in text.lower()
    scan_for_secrets(path, [CANARY_KEY])  # passes
    first = interactions(path)[0]
    assert sorted(first["request"]["headers"]) == [
        "accept",
        "content-type",
        "x-diageval-round",
        "x-diageval-stage",
    ]
    assert first["request"]["headers"]["x-diageval-stage"] == ["planner"]
    assert "set-cookie" not in {name.lower() for name in first["response"]["headers"]}


def test_cassette_is_readable_yaml_with_real_chinese(tmp_path: Path) -> None:
    path = tmp_path / "gzip.yaml"
    record(path, SCRIPT, gzip=True)
    text = path.read_text("utf-8")
    assert "order-service 内存使用率持续升高" in text
    assert "JVM 堆内存 3.8GB/4GB" in text
    assert "\\u" not in text
    assert "!!binary" not in text
    response = interactions(path)[2]["response"]
    assert "content-encoding" not in response["headers"]
    assert json.loads(response["body"]["string"])["choices"][0]["message"]["content"] == CONCLUSION
    # Bodies are literal blocks: one JSON field per line, not one long escaped line.
    assert 'body: |-\n      {\n        "messages": [' in text


def test_once_with_an_existing_cassette_replays_without_the_server(
    recorded: tuple[Path, list[Any], FakeOpenAIServer], blocked_network: list[Any]
) -> None:
    path, recorded_results, _ = recorded
    before = path.read_text("utf-8")
    with (
        CassetteSession(path, record_mode="once") as handle,
        make_llm("http://x.invalid/v1") as llm,
    ):
        assert run_pipeline(llm) == recorded_results
    handle.verify()
    assert blocked_network == []
    assert path.read_text("utf-8") == before


# ------------------------------------------------------------------ stale, unplayed


def test_changed_message_is_a_stale_cassette_with_stage_diff_and_command(
    recorded: tuple[Path, list[Any], FakeOpenAIServer], blocked_network: list[Any]
) -> None:
    path, _, _ = recorded
    changed = QUERY.replace("HighMemoryUsage", "HighCPUUsage")
    session = CassetteSession(path, rerecord_command=RERECORD)
    with (
        session as handle,
        make_llm("http://x.invalid/v1") as llm,
        pytest.raises(StaleCassetteError) as excinfo,
    ):
        run_pipeline(llm, query=changed)
    message = str(excinfo.value)
    assert message.startswith(f"stale cassette {path}: request #1 of this run (stage planner, ")
    assert "the recorded request at the same position (stage planner, round 1)" in message
    diff_lines = message.splitlines()
    assert any(line.startswith("-") and "HighMemoryUsage" in line for line in diff_lines)
    assert any(line.startswith("+") and "HighCPUUsage" in line for line in diff_lines)
    assert "--- recorded" in diff_lines
    assert message.endswith(f"Re-record this scenario with: {RERECORD}")
    assert handle.cassette.requests_seen == 1  # raised once, not retried by the SDK
    assert blocked_network == []
    with pytest.raises(StaleCassetteError) as again:
        handle.verify()
    assert again.value is excinfo.value


def test_stale_executor_request_names_executor_and_its_round(
    recorded: tuple[Path, list[Any], FakeOpenAIServer],
) -> None:
    path, _, _ = recorded
    with CassetteSession(path) as handle, make_llm("http://x.invalid/v1") as llm:
        run_planner(llm, QUERY, round=1)
        messages = [{"role": "user", "content": "换一个问题：payment-service CPU 告警。"}]
        with pytest.raises(
            StaleCassetteError, match=r"request #2 of this run \(stage executor, round 2\)"
        ):
            llm.chat(messages, stage="executor", round=2, tools=TOOL_DEFINITIONS)
    assert handle.stale


def test_shorter_path_leaves_unplayed_interactions(
    recorded: tuple[Path, list[Any], FakeOpenAIServer],
) -> None:
    path, _, _ = recorded
    session = CassetteSession(path, rerecord_command=RERECORD)
    with session as handle, make_llm("http://x.invalid/v1") as llm:
        run_pipeline(llm, calls=2)
    with pytest.raises(UnplayedInteractionsError) as excinfo:
        handle.verify()
    assert str(excinfo.value) == (
        f"cassette {path}: 1 of 3 recorded interaction(s) were never replayed: "
        "#3 stage executor, round 1. The run took a shorter path than when it was recorded.\n"
        f"Re-record this scenario with: {RERECORD}"
    )


def test_longer_path_says_the_cassette_ran_out(
    recorded: tuple[Path, list[Any], FakeOpenAIServer],
) -> None:
    path, _, _ = recorded
    with CassetteSession(path), make_llm("http://x.invalid/v1") as llm:
        run_pipeline(llm)
        with pytest.raises(StaleCassetteError, match="holds only 3 recorded request"):
            run_planner(llm, QUERY, round=1)  # the same planner request, but already played


def test_replay_of_a_missing_cassette_names_it_and_the_command(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(MissingCassetteError) as excinfo:
        CassetteSession(path, rerecord_command=RERECORD).__enter__()
    assert str(excinfo.value) == (
        f"cassette {path} does not exist (record mode none replays only)\n"
        f"Re-record this scenario with: {RERECORD}"
    )


def test_unreadable_cassette_is_an_error_not_an_empty_cassette(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("interactions: [\n", "utf-8")
    expected = f"cassette {path} is not valid YAML: line 2, column 1: did not find expected node"
    with pytest.raises(CassetteError, match=re.escape(expected)):
        CassetteSession(path).__enter__()


def test_unknown_record_mode_lists_the_allowed_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="none, once, new_episodes, all, rewrite; got 'always'"):
        CassetteSession(tmp_path / "x.yaml", record_mode="always")  # type: ignore[arg-type]
    assert RECORD_MODES == ("none", "once", "new_episodes", "all", "rewrite")


# ------------------------------------------------------------------ record modes


def test_new_episodes_replays_the_known_and_records_the_new(tmp_path: Path) -> None:
    path = tmp_path / "grow.yaml"
    record(path, SCRIPT[:2], calls=2)
    assert len(interactions(path)) == 2
    results, fake = record(path, SCRIPT[2:], mode="new_episodes")
    assert len(fake.received) == 1  # only the new request went to the server
    assert fake.received[0].headers["x-diageval-stage"] == "executor"
    assert results[2]["choices"][0]["message"]["content"] == CONCLUSION
    assert len(interactions(path)) == 3


def test_all_re_records_every_request_and_replaces_the_old_answers(
    recorded: tuple[Path, list[Any], FakeOpenAIServer],
) -> None:
    path, _, _ = recorded
    second = [*SCRIPT[:2], {"stage": "executor", "raw": "结论：第二次录制。"}]
    results, fake = record(path, second, mode="all")
    assert len(fake.received) == 3
    assert results[2]["choices"][0]["message"]["content"] == "结论：第二次录制。"
    text = path.read_text("utf-8")
    assert len(interactions(path)) == 3
    assert "第二次录制" in text
    assert CONCLUSION not in text


def test_rewrite_deletes_the_cassette_and_records_anew(
    recorded: tuple[Path, list[Any], FakeOpenAIServer],
) -> None:
    path, _, _ = recorded
    _, fake = record(path, SCRIPT[:2], mode="rewrite", calls=2)
    assert len(fake.received) == 2
    stages = [i["request"]["headers"]["x-diageval-stage"] for i in interactions(path)]
    assert stages == [["planner"], ["executor"]]
    assert CONCLUSION not in path.read_text("utf-8")


# ------------------------------------------------------------------ secrets


def test_secret_in_uri_request_and_response_is_scrubbed(tmp_path: Path) -> None:
    path = tmp_path / "echo.yaml"
    echo = [*SCRIPT[:2], {"stage": "executor", "raw": f"你的密钥是 {CANARY_KEY}"}]
    query = f"{QUERY}（我的密钥 {CANARY_KEY}）"
    with FakeOpenAIServer(echo) as fake:
        # Some gateways put a token in the URL path; the server answers any …/chat/completions.
        base_url = fake.base_url.replace("/v1", f"/{CANARY_KEY}/v1")
        session = CassetteSession(path, record_mode="once", secrets=[CANARY_KEY])
        with session, make_llm(base_url) as llm:
            results = run_pipeline(llm, query=query)
    assert results[2]["choices"][0]["message"]["content"] == f"你的密钥是 {CANARY_KEY}"
    assert CANARY_KEY in fake.received[0].body.decode()
    text = path.read_text("utf-8")
    assert CANARY_KEY not in text
    first, *_, last = interactions(path)
    assert first["request"]["uri"].endswith(f"/{SCRUBBED}/v1/chat/completions")
    assert f"（我的密钥 {SCRUBBED}）" in first["request"]["body"]
    assert f"你的密钥是 {SCRUBBED}" in last["response"]["body"]["string"]


@pytest.mark.parametrize(
    ("planted", "kind"),
    [
        ("sk-" + "proj-Leak0123456789abcdefABCDEF", "an sk-… API key"),
        ("Bearer " + "eyJ" + "hbGciOiJIUzI1NiJ9.payload", "a Bearer token"),
    ],
)
def test_planted_key_in_a_recording_is_a_secret_leak(
    tmp_path: Path, planted: str, kind: str
) -> None:
    path = tmp_path / "leak.yaml"
    leaky = [*SCRIPT[:2], {"stage": "executor", "raw": f"调试信息：{planted}"}]
    with pytest.raises(SecretLeakError) as excinfo:
        record(path, leaky)
    message = str(excinfo.value)
    location, _, rest = message.partition(": ")
    file_name, _, line = location.rpartition(":")
    # A first recording is staged beside the cassette; a leak stops it there, so nothing with
    # the secret ever sits at the cassette's path (where `git add` would pick it up).
    staged = path.with_name(".leak.yaml.recording")
    assert file_name == str(staged)
    assert not path.exists()
    assert planted in staged.read_text("utf-8").splitlines()[int(line) - 1]
    assert rest.startswith(f"the cassette contains {kind} ({planted[:6]}…)")
    assert planted not in message


def test_scan_finds_a_given_secret_and_ignores_key_like_words(tmp_path: Path) -> None:
    path = tmp_path / "plain.yaml"
    key_like_words = "sk-" + "not-a-real-key-just-words"  # built: no key-like literal
    path.write_text(f"a: disk-usage-monitoring-alert-rule\nb: {key_like_words}\n")
    scan_for_secrets(path, [CANARY_KEY])
    path.write_text(f"a: ok\nb: x{CANARY_KEY[3:]}y\n")
    scan_for_secrets(path, [CANARY_KEY])  # a fragment is not the secret
    path.write_text(f"a: ok\nb: {CANARY_KEY}\n")
    with pytest.raises(SecretLeakError, match=r"plain\.yaml:2: the cassette contains a given"):
        scan_for_secrets(path, [CANARY_KEY])


# ------------------------------------------------------------------ matching, diff


def chat_body(**fields: Any) -> bytes:
    body = {"messages": [{"role": "user", "content": "查询 order-service"}], "model": "m"}
    body.update(fields)
    return json.dumps(body, ensure_ascii=False).encode()


def test_canonical_body_ignores_layout_order_and_unmatched_fields() -> None:
    compact = chat_body(temperature=0)
    spaced = json.dumps(json.loads(compact), indent=2, sort_keys=True).encode()
    assert canonical_body(spaced) == canonical_body(compact)
    assert canonical_body(chat_body(temperature=0.0)) == canonical_body(compact)
    assert canonical_body(chat_body(temperature=0, user="someone")) == canonical_body(compact)
    assert canonical_body(chat_body(temperature=0.7)) != canonical_body(compact)
    assert canonical_body(chat_body(tool_choice="auto")) != canonical_body(chat_body())
    changed = compact.replace(b"order-service", b"user-service")
    assert canonical_body(changed) != canonical_body(compact)


def test_extra_body_keys_match_and_the_answers_length_bounds_do_not() -> None:
    """A seed or a reasoning effort chooses the answer, so it must match; ``max_tokens`` only
    bounds it (a replay sends the recorded bound anyway), and a changed default bound must
    not turn every cassette stale."""
    base = canonical_body(chat_body(temperature=0, max_tokens=512))
    assert canonical_body(chat_body(temperature=0, max_tokens=4096)) == base
    assert canonical_body(chat_body(temperature=0)) == base
    assert canonical_body(chat_body(temperature=0, max_completion_tokens=9)) == base
    assert canonical_body(chat_body(temperature=0, max_tokens=512, seed=7)) != base
    low = chat_body(temperature=0, reasoning_effort="low")
    assert canonical_body(low) != canonical_body(chat_body(temperature=0, reasoning_effort="high"))
    # An omitted temperature is another request than temperature 0.
    assert canonical_body(chat_body()) != canonical_body(chat_body(temperature=0))


def test_the_diff_shows_max_tokens_and_extra_body_keys() -> None:
    url = "http://h/v1/chat/completions"
    recorded = Request("POST", url, chat_body(temperature=0, max_tokens=512, seed=7), {})
    current = Request("POST", url, chat_body(temperature=0.7, reasoning_effort="low"), {})
    changed = [line for line in request_diff(recorded, current).splitlines() if line[:1] in "+-"]
    assert changed == [
        "--- recorded",
        "+++ this run",
        "-temperature: 0",
        "-max_tokens: 512",
        "-seed: 7",
        "+temperature: 0.7",
        '+reasoning_effort: "low"',
    ]


def test_diff_is_short_and_shows_only_the_changed_sentence() -> None:
    sentences = "".join(f"第{n}条：order-service 堆内存 {n}%。" for n in range(200))
    old = [{"role": "system", "content": sentences}, {"role": "user", "content": "问题"}]
    new = [{"role": "system", "content": sentences.replace("第7条", "第七条")}, old[1]]
    recorded = Request("POST", "http://h/v1/chat/completions", chat_body(messages=old), {})
    current = Request("POST", "http://h/v1/chat/completions", chat_body(messages=new), {})
    diff = request_diff(recorded, current).splitlines()
    assert [line for line in diff if line[:1] in "+-" and line[:3] not in ("---", "+++")] == [
        "-第7条：order-service 堆内存 7%。",
        "+第七条：order-service 堆内存 7%。",
    ]
    everything = [{"role": "system", "content": "\n".join(str(n) for n in range(500))}]
    big = Request("POST", "http://h/v1/chat/completions", chat_body(messages=everything), {})
    long_diff = request_diff(recorded, big).splitlines()
    assert len(long_diff) == 41
    assert long_diff[-1].endswith("more diff lines)")


# ------------------------------------------------------------------ loading and patching


def test_crlf_cassette_loads_and_replays_as_the_lf_one(
    recorded: tuple[Path, list[Any], FakeOpenAIServer], blocked_network: list[Any]
) -> None:
    """Cassettes are read as bytes and decoded (no line-ending translation): YAML itself
    must turn a Windows checkout's CRLF into the same requests, answers and metadata."""
    path, recorded_results, _ = recorded
    persister = Utf8Persister(CassetteError)
    given = RequestOptions({"executor": 0.7}, {"verifier": None}, {None: {"seed": 7}})
    options = RequestOptions.from_metadata(given.to_metadata())  # per stage, as read back
    for metadata in (
        None,
        RecordingMetadata("http://127.0.0.1:9/v1", "gpt-test", 12.5),
        RecordingMetadata("http://127.0.0.1:9/v1", "gpt-test", 12.5, request_options=options),
    ):
        if metadata is not None:
            write_metadata(path, metadata)
        crlf = path.with_name("crlf.yaml")
        crlf.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
        assert crlf.read_bytes().count(b"\r\n") == path.read_bytes().count(b"\n")
        lf_requests, lf_responses = persister.load_cassette(str(path), None)
        requests, responses = persister.load_cassette(str(crlf), None)
        assert [r.body for r in requests] == [r.body for r in lf_requests]
        assert [r.uri for r in requests] == [r.uri for r in lf_requests]
        assert responses == lf_responses
        assert b"\r" not in requests[1].body
        assert read_metadata(crlf) == read_metadata(path)
        assert read_metadata(crlf) == (
            metadata or RecordingMetadata(lf_requests[0].uri.split("/chat/")[0], "gpt-test")
        )
    with CassetteSession(crlf) as handle, make_llm("http://x.invalid/v1") as llm:
        assert run_pipeline(llm) == recorded_results
    handle.verify()
    assert blocked_network == []


def test_blank_cassette_is_no_recording_and_is_recorded_over(tmp_path: Path) -> None:
    path = tmp_path / "blank.yaml"
    path.write_bytes(b" \r\n\n")
    for missing in (path, tmp_path / "absent.yaml"):
        with pytest.raises(CassetteNotFoundError):
            Utf8Persister(CassetteError).load_cassette(str(missing), None)
    _, fake = record(path, SCRIPT)
    assert len(fake.received) == 3
    assert len(interactions(path)) == 3


def test_a_session_patches_httpx2_and_no_other_http_library(
    recorded: tuple[Path, list[Any], FakeOpenAIServer],
) -> None:
    """Model calls go through httpx2 only; patching the eight other libraries vcrpy knows
    on every cassette entry and exit was a third of a replayed cassette's setup."""
    path, _, _ = recorded
    handle_request = httpx2.HTTPTransport.handle_request
    connection = http.client.HTTPConnection
    pool_connection = urllib3.connectionpool.HTTPConnectionPool.ConnectionCls
    with CassetteSession(path):
        assert httpx2.HTTPTransport.handle_request is not handle_request
        assert http.client.HTTPConnection is connection
        assert urllib3.connectionpool.HTTPConnectionPool.ConnectionCls is pool_connection
    assert httpx2.HTTPTransport.handle_request is handle_request


SHIPPED_CASSETTES = shipped_files("cassettes", "*.yaml")


@pytest.mark.parametrize("path", SHIPPED_CASSETTES[:4], ids=lambda path: path.stem)
def test_shipped_cassette_loads_from_bytes_as_from_text(path: Path) -> None:
    """libyaml reads the cassette's bytes: the same document as from the decoded text."""
    requests, responses = Utf8Persister(CassetteError).load_cassette(str(path), None)
    document = yaml.load(path.read_text("utf-8"), Loader=yaml.SafeLoader)
    expected = document["interactions"]
    assert [r.body.decode("utf-8") for r in requests] == [i["request"]["body"] for i in expected]
    assert [r.uri for r in requests] == [i["request"]["uri"] for i in expected]
    assert [r["body"]["string"] for r in responses] == [
        i["response"]["body"]["string"].encode("utf-8") for i in expected
    ]
    assert len(requests) >= 3


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("interactions: []\n".encode("utf-16"), "is not UTF-8 text: invalid start byte"),
        (b"version: 1\ninteractions: [\xed\xa0\x80]\n", "is not UTF-8 text: invalid continuation"),
        (
            b"version: 1\ninteractions: [\x00]\n",
            "is not valid YAML: unacceptable character #x0000: control characters are not"
            ' allowed in "<unicode string>", position 26',
        ),
        (b"interactions: [\n", "is not valid YAML: line 2, column 1: did not find expected node"),
    ],
    ids=["utf-16", "surrogate", "control-character", "unclosed"],
)
def test_broken_cassette_errors_read_as_from_text(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "broken.yaml"
    path.write_bytes(content)
    with pytest.raises(CassetteError, match=re.escape(f"cassette {path} {message}")):
        Utf8Persister(CassetteError).load_cassette(str(path), None)


def test_a_replay_compares_each_request_with_its_own_recording_and_by_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """vcrpy asks whether a request is in the cassette, then plays it; played interactions
    are skipped, not matched again, so the n-th request meets its own recording first. An
    unchanged replay sends every request exactly as recorded: none is canonicalised."""
    from pytest_diageval.harness.cassettes import cassette_session as cassettes
    from pytest_diageval.harness.cassettes import diff as cassette_diff
    from pytest_diageval.harness.format.loader import load_scenario
    from pytest_diageval.harness.runner import run_scenario
    from pytest_diageval.harness.settings import RunSettings

    repo = Path(__file__).resolve().parents[3]
    scenario_path = repo / "scenarios" / "live" / "live-high-memory.yaml"
    compared: list[bool] = []
    canonicalised: list[bytes | None] = []

    def counting_matcher(current: Request, recorded: Request) -> bool:
        compared.append(cassette_diff.body_matcher(current, recorded))
        return compared[-1]

    def counting_canonical(body: bytes | None) -> str:
        canonicalised.append(body)
        return canonical_body(body)

    monkeypatch.setitem(cassettes._VCR.matchers, "diageval_body", counting_matcher)
    monkeypatch.setattr(cassette_diff, "canonical_body", counting_canonical)
    run = run_scenario(
        load_scenario(scenario_path),
        scenario_path,
        cassette=repo / "cassettes" / "live-high-memory.yaml",
        settings=RunSettings(),
        rerecord_command="",
    )

    assert run.error is None
    requests = run.usage.total.requests
    assert requests >= 4
    assert compared == [True] * (2 * requests)  # quadratic, with misses, before
    assert canonicalised == []


@pytest.mark.parametrize(
    ("current", "recorded", "same"),
    [
        (b'{"a":1,"b":"\xe5\xa5\xbd"}', '{\n  "a": 1,\n  "b": "\u597d"\n}', True),
        (b'{"a":1.0}', '{"a": 1}', False),  # 1.0 is not 1 in a request body
        (b'{"b":1,"a":2}', '{"a": 2, "b": 1}', False),  # not the bytes the SDK sends
        (b"not json", "not json", False),
    ],
)
def test_sent_form_is_the_compact_json_the_sdk_sends(
    current: bytes, recorded: str, same: bool
) -> None:
    from pytest_diageval.harness.cassettes.diff import sent_form

    assert (sent_form(recorded.encode()) == current) is same
