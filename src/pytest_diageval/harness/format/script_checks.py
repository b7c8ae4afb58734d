"""Load-time check of scripted answers: each ``content`` against the model of its stage.

The models themselves live with the agents (:mod:`pytest_diageval.agents.scripted.content`);
this module puts their findings at the YAML line and column of the field, the way every other
scenario problem is reported (``file:line:col: llm.script[3].content.verdict: …``).
"""

from __future__ import annotations

import yaml

from pytest_diageval.agents.scripted.content import STAGE_CONTENT_MODELS, content_problems
from pytest_diageval.harness.format import errors as _errors
from pytest_diageval.harness.format.errors import ScenarioProblem
from pytest_diageval.harness.format.scenario import Scenario

__all__ = ["script_content_problems"]

_MARK_INVALID = "mark a deliberately invalid answer with `invalid: true`"


def script_content_problems(root: yaml.Node, scenario: Scenario) -> list[ScenarioProblem]:
    """One problem per field of a scripted ``content`` its agent would refuse, in file order;
    a ``rubric`` on a reference scenario (the reference agent does not grade)."""
    script = scenario.llm.script if scenario.llm is not None else None
    found: list[ScenarioProblem] = []
    if scenario.llm is not None and scenario.llm.reference and scenario.expect.rubric:
        line, column = _errors.key_position(root, ("expect", "rubric"))
        message = (
            "the reference agent (llm.reference) does not grade: a rubric needs a grader's"
            " answer, from a script (a grader entry after the last round) or a cassette"
        )
        found.append(ScenarioProblem(line, column, "expect.rubric", message))
    for index, entry in enumerate(script or []):
        if entry.content is None:
            continue
        base = ("llm", "script", index)
        problems = content_problems(entry.stage, entry.content)
        model = STAGE_CONTENT_MODELS[entry.stage].__name__
        if entry.invalid and not problems:
            line, column = _errors.key_position(root, (*base, "invalid"))
            message = (
                f"the content is a valid {model} (the {entry.stage}'s answer): remove"
                " `invalid: true`, or make the content invalid the way the scenario means"
            )
            found.append(ScenarioProblem(line, column, _errors.format_path(base), message))
        if entry.invalid:
            continue
        for problem in problems:
            loc = (*base, "content", *problem.loc)
            line, column = _errors.key_position(root, loc)
            message = f"{problem.message} (the {entry.stage}'s {model}; {_MARK_INVALID})"
            found.append(ScenarioProblem(line, column, _errors.format_path(loc), message))
    return sorted(found, key=lambda p: (p.line or 0, p.column or 0, p.field_path))
