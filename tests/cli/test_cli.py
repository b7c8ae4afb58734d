"""The ``diageval`` command line against a real local OpenAI-compatible HTTP server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_diageval.cli.command import main
from pytest_diageval.core.evidence.store import Store
from support.fake_openai_server import FakeOpenAIServer

QUERY = "请确认 inventory-service 是否存在 HikariCP 连接池耗尽，只确认这一件事。"
NEGATIVE = "未检索到 inventory-service 的 HikariCP 连接池耗尽日志。"
SCRIPT = [
    {"stage": "planner", "content": {"plan": "查日志", "steps": ["query_logs"]}},
    {
        "stage": "executor",
        "tool_calls": [
            {
                "name": "query_logs",
                "arguments": {"service": "inventory-service", "keywords": ["HikariCP"]},
            }
        ],
    },
    {
        "stage": "executor",
        "content": {
            "answer_version": "2",
            "diagnosis_summary": NEGATIVE,
            "claims": [
                {
                    "claim_id": "claim-1",
                    "claim_type": "negative_observation",
                    "claim_text": NEGATIVE,
                    "evidence_bindings": [
                        {
                            "tool_name": "query_logs",
                            "source_invocation_id": 1,
                            "raw_path": "$.logs",
                            "evidence_excerpt": "未找到匹配的日志",
                        }
                    ],
                }
            ],
            "hypotheses": [],
            "recommended_actions": [],
            "missing_info": [],
            "user_facing_answer": NEGATIVE,
        },
    },
    {
        "stage": "verifier",
        "content": {
            "verdict": "PASS",
            "groundedness_score": 1.0,
            "critical_fact_count": 1,
            "facts_checked": [
                {
                    "fact": NEGATIVE,
                    "claim_id": "claim-1",
                    "is_critical": True,
                    "verification": "direct_evidence",
                    "detail": "query_logs 返回 logs=[]",
                    "evidence_refs": [{"trace_ref": "trace-1", "source_invocation_ids": [1]}],
                }
            ],
            "rationale": "无命中",
        },
    },
]


def test_ask_without_key_or_endpoint_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DIAGEVAL_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert main(["ask", QUERY]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "OPENAI_API_KEY" in err
    assert "--base-url" in err


def test_ask_runs_a_diagnosis_prints_answer_and_audit_and_keeps_the_session(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + "cli-canary-0000000000000000000001")
    db = tmp_path / "audit.sqlite"
    with FakeOpenAIServer(SCRIPT) as server:
        code = main(
            [
                "ask",
                QUERY,
                "--base-url",
                server.base_url,
                "--model",
                "m",
                "--db",
                str(db),
                "--session-id",
                "cli-1",
            ]
        )
    out = capsys.readouterr().out
    assert code == 0
    assert NEGATIVE not in out  # the executor's prose; the answer renders the search
    assert "在 inventory-service 的日志中检索关键词「HikariCP」：无结果" in out
    assert "verdict: PASS" in out
    assert "gatekeeper: none" in out
    assert server.received[0].headers["authorization"].endswith("0001")
    assert Store(db).get_session("cli-1")["final_verdict"] == "PASS"


def test_schema_prints_the_committed_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    committed = Path(__file__).parents[2] / "scenarios" / "scenario.schema.json"
    assert capsys.readouterr().out == committed.read_text("utf-8")


def test_schema_world_prints_the_committed_world_schema(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["schema", "--world"]) == 0
    committed = Path(__file__).parents[2] / "scenarios" / "world.schema.json"
    assert capsys.readouterr().out == committed.read_text("utf-8")


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["world", "query_logs", '{"service": "order-service"}'], 141),
        (["schema"], 141),
        (["--help"], 0),  # argparse drops an error writing its own messages
    ],
    ids=["world", "schema", "help"],
)
def test_a_closed_pipe_ends_a_command_quietly_without_a_traceback(
    argv: list[str], code: int
) -> None:
    """``diageval world … | head``: the reader is gone before the command writes a byte (its
    end of the pipe is closed before the command starts), so every write meets EPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        ended = subprocess.run(
            [sys.executable, "-c", ENTRY_POINT, *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=120,
        )
    finally:
        os.close(write_end)

    assert ended.stderr == ""
    assert ended.returncode == code  # 141 = 128 + SIGPIPE: what a shell reports for `… | head`


ENTRY_POINT = "import sys; from pytest_diageval.cli.command import main; sys.exit(main())"
"""What the installed ``diageval`` script runs (pyproject's ``[project.scripts]``)."""


def test_ask_with_points_offered_asks_the_executor_for_them(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``diageval ask --points offer``: the contract's schema lets each claim point."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + "cli-canary-0000000000000000000002")
    with FakeOpenAIServer(SCRIPT) as server:
        endpoint = ["--base-url", server.base_url, "--model", "m"]
        code = main(
            ["ask", QUERY, *endpoint, "--db", str(tmp_path / "a.sqlite"), "--points", "offer"]
        )
    capsys.readouterr()
    assert code == 0
    submits = [
        tool["function"]["parameters"]["properties"]["claims"]["items"]["properties"]
        for request in server.received
        for tool in json.loads(request.body).get("tools", [])
        if tool["function"]["name"] == "submit_evidence_contract"
    ]
    assert submits
    assert all("points" in claim for claim in submits)
