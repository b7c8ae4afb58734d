"""Shared fixtures of the plugin tests: real scenario files in a pytester directory.

Every scenario starts from the documented example (``tests/plugin/data/example-scenario.yaml``:
a scripted HighMemoryUsage diagnosis that the real pipeline judges PASS) and is tweaked in one
visible place, then dumped as YAML into ``pytester.path``. The plugin is loaded through its
``pytest11`` entry point, so every pytester run is a real ``pytest scenario.yaml`` run.

Three scenarios with three different verdicts are used throughout:

* ``high-memory-positive``: the example with all eleven expectation keys, every one passing;
* ``memory-low-confidence``: the verifier calls the alert only indirectly supported, so the
  derived verdict is LOW_CONFID 0.6 and the answer carries a disclaimer;
* ``forged-citation``: the executor quotes an alert that is not in the cited row; the
  gatekeeper rejects it, so the verdict is REJECT although the scenario expects PASS.
"""

from __future__ import annotations

import copy
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

__all__ = [
    "EXAMPLE_SCENARIO",
    "EXPECT_ORDER",
    "FORGED_EXCERPT",
    "OUTER_ENVIRONMENT",
    "ScenarioDir",
    "failures_section",
    "normalise_durations",
    "read_runs",
    "scenario_builders",
    "scenarios",
    "summary_section",
]

REPO = Path(__file__).resolve().parents[2]
# The example is data for these tests, not a scenario of the suite.
collect_ignore = ["data"]
EXAMPLE_SCENARIO = REPO / "tests" / "plugin" / "data" / "example-scenario.yaml"
# tests/ on sys.path for the shared ``support`` package (tests/ is not a package).
sys.path.insert(0, str(REPO / "tests"))

EXPECT_ORDER = (
    "verdict",
    "groundedness",
    "rounds",
    "answer",
    "parse_status",
    "gatekeeper",
    "forbidden_keywords",
    "required_keywords",
    "claims",
    "no_evidence",
    "tool_calls",
)
"""The item order issue 5 fixes (not imported from the plugin, so a drift is caught); the later
extension ``answer_forbidden_keywords`` sits between required_keywords and claims."""

FORGED_EXCERPT = "HighMemoryUsage resolved, service=inventory-service, current=12%"

RUN_LOG = "scenario-runs.log"
# A pytester conftest that counts pipeline runs. The items call the name ``run_samples``
# that items.py imported from the runner (one call runs every sample of a scenario), so that
# is the name to wrap.
RUN_COUNTER_CONFTEST = f'''
import os
from pathlib import Path

import pytest
import pytest_diageval.harness.items as items

_patch = pytest.MonkeyPatch()
_LOG = Path(__file__).with_name("{RUN_LOG}")


def pytest_configure(config):
    original = items.run_samples

    # The run's own worker id: an in-process pytester run inside an outer xdist worker
    # inherits PYTEST_XDIST_WORKER from its environment, but has no workerinput.
    workerinput = getattr(config, "workerinput", None)
    worker = workerinput["workerid"] if workerinput else "main"

    def counting(scenario, *args, **kwargs):
        with _LOG.open("a", encoding="utf-8") as log:
            log.write(f"{{scenario.scenario_id}} {{worker}}\\n")
        return original(scenario, *args, **kwargs)

    _patch.setattr(items, "run_samples", counting)


def pytest_unconfigure(config):
    _patch.undo()
'''


def _example() -> dict[str, Any]:
    data = yaml.safe_load(EXAMPLE_SCENARIO.read_text("utf-8"))
    assert isinstance(data, dict)
    return data


def _script(data: dict[str, Any], stage: str, occurrence: int = 0) -> dict[str, Any]:
    """The content of the ``occurrence``-th content entry of ``stage`` in the scenario."""
    entries = [e for e in data["llm"]["script"] if e["stage"] == stage and "content" in e]
    content = entries[occurrence]["content"]
    assert isinstance(content, dict)
    return content


