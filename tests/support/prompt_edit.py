"""A conftest.py text that edits one line of the planner prompt, for stale-cassette tests."""

from __future__ import annotations

__all__ = ["planner_prompt_edit_conftest"]

_TEMPLATE = """
import pytest
import pytest_diageval.agents.planner as planner
from pytest_diageval.agents.prompts import load_prompt

_patch = pytest.MonkeyPatch()


def edited(agent):
    text = load_prompt(agent)
    return text.replace({old!r}, {new!r}) if agent == "planner" else text


def pytest_configure(config):
    # planner.py imported the name, so that is where the edited prompt must go.
    _patch.setattr(planner, "load_prompt", edited)


def pytest_unconfigure(config):
    _patch.undo()
"""


def planner_prompt_edit_conftest(old: str, new: str) -> str:
    """The conftest text; ``old`` must occur in the planner prompt or nothing changes."""
    return _TEMPLATE.format(old=old, new=new)
