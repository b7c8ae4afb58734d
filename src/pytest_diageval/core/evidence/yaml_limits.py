"""Safe YAML loading with a bound on alias expansion.

``yaml.safe_load`` shares the object an alias names, so an alias bomb (``&a [x, x]``,
``&b [*a, *a]`` … ten levels deep) or a recursive alias (``&a [*a]``) costs nothing to load;
the cost comes later, when a validator or a JSON encoder walks every reference: gigabytes
and minutes, or a recursion error far from the file. The node tree is therefore measured
before anything is built from it: :func:`check_aliases` refuses a recursive alias and a
document that expands to more than :data:`MAX_EXPANDED_NODES` nodes, at the node's line.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = [
    "MAX_EXPANDED_NODES",
    "YamlLimitError",
    "check_aliases",
    "may_contain_alias",
    "safe_load_limited",
]

MAX_EXPANDED_NODES = 200_000
"""Nodes a document may expand to (the largest shipped cassette has under 1,000)."""

# libyaml's parser when installed; both build the same safe node tree with positions.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlLimitError(ValueError):
    """A YAML document whose aliases recurse or expand beyond the limit; ``mark`` is where."""

    def __init__(self, message: str, mark: yaml.Mark | None) -> None:
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        super().__init__(f"{where}{message}")
        self.message = message
        self.mark = mark


def may_contain_alias(text: str | bytes) -> bool:
    """False when ``text`` cannot hold a YAML alias: every alias is written ``*name``.

    Most scenario files and cassettes have no ``*`` at all; for them the walk of
    :func:`check_aliases` (about a millisecond per scenario file, more per cassette) is
    skipped, since without an alias no node is shared and nothing can expand or recurse.
    """
    if isinstance(text, bytes):
        return b"*" in text
    return "*" in text


def check_aliases(root: yaml.Node, limit: int = MAX_EXPANDED_NODES) -> None:
    """Raise :class:`YamlLimitError` if ``root`` recurses or expands beyond ``limit`` nodes."""
    sizes: dict[int, int] = {}
    _expanded_size(root, sizes, set(), limit)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _expanded_size(node: yaml.Node, sizes: dict[int, int], open_: set[int], limit: int) -> int:
    """The node count of ``node`` with every alias written out (an alias is a shared node).

    Iterative (a deep document must not hit Python's recursion limit): ``open_`` holds the
    nodes on the current path, so meeting one again is a recursive alias.
    """
    stack: list[tuple[yaml.Node, bool]] = [(node, False)]
    while stack:
        current, children_done = stack.pop()
        key = id(current)
        if children_done:
            open_.discard(key)
            total = 1 + sum(sizes[id(child)] for child in _children(current))
            if total > limit:
                raise YamlLimitError(
                    f"YAML aliases expand this value to more than {limit:,} values (an alias"
                    " bomb?): write the values out, or use fewer nested aliases",
                    current.start_mark,
                )
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in open_:
            raise YamlLimitError(
                "recursive YAML alias: this anchored value contains an alias to itself",
                current.start_mark,
            )
        open_.add(key)
        stack.append((current, True))
        stack.extend((child, False) for child in _children(current) if id(child) not in sizes)
    return sizes[id(node)]


def safe_load_limited(text: str | bytes) -> Any:
    """``yaml.safe_load`` that first refuses recursive aliases and alias bombs.

    Bytes are read by libyaml itself (UTF-8, or UTF-16 after its byte order mark).
    """
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        if may_contain_alias(text):
            check_aliases(root)
        return loader.construct_document(root)
    finally:
        loader.dispose()