class ScenarioDir:
    """Builds scenario files (and helpers) in one pytester directory."""

    def __init__(self, pytester: pytest.Pytester) -> None:
        self.pytester = pytester
        self.root = pytester.path

    # ----------------------------------------------------------------- scenario data

    @staticmethod
    def example() -> dict[str, Any]:
        """The documented example scenario, unchanged (a fresh copy each time)."""
        return _example()

    @staticmethod
    def script(data: dict[str, Any]) -> list[dict[str, Any]]:
        """The scripted model answers of a scenario (for a fake OpenAI server)."""
        return copy.deepcopy(list(data["llm"]["script"]))

    @staticmethod
    def full() -> dict[str, Any]:
        """The example with the eleven expectation keys of issue 5, all true of the run
        (``answer_forbidden_keywords``, a later extension, has its own tests)."""
        data = _example()
        expect = data["expect"]
        expect["parse_status"] = "valid"
        expect["no_evidence"] = [{"tool": "query_logs", "evidence_status": "supported"}]
        data["expect"] = {key: expect[key] for key in EXPECT_ORDER if key in expect}
        return data

    @staticmethod
    def low_confidence() -> dict[str, Any]:
        """Only indirect support for the critical fact: LOW_CONFID 0.6, disclaimer answer."""
        data = _example()
        data["id"] = "memory-low-confidence"
        data["title"] = "只有间接证据时低置信度"
        data["tags"] = ["memory", "negative"]
        verifier = _script(data, "verifier")
        verifier["verdict"] = "LOW_CONFID"
        verifier["groundedness_score"] = 0.6
        verifier["facts_checked"][0]["verification"] = "indirect_support"
        data["expect"] = {"verdict": "LOW_CONFID", "answer": "disclaimer"}
        return data

    @staticmethod
    def low_confidence_now_supported() -> dict[str, Any]:
        """``memory-low-confidence`` after a prompt change: the verifier now calls the alert
        direct evidence, so the verdict moves from LOW_CONFID to PASS (a baseline review)."""
        data = ScenarioDir.low_confidence()
        _script(data, "verifier")["facts_checked"][0]["verification"] = "direct_evidence"
        return data

    @staticmethod
    def forged_citation() -> dict[str, Any]:
        """The executor misquotes the alert; the scenario (wrongly) expects PASS."""
        data = _example()
        data["id"] = "forged-citation"
        data["title"] = "伪造的告警引用"
        data["tags"] = ["forgery"]
        binding = _script(data, "executor")["claims"][0]["evidence_bindings"][0]
        binding["evidence_excerpt"] = FORGED_EXCERPT
        data["expect"] = {"verdict": "PASS", "answer": "direct"}
        return data

    # ----------------------------------------------------------------- files

    def write(self, relpath: str, data: Mapping[str, Any]) -> Path:
        text = yaml.safe_dump(dict(data), allow_unicode=True, sort_keys=False, width=1000)
        return self.write_text(relpath, text)

    def write_text(self, relpath: str, text: str) -> Path:
        path = self.root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def write_trio(self) -> list[Path]:
        """The three scenarios of three verdicts, one file each."""
        return [
            self.write("scenarios/memory.yaml", self.full()),
            self.write("scenarios/low.yaml", self.low_confidence()),
            self.write("scenarios/forged.yaml", self.forged_citation()),
        ]

    def count_runs(self) -> None:
        """Install the conftest that logs every pipeline run (scenario id, worker)."""
        self.write_text("conftest.py", RUN_COUNTER_CONFTEST)

    def runs(self) -> list[tuple[str, str]]:
        return read_runs(self.root / RUN_LOG)

    # ----------------------------------------------------------------- reading results
    # Tests reach these through the fixture: importing conftest by name is fragile.

    expect_order = EXPECT_ORDER
    forged_excerpt = FORGED_EXCERPT

    @staticmethod
    def summary(result: pytest.RunResult) -> list[str]:
        return summary_section(result.outlines)

    @staticmethod
    def summary_without_tokens(result: pytest.RunResult) -> list[str]:
        """The summary with its ``tokens`` column cut out: the scripted model's token counts
        follow the prompts' length (tests/plugin/test_token_budget.py checks them)."""
        return [TOKENS_CELL.sub("", line) for line in summary_section(result.outlines)]

    @staticmethod
    def failures(result: pytest.RunResult) -> list[str]:
        return failures_section(result.outlines)

    @staticmethod
    def without_durations(report: Any) -> Any:
        return normalise_durations(report)


