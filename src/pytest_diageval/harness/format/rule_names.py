"""Gatekeeper rule names in scenarios: checked against the rules table the code reads.

A misspelt name under ``expect.gatekeeper`` would make ``failed_rules_include`` fail (or an
exact ``failed_rules`` set pass) for the wrong reason. The table is
:mod:`pytest_diageval.core.contract.rules`; its gatekeeper rows are read at each check, never
copied, so a rule added there is accepted with no other change.
"""

from __future__ import annotations

import difflib
from typing import Annotated

from pydantic import AfterValidator

from pytest_diageval.core.contract import rules as rules_table

__all__ = ["GatekeeperRule", "gatekeeper_rule_names"]


def gatekeeper_rule_names() -> frozenset[str]:
    """Every rule the gatekeeper can report: the gatekeeper rows of
    :data:`pytest_diageval.core.contract.rules.RULES`, read at each call (never a copied list)."""
    return rules_table.rule_names("gatekeeper")


def _known_rule(name: str) -> str:
    rules = gatekeeper_rule_names()
    if name in rules:
        return name
    close = difflib.get_close_matches(name, sorted(rules), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"{name!r} is not a gatekeeper rule{hint} (rules: {', '.join(sorted(rules))})")


GatekeeperRule = Annotated[str, AfterValidator(_known_rule)]
"""A gatekeeper rule name of the rules table (``core.contract.rules``)."""
