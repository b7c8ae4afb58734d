"""The agents' prompts: one Chinese markdown file per agent, shipped as package data."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Literal

__all__ = ["Agent", "load_prompt", "wrap_data"]

Agent = Literal["planner", "executor", "verifier", "grader"]


@cache
def load_prompt(agent: Agent) -> str:
    """The system prompt of ``agent``, read from ``agents/prompts/<agent>.md``."""
    return resources.files(__package__).joinpath("prompts", f"{agent}.md").read_text("utf-8")


def wrap_data(tag: str, payload: str, **attributes: str | int) -> str:
    """Wrap untrusted text in a data tag that the prompts declare to be data, not instructions.

    A closing tag inside the payload would let tool output escape its wrapper, so ``</`` is
    written as ``<\\/`` (still valid inside JSON strings, and no longer a closing tag).
    """
    attrs = "".join(f' {key}="{value}"' for key, value in attributes.items())
    safe = payload.replace("</", "<\\/")
    return f"<{tag}{attrs}>{safe}</{tag}>"
