"""The public check API in real pytest runs: a check written only against ``pytest_diageval``'s
own names (no ``harness``, ``core`` or ``agents`` import) reads the run's result, its token
usage and the grader's answer, from a ``conftest.py`` and from an installed package's entry
point (docs/api.md's two examples, run as written); and the frictions of issue 39 a check's
author met: a key registered in a scenario sub-folder's ``conftest.py``, a parameter model
that ignored a typo, a context attribute that does not exist."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir

ROOT = Path(__file__).resolve().parents[2]
API_DOC = (ROOT / "docs" / "api.md").read_text("utf-8")


def _doc_example(tag: str) -> str:
    """A python block of docs/api.md, marked ``# <file> (<tag>)`` on its first line."""
    (example,) = re.findall(rf"```python\n# \S+ \({tag}\)\n(.*?)```", API_DOC, re.DOTALL)
    return str(example)


CONFTEST = _doc_example("api-conftest")
PACKAGE = _doc_example("api-entry-point")
CRITERIA = "回答只确认 order-service 的 HighMemoryUsage 告警，并给出已核验的内存使用率。"


def _scenario(scenarios: ScenarioDir, scenario_id: str, **expect: Any) -> dict[str, Any]:
    data = scenarios.example()
    data["id"] = scenario_id
    data["expect"] = {"verdict": "PASS", **expect}
    return data


def _graded(scenarios: ScenarioDir, scenario_id: str, budget: dict[str, Any]) -> dict[str, Any]:
    """The example with a rubric (so the grader is asked, score 0.9) and ``within_budget``."""
    data = _scenario(scenarios, scenario_id, within_budget=budget)
    data["llm"]["script"].append(
        {"stage": "grader", "content": {"score": 0.9, "reasons": ["确认了告警和 91%"]}}
    )
    data["expect"]["rubric"] = {"criteria": CRITERIA, "min_score": 0.5}
    return data


def _run_graded(pytester: pytest.Pytester, scenarios: ScenarioDir) -> None:
    """Within the budget, over it on tokens, under the grader's score: one check, three runs."""
    scenarios.write(
        "scenarios/ok.yaml", _graded(scenarios, "ok", {"max_tokens": 100000, "min_score": 0.8})
    )
    scenarios.write(
        "scenarios/tokens.yaml", _graded(scenarios, "tokens", {"max_tokens": 10, "min_score": 0.8})
    )
    scenarios.write(
        "scenarios/score.yaml",
        _graded(scenarios, "score", {"max_tokens": 100000, "min_score": 0.95}),
    )

    result = pytester.runpytest("--diageval-report", "r.json", "-W", "error::DeprecationWarning")

    result.assert_outcomes(passed=7, failed=2)
    report = json.loads((pytester.path / "r.json").read_text("utf-8"))
    limits = {"ok": "100000 tokens, score >= 0.8", "tokens": "10 tokens, score >= 0.8"}
    limits["score"] = "100000 tokens, score >= 0.95"
    for entry in report["scenarios"]:
        tokens = entry["summary"]["usage"]["total"]["total_tokens"]
        assert tokens > 10  # the usage the check read is the run's
        (check,) = [c for c in entry["check_results"] if c["name"] == "within_budget"]
        assert check["actual"] == f"{tokens} tokens, score 0.9"  # and the grader's answer
        assert check["outcome"] == ("passed" if entry["id"] == "ok" else "failed")
        headline = f"within_budget: expected at most {limits[entry['id']]}, got {check['actual']}"
        assert (headline in result.outlines) is (entry["id"] != "ok")
    assert "within_budget: verdict PASS" in result.outlines  # ctx.key and ctx.result


