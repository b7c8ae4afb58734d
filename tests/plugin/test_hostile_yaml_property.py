"""Arbitrary YAML where a scenario's values go (issue 41): deep, wide, tagged, huge numbers,
bad dates, aliases. Whatever the document, reading it ends in the loader's own message
(:class:`ScenarioError`) and a collection run fails that file alone: the good scenario
beside it passes, and nothing ends in a traceback or an INTERNALERROR.

Examples are derandomised (the same documents on every run, as CI needs).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_diageval.harness.format.loader import (
    ScenarioError,
    load_scenario,
    load_scenario_world,
    resolve_cassette_path,
)

EXAMPLE = Path(__file__).resolve().parent / "data" / "example-scenario.yaml"
KEYS = ("notes", "title", "query", "id", "tags", "world", "expect", "llm")

TRICKY = [
    "2026-13-01",
    "2026-07-08 25:00:00",
    "2026-07-08T11:20:00+08:00",
    "!!int abc",
    "!!float abc",
    "!!timestamp nope",
    "!!bool maybe",
    "!!str 5",
    "!!binary x",
    "!!python/name:os.system",
    "!local x",
    "0x" + "f" * 30,
    "0o777",
    "1_000",
    "1:20",
    ".inf",
    "-.nan",
    "true",
    "1.0",
    "~",
    "*nowhere",
    "<<",
    "''",
]

scalars = st.one_of(
    st.integers(min_value=-(10**600), max_value=10**600).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=12).map(json.dumps),
    st.sampled_from(TRICKY),
)
names = st.sampled_from(["a", "b", "verdict", "rounds", "max", "now", "logs", "script", "1"])


def _flow(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    lists = st.lists(children, max_size=6).map(lambda items: "[" + ", ".join(items) + "]")
    maps = st.lists(st.tuples(names, children), max_size=6).map(
        lambda pairs: "{" + ", ".join(f"{key}: {value}" for key, value in pairs) + "}"
    )
    return st.one_of(lists, maps)


values = st.recursive(scalars, _flow, max_leaves=25)


@st.composite
def documents(draw: st.DrawFn, depths: tuple[int, ...] = (0, 0, 1, 63, 64, 65, 500, 990)) -> str:
    """The example scenario with one key's value (or the whole file) replaced by hostile
    YAML: nested up to 1,000 levels, wide, anchored and aliased."""
    value = draw(values)
    depth = draw(st.sampled_from(depths))
    value = "[" * depth + value + "]" * depth
    if draw(st.booleans()):
        value = f"&anchor {value}"
        value = f"[{value}, " + ", ".join(["*anchor"] * draw(st.integers(1, 50))) + "]"
    key = draw(st.sampled_from((*KEYS, "")))
    if not key:
        return value + "\n"
    data = yaml.safe_load(EXAMPLE.read_text("utf-8"))
    data.pop(key, None)
    data["id"] = data.get("id", "bad")
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=1000)
    return text + f"{key}: {value}\n"


def _with(key: str, raw: str) -> str:
    data = yaml.safe_load(EXAMPLE.read_text("utf-8"))
    data.pop(key, None)
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False) + f"{key}: {raw}\n"


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],  # one file, rewritten each time
)
@given(text=documents())
def test_reading_any_document_ends_in_the_loaders_message(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, "utf-8")
    message = ""
    try:
        scenario = load_scenario(path)
        load_scenario_world(scenario, path, roots=[tmp_path])
        resolve_cassette_path(scenario, path, tmp_path / "cassettes", roots=[tmp_path])
    except ScenarioError as error:  # anything else escapes and fails the test
        message = str(error)
    assert message == "" or message.startswith(str(path))


@settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(text=documents(depths=(0, 65, 990, 990)))
@example(text=_with("notes", "[" * 990 + "]" * 990))  # each of these ended main's session
@example(text=_with("expect", "{tokens: {max: " + "9" * 5_000 + "}}"))
@example(text=_with("notes", "!!bool maybe"))
def test_collection_of_any_document_runs_the_good_scenario_beside_it(
    pytester: pytest.Pytester, text: str
) -> None:
    folder = pytester.path / "scenarios"
    folder.mkdir(exist_ok=True)
    good = yaml.safe_load(EXAMPLE.read_text("utf-8"))
    good["id"], good["expect"] = "good", {"verdict": "PASS"}
    (folder / "good.yaml").write_text(yaml.safe_dump(good, allow_unicode=True), "utf-8")
    (folder / "bad.yaml").write_text(text, "utf-8")

    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rA")
    output = result.stdout.str() + result.stderr.str()

    assert "INTERNALERROR" not in output
    assert "Traceback" not in output
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), output[-2000:]
    assert "PASSED scenarios/good.yaml::good::verdict" in output, output[-2000:]
    assert "errors" not in result.parseoutcomes()  # no collection error: bad.yaml is an item