TOKENS_CELL = re.compile(r"\| (?:tokens|\d+\+\d+) +(?=\| )")


def read_runs(log: Path) -> list[tuple[str, str]]:
    """``(scenario id, worker)`` per pipeline run, in order; empty when nothing ran."""
    if not log.is_file():
        return []
    pairs = [line.split(" ") for line in log.read_text("utf-8").splitlines()]
    return [(scenario_id, worker) for scenario_id, worker in pairs]


def summary_section(lines: list[str]) -> list[str]:
    """The lines of the ``diageval scenarios`` terminal section (without its header)."""
    start = next(i for i, line in enumerate(lines) if re.match(r"=+ diageval scenarios =+$", line))
    section: list[str] = []
    for line in lines[start + 1 :]:
        if line.startswith("=") or line.startswith("-" * 10):
            break
        section.append(line)
    return section


def failures_section(lines: list[str]) -> list[str]:
    """The lines of the ``FAILURES`` section: each failure's report, once.

    The short test summary after it repeats each message; how much of it depends on the
    terminal width and on whether pytest thinks it runs in CI (where it never truncates).
    """
    start = next(i for i, line in enumerate(lines) if re.match(r"=+ FAILURES =+$", line))
    section: list[str] = []
    for line in lines[start + 1 :]:
        if re.match(r"=+ .* =+$", line):
            break
        section.append(line)
    return section


def normalise_durations(value: Any) -> Any:
    """The report with every ``duration_ms`` (wall-clock audit data) set to 0."""
    if isinstance(value, dict):
        return {
            key: 0 if key == "duration_ms" else normalise_durations(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [normalise_durations(item) for item in value]
    return value


OUTER_ENVIRONMENT = (
    # pytest prints the short test summary untruncated when one of these is set.
    "CI",
    "BUILD_NUMBER",
    # The endpoint a prompt engineer may have exported for recording.
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "DIAGEVAL_MODEL",
    "DIAGEVAL_TIMEOUT",
)


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every pytester run sees the same environment, whoever runs the outer suite.

    In-process pytester runs read ``os.environ``: a CI runner or an exported endpoint would
    otherwise change what the inner run prints or where it would record. A test that needs
    one of these sets it itself.
    """
    for name in OUTER_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session", autouse=True)
def warm_pipeline() -> None:
    """Run the documented example once in this process before any pytester run.

    An in-process pytester run forgets every module first imported during it (its
    ``sys.modules`` snapshot), so without this each run would import openai, instructor and
    the harness afresh (seconds each). Modules imported here stay for all runs. hypothesis
    is one of them: its pytest plugin imports it at the end of every run.
    """
    import hypothesis  # noqa: F401  (kept imported)

    from pytest_diageval.harness import collect, items  # noqa: F401  (kept imported)
    from pytest_diageval.harness.format.loader import load_scenario
    from pytest_diageval.harness.report import reporter as report  # noqa: F401  (kept imported)
    from pytest_diageval.harness.runner import run_scenario
    from pytest_diageval.harness.settings import RunSettings

    scenario = load_scenario(EXAMPLE_SCENARIO)
    run = run_scenario(
        scenario, EXAMPLE_SCENARIO, cassette=None, settings=RunSettings(), rerecord_command=""
    )
    assert run.result is not None, run.error
    assert run.result.final_verdict == "PASS"


@pytest.fixture
def scenarios(pytester: pytest.Pytester) -> ScenarioDir:
    return ScenarioDir(pytester)


@pytest.fixture(scope="session")
def scenario_builders() -> type[ScenarioDir]:
    """The scenario builders (static methods) for fixtures wider than one test."""
    return ScenarioDir