def test_a_check_of_public_names_reads_usage_and_grade_from_a_conftest(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    assert "pytest_diageval." not in CONFTEST  # only the package's own names
    pytester.makeconftest(CONFTEST)  # docs/api.md's example, verbatim
    _run_graded(pytester, scenarios)


def test_a_check_of_public_names_reads_usage_and_grade_from_an_entry_point(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    assert "pytest_diageval." not in PACKAGE
    pytester.makepyfile(budget_checks=PACKAGE)  # docs/api.md's example, verbatim
    info = pytester.mkdir("budget_checks-1.0.dist-info")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: budget-checks\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[pytest_diageval.checks]\nbudget = budget_checks:register\n"
    )
    pytester.syspathinsert()
    _run_graded(pytester, scenarios)


SUB_FOLDER_CONFTEST = """
from pytest_diageval import CheckContext, CheckOutcome


def pytest_diageval_register_checks(registry):
    @registry.check("max_claims", int)
    def max_claims(limit: int, ctx: CheckContext[int]) -> CheckOutcome:
        contract = ctx.result.rounds[-1].executor_contract
        count = len(contract.claims) if contract else 0
        return CheckOutcome(count <= limit, f"at most {limit} claims", f"{count} claims")
"""


def test_a_check_registered_in_a_scenario_sub_folder_is_known_to_every_scenario(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_text("scenarios/mine/conftest.py", SUB_FOLDER_CONFTEST)
    scenarios.write("scenarios/mine/one.yaml", _scenario(scenarios, "one", max_claims=1))
    # Collected before scenarios/mine/ (and its conftest.py) is.
    scenarios.write("scenarios/alpha/first.yaml", _scenario(scenarios, "first", max_claims=3))
    scenarios.write("scenarios/alpha/none.yaml", _scenario(scenarios, "none", max_claims=0))

    mine = pytester.runpytest("scenarios/mine/")
    mine.assert_outcomes(passed=2)
    everything = pytester.runpytest("-rf", "scenarios/")

    everything.assert_outcomes(passed=5, failed=1)
    assert "max_claims: expected at most 0 claims, got 1 claims" in everything.outlines
    everything.stdout.fnmatch_lines(["FAILED scenarios/alpha/none.yaml::none::max_claims - *"])
    listed = pytester.runpytest("--collect-only", "-q", "scenarios/")
    assert listed.outlines[:6] == [
        "scenarios/alpha/first.yaml::first::verdict",
        "scenarios/alpha/first.yaml::first::max_claims",
        "scenarios/alpha/none.yaml::none::verdict",
        "scenarios/alpha/none.yaml::none::max_claims",
        "scenarios/mine/one.yaml::one::verdict",
        "scenarios/mine/one.yaml::one::max_claims",
    ]
    assert listed.ret == pytest.ExitCode.OK
    # Each scenario of the run ran its check, in collection order.
    assert [line.split(" ")[0] for line in everything.outlines if ".yaml " in line] == [
        "scenarios/alpha/first.yaml",
        "scenarios/alpha/none.yaml",
        "scenarios/mine/one.yaml",
    ]


def test_a_key_no_conftest_registers_stays_unknown_after_the_late_ones(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_text("scenarios/mine/conftest.py", SUB_FOLDER_CONFTEST)
    scenarios.write("scenarios/alpha/typo.yaml", _scenario(scenarios, "typo", max_claim=3))

    result = pytester.runpytest("scenarios/")

    result.assert_outcomes(failed=1)
    assert "expect.max_claim: unknown key; did you mean 'max_claims'?" in result.stdout.str()
    listed = pytester.runpytest("--collect-only", "scenarios/")  # an error of collection
    assert listed.ret == pytest.ExitCode.INTERRUPTED
    listed.stdout.fnmatch_lines(
        [
            "*ERROR collecting scenarios/alpha/typo.yaml*",
            "*scenarios/alpha/typo.yaml:*: expect.max_claim: unknown key; did you mean"
            " 'max_claims'?*",
            "*Interrupted: 1 error during collection*",
        ]
    )


PARAMS_CONFTEST = """
from pydantic import BaseModel, ConfigDict

from pytest_diageval import CheckContext, CheckOutcome


class Window(BaseModel):
    min: int = 0


class Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")
    min: int = 0


def pytest_diageval_register_checks(registry):
    def at_least(params, ctx: CheckContext) -> CheckOutcome:
        return CheckOutcome(True, f"at least {params.min}", "ok")

    registry.register("window", Window, at_least)
    registry.register("lenient", Lenient, at_least)
"""


def test_a_parameter_model_refuses_an_unknown_key_unless_it_opts_out(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    pytester.makeconftest(PARAMS_CONFTEST)
    scenarios.write(
        "scenarios/typo.yaml", _scenario(scenarios, "typo", window={"min": 1, "mni": 5})
    )
    scenarios.write(
        "scenarios/kept.yaml", _scenario(scenarios, "kept", lenient={"min": 1, "mni": 5})
    )

    result = pytester.runpytest()

    result.assert_outcomes(passed=2, failed=1)
    text = (pytester.path / "scenarios/typo.yaml").read_text("utf-8").splitlines()
    (line,) = [number for number, row in enumerate(text, 1) if row.strip() == "mni: 5"]
    where = f"scenarios/typo.yaml:{line}:5: expect.window.mni: unknown key; did you mean 'min'?"
    assert [out for out in result.outlines if out.endswith(f"{where} (allowed keys: min)")] != []


def test_a_wrong_context_attribute_fails_the_check_and_names_the_right_ones(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    pytester.makeconftest(
        """
        from pytest_diageval import CheckOutcome

        def pytest_diageval_register_checks(registry):
            @registry.check("claims_at_most", int)
            def claims_at_most(limit, ctx):
                return CheckOutcome(ctx.claim_count <= limit, str(limit), str(ctx.claim_count))
        """
    )
    scenarios.write("scenarios/x.yaml", _scenario(scenarios, "x", claims_at_most=3))

    result = pytester.runpytest()

    result.assert_outcomes(passed=1, failed=1)
    error = (
        "check 'claims_at_most' (registered by conftest) raised AttributeError: CheckContext has"
        " no attribute 'claim_count' (it has key, params, result, usage, grade)"
    )
    assert error in result.outlines  # the failure's first line
    result.stdout.fnmatch_lines(
        [
            "*conftest.py*, line 6, in claims_at_most",
            "*return CheckOutcome(ctx.claim_count <= limit, str(limit), str(ctx.claim_count))",
        ]
    )
    assert "_pytest" not in result.stdout.str()  # the check's frames, not pytest's


OLD_README_CHECK = """
def pytest_diageval_register_checks(registry):
    from typing import Annotated

    from pydantic import Field

    from pytest_diageval.harness.checks.outcome import CheckOutcome

    @registry.check("max_answer_chars", Annotated[int, Field(gt=0)],
                    description="The final answer has at most this many characters.")
    def max_answer_chars(limit, result):
        length = len(result.final_answer)
        return CheckOutcome(length <= limit, f"at most {limit} characters", f"{length} characters")
"""
"""The README's example before the context (``fn(params, result)``), verbatim."""


def test_the_readmes_earlier_check_still_runs_and_warns_with_the_new_form(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    pytester.makeconftest(OLD_README_CHECK)
    scenarios.write("scenarios/short.yaml", _scenario(scenarios, "short", max_answer_chars=400))
    scenarios.write("scenarios/long.yaml", _scenario(scenarios, "too-long", max_answer_chars=10))

    result = pytester.runpytest()

    result.assert_outcomes(passed=3, failed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*conftest.py:8: DeprecationWarning: check 'max_answer_chars' is written as"
            " fn(params, result), which is deprecated: write fn(params, ctx) and read ctx.result,"
            " ctx.usage and ctx.grade (from pytest_diageval import CheckContext, CheckOutcome;"
            " see docs/api.md)",
        ]
    )


def test_importing_the_package_imports_nothing_else() -> None:
    code = (
        "import sys, pytest_diageval;"
        "print(sorted(m for m in sys.modules if m.startswith(('pytest_diageval', 'pydantic'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['pytest_diageval']"
    names = "import pytest_diageval as p; print(all(getattr(p, n) for n in p.__all__))"
    done = subprocess.run([sys.executable, "-c", names], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"
