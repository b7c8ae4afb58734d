"""Gatekeeper rule names in scenarios: checked against the gatekeeper's own rule table.

A misspelt name under ``expect.gatekeeper`` would make ``failed_rules_include`` fail (or an
exact ``failed_rules`` set pass) for the wrong reason. The table is
:mod:`pytest_diageval.core.contract.gatekeeper_rules`; its ``*_RULES`` sets are read at each check,
never copied, so a rule added there is accepted with no other change.
"""

from __future__ import annotations

import difflib
from typing import Annotated

from pydantic import AfterValidator

from pytest_diageval.core.contract import gatekeeper_rules

__all__ = ["GatekeeperRule", "gatekeeper_rule_names"]


def gatekeeper_rule_names() -> frozenset[str]:
    """Every rule the gatekeeper can report: the union of the ``*_RULES`` sets of
    :mod:`pytest_diageval.core.contract.gatekeeper_rules`, read at each call (never a copied
    list)."""
    return frozenset().union(
        *(
            value
            for name, value in vars(gatekeeper_rules).items()
            if name.endswith("_RULES") and isinstance(value, frozenset)
        )
    )


def _known_rule(name: str) -> str:
    rules = gatekeeper_rule_names()
    if name in rules:
        return name
    close = difflib.get_close_matches(name, sorted(rules), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"{name!r} is not a gatekeeper rule{hint} (rules: {', '.join(sorted(rules))})")


GatekeeperRule = Annotated[str, AfterValidator(_known_rule)]
"""A rule name of the gatekeeper's table (``core.gatekeeper_rules``)."""
