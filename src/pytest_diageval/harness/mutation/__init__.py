"""``--diageval-mutate``: the mutant kinds and the seed rule each breaks, how they are derived
from a PASS, the citation edits, the replay of a mutant and its items and report.

Above the scenario items: may import the core, the agents and every other part of the
harness. Only the plugin imports it, through the modules in ``__all__``.
"""

__all__ = ["mutant_items", "mutation_summary"]
