"""A node field pytest gives every node and scenario nodes hardly use, made on first use.

pytest keeps every collected node to the end of the session, and ``Node.__init__`` gives each
one an empty ``extra_keyword_matches`` set: 216 bytes that only ``-k`` reads and only
parametrised Python functions fill. A scenario is ten nodes (its file, itself, its items),
so at 5,000 scenarios the empty sets alone were 10 MB of the run's peak memory.

:class:`LeanNode` keeps the attribute's behaviour exactly (a read gives the node's own set,
which can be filled and stays; an assignment replaces it) and only delays making the set
until something reads it.
"""

from __future__ import annotations

from typing import Any, overload

__all__ = ["LeanNode", "SetOnFirstRead"]


class SetOnFirstRead:
    """A data descriptor holding a set that exists only once it has been read (or given)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}_made"

    @overload
    def __get__(self, node: None, owner: type) -> SetOnFirstRead: ...
    @overload
    def __get__(self, node: object, owner: type) -> set[str]: ...
    def __get__(self, node: object | None, owner: type) -> SetOnFirstRead | set[str]:
        if node is None:
            return self
        made: set[str] | None = getattr(node, self.slot)
        if made is None:
            made = set()
            setattr(node, self.slot, made)
        return made

    def __set__(self, node: object, value: set[str]) -> None:
        # pytest's constructor assigns a new empty set: keep none until one is asked for.
        # (Plain attributes, not ``node.__dict__``: reading that makes a dict per node.)
        setattr(node, self.slot, value if value else None)


class LeanNode:
    """Mixed into pytest node classes (before the pytest base) to delay the -k set."""

    extra_keyword_matches: Any = SetOnFirstRead()
