"""Safe YAML loading with explicit bounds: every limit on a file the plugin reads, in one place.

A scenario, a world or a cassette is a user's file, so nothing in it may hang the run or end it
in a traceback. The bounds are checked before or while the YAML is read, never after:

- the file's size, before it is read (:data:`MAX_FILE_BYTES`);
- while the node tree is composed, node by node: the nesting depth (:data:`MAX_DEPTH`), the
  entries of one list or mapping (:data:`MAX_ITEMS`), the values of the document
  (:data:`MAX_NODES`), the digits of an integer (:data:`MAX_INT_DIGITS`) and the time taken
  (:data:`MAX_PARSE_SECONDS`);
- before anything is built from the tree, when it holds an alias: what the aliases expand to,
  in values and in characters (:data:`MAX_NODES`, :data:`MAX_EXPANDED_CHARS`), and no alias
  may contain itself. ``yaml.safe_load`` shares the object an alias names, so an alias bomb
  costs nothing to load; the cost came later, when a validator or a JSON encoder walked
  every reference (gigabytes and minutes, or a recursion error far from the file).

A value that cannot be what its tag says (``!!int abc``, ``!!bool maybe``, the implicit date
``2026-13-01``) is a :class:`yaml.constructor.ConstructorError` at its line, like every other
YAML error, instead of the ``ValueError`` or ``KeyError`` PyYAML lets out.
Each limit's :class:`YamlLimitError` names the limit and the line and column where it was met.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError

__all__ = [
    "MAX_DEPTH",
    "MAX_EXPANDED_CHARS",
    "MAX_EXPANDED_NODES",
    "MAX_FILE_BYTES",
    "MAX_INT_DIGITS",
    "MAX_ITEMS",
    "MAX_NODES",
    "MAX_PARSE_SECONDS",
    "YamlLimitError",
    "check_aliases",
    "check_file_size",
    "load_limited",
    "may_contain_alias",
    "path_problem",
    "read_limited",
    "safe_load_limited",
]

MAX_FILE_BYTES = 8 * 2**20
"""Bytes a file may hold: 8 MiB (the largest shipped cassette has about 400 KB)."""
MAX_DEPTH = 64
"""Levels a value may be nested (the deepest shipped scenario has 11)."""
MAX_ITEMS = 10_000
"""Entries of one list or mapping (the longest shipped list has 44)."""
MAX_NODES = 200_000
"""Values a document may hold, or expand to through its aliases (shipped cassettes: < 1,000)."""
MAX_EXPANDED_NODES = MAX_NODES
"""The former name of :data:`MAX_NODES`."""
MAX_EXPANDED_CHARS = MAX_FILE_BYTES
"""Characters the scalars of a document may expand to through its aliases: no more text than
the largest file could hold written out."""
MAX_INT_DIGITS = 20
"""Digits of an integer (a count, an id or a budget needs at most 19; shipped: 16)."""
MAX_PARSE_SECONDS = 10.0
"""Seconds the composing of one document may take (checked every 1,000 values): a backstop,
the limits above bound the work long before it."""

_CHECK_EVERY = 1_000
_INT_TAG = "tag:yaml.org,2002:int"
_TAG_PREFIX = "tag:yaml.org,2002:"

# libyaml's parser when installed; both give the same events with positions.
_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlLimitError(ValueError):
    """A YAML document beyond one of the limits above; ``mark`` is where (None: the file)."""

    def __init__(self, message: str, mark: yaml.Mark | None) -> None:
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        super().__init__(f"{where}{message}")
        self.message = message
        self.mark = mark


def check_file_size(size: int) -> None:
    """Raise :class:`YamlLimitError` for a file of more than :data:`MAX_FILE_BYTES` bytes."""
    if size > MAX_FILE_BYTES:
        raise YamlLimitError(
            f"the file is {size:,} bytes, over the file size limit of {MAX_FILE_BYTES:,} bytes;"
            " it was not read (split it, or keep large data out of it)",
            None,
        )


def read_limited(path: Path) -> bytes:
    """The file's bytes, its size checked before it is read (``OSError`` as ``open`` gives)."""
    with path.open("rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        check_file_size(size)
        # A file that grows while it is read stops one byte past the limit; a device (size
        # 0: /dev/zero) is read up to it.
        raw = stream.read((size or MAX_FILE_BYTES) + 1)
        if size and len(raw) > size:
            raw += stream.read(MAX_FILE_BYTES + 1 - len(raw))
    check_file_size(len(raw))
    return raw


def path_problem(path: Path) -> str | None:
    """Why ``path`` cannot name a file at all: a NUL byte, a name longer than the system
    allows, a symlink loop (None: usable, whether the file exists or not)."""
    text = str(path)
    if "\0" in text:
        return "the path contains a NUL byte"
    try:
        os.stat(text)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "the path is a symlink loop (a link that leads back to itself)"
        if error.errno == errno.ENAMETOOLONG:
            return f"the path ({len(text):,} characters) is longer than the system allows"
        return f"the path cannot be used: {error.strerror}"
    return None


def may_contain_alias(text: str | bytes) -> bool:
    """False when ``text`` cannot hold a YAML alias: every alias is written ``*name``."""
    if isinstance(text, bytes):
        return b"*" in text
    return "*" in text


class _LimitedLoader(_Base):  # type: ignore[valid-type,misc]
    """The safe loader whose composer counts as it goes (PyYAML's own composer, with limits).

    The composer is the only recursive step of loading; here it recurses at most
    :data:`MAX_DEPTH` levels. libyaml (when installed) still parses the events.
    """

    def __init__(self, stream: str | bytes) -> None:
        super().__init__(stream)
        self.anchors: dict[str, yaml.Node] = {}
        self.has_alias = False
        self._depth = 0
        self._nodes = 0
        self._deadline = time.monotonic() + MAX_PARSE_SECONDS

    def get_single_node(self) -> yaml.Node | None:
        self.get_event()  # stream start
        document = None
        if not self.check_event(yaml.StreamEndEvent):
            self.get_event()  # document start
            document = self._compose()
            self.get_event()  # document end
            self.anchors = {}
        if not self.check_event(yaml.StreamEndEvent):
            event = self.get_event()
            first = document.start_mark if document is not None else None
            raise ComposerError(
                "expected a single document in the stream",
                first,
                "but found another document",
                event.start_mark,
            )
        self.get_event()  # stream end
        return document

    def _compose(self) -> yaml.Node:
        event = self.peek_event()
        start: Any = event.start_mark  # libyaml's Mark or PyYAML's: the same fields
        if isinstance(event, yaml.AliasEvent):
            self.get_event()
            if event.anchor not in self.anchors:
                raise ComposerError(None, None, f"found undefined alias {event.anchor!r}", start)
            self.has_alias = True
            return self.anchors[event.anchor]
        if event.anchor is not None and event.anchor in self.anchors:
            raise ComposerError(
                f"found duplicate anchor {event.anchor!r}; first occurrence",
                self.anchors[event.anchor].start_mark,
                "second occurrence",
                event.start_mark,
            )
        self._nodes += 1
        if self._nodes > MAX_NODES or not self._nodes % _CHECK_EVERY:
            self._check_count(event.start_mark)
        if isinstance(event, yaml.ScalarEvent):
            return self._scalar()
        return self._collection()

    def _check_count(self, mark: yaml.Mark) -> None:
        if self._nodes > MAX_NODES:
            raise YamlLimitError(
                f"the document holds more than {MAX_NODES:,} values, over the value count"
                " limit: split the file",
                mark,
            )
        if time.monotonic() >= self._deadline:
            raise YamlLimitError(
                f"reading the document took more than {MAX_PARSE_SECONDS:g} s, over the parse"
                " time limit: the file is too large or too complex to read",
                mark,
            )

    def _scalar(self) -> yaml.ScalarNode:
        event = self.get_event()
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.resolve(yaml.ScalarNode, event.value, event.implicit)
        if tag == _INT_TAG:
            _check_int_digits(event.value, event.start_mark)
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        if event.anchor is not None:
            self.anchors[event.anchor] = node
        return node

    def _collection(self) -> yaml.Node:
        start = self.get_event()
        sequence = isinstance(start, yaml.SequenceStartEvent)
        kind: type[yaml.SequenceNode | yaml.MappingNode]
        kind = yaml.SequenceNode if sequence else yaml.MappingNode
        end = yaml.SequenceEndEvent if sequence else yaml.MappingEndEvent
        tag = start.tag
        if tag is None or tag == "!":
            tag = self.resolve(kind, None, start.implicit)
        node = kind(tag, [], start.start_mark, None, flow_style=start.flow_style)
        if start.anchor is not None:  # before the entries: they may name it (refused later)
            self.anchors[start.anchor] = node
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise YamlLimitError(
                f"values nested more than {MAX_DEPTH} levels deep, over the nesting limit:"
                " flatten the value",
                start.start_mark,
            )
        entries: list[Any] = node.value
        while not self.check_event(end):
            if len(entries) >= MAX_ITEMS:
                what = "list" if sequence else "mapping"
                raise YamlLimitError(
                    f"this {what} has more than {MAX_ITEMS:,} entries, over the length limit:"
                    " split it up",
                    start.start_mark,
                )
            entries.append(self._compose() if sequence else (self._compose(), self._compose()))
        self._depth -= 1
        node.end_mark = self.get_event().end_mark
        return node


def _marked(constructor: Any) -> Any:
    """PyYAML's constructor of a scalar, but a value it cannot read is a ConstructorError at
    its line (PyYAML lets the ValueError, KeyError or AttributeError out, without a mark)."""

    def construct(loader: _LimitedLoader, node: yaml.ScalarNode) -> Any:
        try:
            return constructor(loader, node)
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as error:
            tag = node.tag.replace(_TAG_PREFIX, "!!")
            shown = node.value if len(node.value) <= 40 else node.value[:40] + "…"
            reason = str(error) if isinstance(error, ValueError) else "not a valid value"
            raise ConstructorError(
                None,
                None,
                f"{shown!r} cannot be read as {tag} ({reason}); quote it to make it text",
                node.start_mark,
            ) from None

    return construct


for _tag in ("null", "bool", "int", "float", "binary", "timestamp"):
    _LimitedLoader.add_constructor(
        _TAG_PREFIX + _tag, _marked(yaml.SafeLoader.yaml_constructors[_TAG_PREFIX + _tag])
    )


def _check_int_digits(text: str, mark: yaml.Mark) -> None:
    digits = text.lstrip("+-").replace("_", "")
    if digits[:2].lower() in ("0x", "0o", "0b"):
        digits = digits[2:]
    if len(digits) > MAX_INT_DIGITS:
        raise YamlLimitError(
            f"an integer of {len(digits):,} digits, over the integer limit of {MAX_INT_DIGITS}"
            " digits: quote it if it is text",
            mark,
        )


def check_aliases(root: yaml.Node, limit: int = MAX_NODES) -> None:
    """Raise :class:`YamlLimitError` if ``root`` recurses or expands beyond ``limit`` values
    or :data:`MAX_EXPANDED_CHARS` characters."""
    sizes: dict[int, tuple[int, int]] = {}
    _expanded_size(root, sizes, set(), limit)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _expanded_size(
    node: yaml.Node, sizes: dict[int, tuple[int, int]], open_: set[int], limit: int
) -> tuple[int, int]:
    """The values and characters of ``node`` with every alias written out.

    Iterative (a deep document must not hit Python's recursion limit): ``open_`` holds the
    nodes on the current path, so meeting one again is a recursive alias.
    """
    stack: list[tuple[yaml.Node, bool]] = [(node, False)]
    while stack:
        current, children_done = stack.pop()
        key = id(current)
        if children_done:
            open_.discard(key)
            own = len(current.value) if isinstance(current, yaml.ScalarNode) else 0
            parts = [sizes[id(child)] for child in _children(current)]
            total = 1 + sum(part[0] for part in parts)
            chars = own + sum(part[1] for part in parts)
            if total > limit:
                raise YamlLimitError(
                    f"YAML aliases expand this value to more than {limit:,} values (an alias"
                    " bomb?): write the values out, or use fewer nested aliases",
                    current.start_mark,
                )
            if chars > MAX_EXPANDED_CHARS:
                raise YamlLimitError(
                    f"YAML aliases expand this value to more than {MAX_EXPANDED_CHARS:,}"
                    " characters, over the expansion limit (an alias bomb?): write the"
                    " text out once, or use fewer aliases",
                    current.start_mark,
                )
            sizes[key] = (total, chars)
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


def load_limited(text: str | bytes) -> tuple[yaml.Node | None, Any]:
    """The node tree (for positions) and the document, every limit above checked.

    Raises :class:`YamlLimitError` for a limit, ``yaml.YAMLError`` for anything else wrong
    with the YAML (with its mark). Bytes are read by libyaml itself (UTF-8, or UTF-16 after
    its byte order mark).
    """
    check_file_size(len(text))
    loader = _LimitedLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None, None
        if loader.has_alias:
            check_aliases(root)
        return root, loader.construct_document(root)
    finally:
        loader.dispose()


def safe_load_limited(text: str | bytes) -> Any:
    """``yaml.safe_load`` within the limits above."""
    return load_limited(text)[1]
