"""The agents' prompts: one Chinese markdown file per agent, shipped as package data."""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import Literal

from pytest_diageval.core.evidence.world import load_world

__all__ = ["Agent", "example_subjects", "load_prompt", "wrap_data"]

Agent = Literal["planner", "executor", "executor_points", "verifier", "grader"]


@cache
def load_prompt(agent: Agent) -> str:
    """The system prompt of ``agent``, read from ``agents/prompts/<agent>.md``."""
    return resources.files(__package__).joinpath("prompts", f"{agent}.md").read_text("utf-8")


@cache
def example_subjects() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The services and alerts the prompts' former worked examples were about
    (``prompts/example-world.yaml``; the prompts now show none).

    No question can ask about them (no scenario world has them), so a plan step, claim or
    answer sentence naming one copied an example: the session's scope knows these names, to
    hold them outside every question.
    """
    path = resources.files(__package__).joinpath("prompts", "example-world.yaml")
    world = load_world(Path(str(path)))
    services = {a.service for a in world.alerts} | {log.service for log in world.logs}
    return tuple(sorted(services)), tuple(sorted({a.alert_name for a in world.alerts}))


def wrap_data(tag: str, payload: str, **attributes: str | int) -> str:
    """Wrap untrusted text in a data tag that the prompts declare to be data, not instructions.

    A closing tag inside the payload would let tool output escape its wrapper, so ``</`` is
    written as ``<\\/`` (still valid inside JSON strings, and no longer a closing tag).
    """
    attrs = "".join(f' {key}="{value}"' for key, value in attributes.items())
    safe = payload.replace("</", "<\\/")
    return f"<{tag}{attrs}>{safe}</{tag}>"
