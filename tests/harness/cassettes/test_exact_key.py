"""The key in ``OPENAI_API_KEY`` whatever its length (issue 41): the after-write scan finds the
exact key in a recorded value, and a short key in no field name of the file's own; the
transport under the SDK hands the run answers with the key scrubbed, headers and body alike."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from pytest_diageval.harness.cassettes.cassette_session import SecretLeakError, scan_for_secrets
from pytest_diageval.harness.cassettes.secrets import SCRUBBED, ScrubbingTransport

CASSETTE = """interactions:
- request:
    body: |-
      {
        "model": "m",
        "messages": []
      }
    method: POST
    uri: http://127.0.0.1/v1/chat/completions
  response:
    body:
      string: '{"choices": []}'
    status:
      code: 200
      message: OK
version: 1
"""


@pytest.mark.parametrize("key", ["est", "ode", "tus", "ess"])
def test_a_short_key_that_is_part_of_a_field_name_is_no_leak(tmp_path: Path, key: str) -> None:
    path = tmp_path / "cassette.yaml"
    path.write_text(CASSETTE, "utf-8")
    assert key in CASSETTE

    scan_for_secrets(path, [key])  # "request", "model", "messages": the file's own words


@pytest.mark.parametrize("key", ["k3y", "Zq9", "x"])
def test_a_short_key_in_a_recorded_value_is_found(tmp_path: Path, key: str) -> None:
    path = tmp_path / "cassette.yaml"
    path.write_text(CASSETTE.replace('"model": "m"', f'"model": "m-{key}"'), "utf-8")

    with pytest.raises(SecretLeakError, match=r"cassette\.yaml:5: the cassette contains a given"):
        scan_for_secrets(path, [key])


class _Echo(httpx2.BaseTransport):
    """Answers every request with its own key, in a header and in the body."""

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        key = request.headers["authorization"].removeprefix("Bearer ")
        body = {"error": {"message": f"bad key {key}", "param": key, "quote": f'"{key}"'}}
        return httpx2.Response(401, headers={"x-key": key}, json=body)


@pytest.mark.parametrize("key", ["k3y", 'a"b\\c', "sk-test-0123456789abcdefghij"])
def test_the_transport_scrubs_an_echoed_key_from_headers_and_body(key: str) -> None:
    transport = ScrubbingTransport(_Echo(), [key])
    request = httpx2.Request("POST", "http://x/v1", headers={"authorization": f"Bearer {key}"})

    response = transport.handle_request(request)

    assert response.status_code == 401
    assert response.headers["x-key"] == SCRUBBED
    body = json.loads(response.read())
    assert body["error"] == {
        "message": f"bad key {SCRUBBED}",
        "param": SCRUBBED,
        "quote": f'"{SCRUBBED}"',
    }
    assert key not in response.text
