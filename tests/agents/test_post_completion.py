"""``post_completion`` sends what ``client.chat.completions.create`` sends, byte for byte.

The facade skips the SDK's params walk (see :func:`post_completion`); that is sound only while
the walk is the identity on our params. Every request of every shipped scenario (scripted
and cassette, re-asks included) is sent through both doors here and the requests compared:
body bytes, headers, method and URL.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

from pytest_diageval.agents import llm as llm_module
from pytest_diageval.agents.llm import post_completion
from pytest_diageval.harness.format.loader import load_scenario, resolve_cassette_path
from pytest_diageval.harness.format.registry import CheckRegistry, config_checks
from pytest_diageval.harness.runner import run_scenario
from pytest_diageval.harness.settings import RunSettings
from support.shipped import shipped_scenario_paths

REPO = Path(__file__).resolve().parents[2]
SHIPPED = shipped_scenario_paths()

ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "好"},
        }
    ],
}


def _sent(door: Any, request: dict[str, Any]) -> httpx2.Request:
    """The one HTTP request ``door(client, request)`` makes."""
    seen: list[httpx2.Request] = []

    def answer(sent: httpx2.Request) -> httpx2.Response:
        seen.append(sent)
        return httpx2.Response(200, json=ANSWER)

    http = openai.DefaultHttpxClient(transport=httpx2.MockTransport(answer))
    with openai.OpenAI(
        api_key="k", base_url="http://door.invalid/v1", max_retries=0, http_client=http
    ) as client:
        completion = door(client, copy.deepcopy(request))
    assert completion.choices[0].message.content == "好"
    (request_sent,) = seen
    return request_sent


def _through_create(client: openai.OpenAI, request: dict[str, Any]) -> Any:
    return client.chat.completions.create(**request)


def _shipped_requests(
    monkeypatch: pytest.MonkeyPatch, checks: CheckRegistry
) -> list[dict[str, Any]]:
    """The params of every request the shipped scenarios make, as the facade hands them on
    (``checks``: the project's, for a scenario that uses the root conftest.py's own key)."""
    requests: list[dict[str, Any]] = []

    def keep(client: openai.OpenAI, request: Any) -> Any:
        requests.append(copy.deepcopy(dict(request)))
        return post_completion(client, request)

    monkeypatch.setattr(llm_module, "post_completion", keep)
    for path in SHIPPED:
        scenario = load_scenario(path, checks)
        cassette = resolve_cassette_path(scenario, path, REPO / "cassettes")
        run = run_scenario(
            scenario, path, cassette=cassette, settings=RunSettings(), rerecord_command=""
        )
        assert run.error is None, f"{path}: {run.error}"
    return requests


def test_every_shipped_request_is_sent_exactly_as_create_sends_it(
    monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    requests = _shipped_requests(monkeypatch, config_checks(pytestconfig))
    monkeypatch.undo()
    assert len(requests) > 300  # every scenario, not a handful
    kinds = {tuple(sorted(request)) for request in requests}
    assert any("tools" in kind for kind in kinds)
    assert any("tool_choice" in kind for kind in kinds)
    roles = {message["role"] for request in requests for message in request["messages"]}
    assert roles == {"system", "user", "assistant", "tool"}
    for request in requests:
        ours, sdk = _sent(post_completion, request), _sent(_through_create, request)
        assert ours.content == sdk.content
        assert list(ours.headers.multi_items()) == list(sdk.headers.multi_items())
        assert (ours.method, str(ours.url)) == (sdk.method, str(sdk.url))


def test_the_body_keeps_creates_key_order_whatever_order_the_params_come_in() -> None:
    request = {
        "tool_choice": "required",
        "max_tokens": 9,
        "messages": [{"role": "user", "content": "问"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        "model": "m",
        "temperature": 0.0,
        "extra_headers": {"X-Diageval-Stage": "executor"},
    }
    ours = _sent(post_completion, request)
    assert ours.content == _sent(_through_create, request).content
    assert ours.content.startswith(b'{"messages":[{"role":"user","content":"\xe9\x97\xae"}],')
    assert ours.headers["x-diageval-stage"] == "executor"
    assert ours.headers["authorization"] == "Bearer k"


def test_an_extra_body_is_merged_as_creates_extra_body_is() -> None:
    """Request options per stage: keys of the client's own sit in create's order, the extra
    body's new keys after them; temperature and max_tokens may be left out."""
    request = {
        "model": "m",
        "messages": [{"role": "user", "content": "问"}],
        "max_tokens": 9,
        "extra_body": {"seed": 7, "reasoning_effort": "low", "chat_template_kwargs": {"a": 1}},
        "extra_headers": {"X-Diageval-Stage": "verifier"},
    }
    ours = _sent(post_completion, request)
    assert ours.content == _sent(_through_create, request).content
    assert ours.content.endswith(
        b'"max_tokens":9,"seed":7,"reasoning_effort":"low","chat_template_kwargs":{"a":1}}'
    )
    assert b"temperature" not in ours.content


@pytest.mark.parametrize("key", ["stream", "response_fromat"])
def test_a_param_create_would_treat_differently_is_refused(key: str) -> None:
    request = {"model": "m", "messages": [], key: True}
    with pytest.raises(TypeError, match=key):
        _sent(post_completion, request)
