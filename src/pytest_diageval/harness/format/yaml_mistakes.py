"""Where a YAML syntax error was made, which is often not where PyYAML stopped.

PyYAML reports the token it could not use: for a key without its colon, a quote or bracket
left open, or a line indented under a value, that is a line or more after the mistake (a
comment or the end of the file, even). :func:`mistake_position` moves the position to the line
of the mistake where the error's marks allow it, and says what to check there.
"""

from __future__ import annotations

import yaml

__all__ = ["mistake_position"]

_OPENED = {
    "while scanning a simple key": "is a key without its ':' (or, if it continues the value"
    " above it, is not indented enough)",
    "while scanning a quoted scalar": "opens a quote that is never closed",
    "while parsing a flow sequence": "opens a [ … ] list whose ',' or closing ']' is missing",
    "while parsing a flow mapping": "opens a { … } mapping whose ',' or closing '}' is missing",
}
"""PyYAML's contexts whose mark is where the mistake began, and what line it is then."""
_BLOCK = {
    "while parsing a block mapping": "no key of the mapping begun on line {start}",
    "while parsing a block collection": "no item of the list begun on line {start}",
}


def mistake_position(
    text: str, error: yaml.MarkedYAMLError, line: int | None, column: int | None
) -> tuple[int | None, int | None, str]:
    """The line and column (1-based) of the mistake behind ``error`` (PyYAML stopped at
    ``line``:``column``), and a hint that names the line to check (``""`` when there is none)."""
    if line is None:
        return line, column, ""
    context = error.context or ""
    start = error.context_mark
    if context in _OPENED and start is not None and start.line + 1 < line:
        return start.line + 1, start.column + 1, f"; line {start.line + 1} {_OPENED[context]}"
    if context in _BLOCK and start is not None:
        where = _BLOCK[context].format(start=start.line + 1)
        return line, column, f"; check the indentation of line {line}: it lines up with {where}"
    if (error.problem or "").startswith("mapping values are not allowed"):
        return _value_continued(text.splitlines(), line, column)
    return line, column, ""


def _value_continued(
    lines: list[str], line: int, column: int | None
) -> tuple[int | None, int | None, str]:
    """A ``key: value`` line found where a value was being read: indented under the line
    above, it continues that line's value; on its own line, the value holds ': '."""
    row = lines[line - 1] if line <= len(lines) else ""
    before = row[: (column or 1) - 1].strip()
    above = _previous_content_line(lines, line)
    if above is None or ": " in before or _indent(row) <= _indent(lines[above - 1]):
        return line, column, "; a value that holds ': ' must be quoted (\"…\")"
    return (
        above,
        _indent(lines[above - 1]) + 1,
        f"; line {line} is indented under line {above}, so it reads as more of line {above}'s"
        f" value: check the indentation of line {line} (align its key with line {above}'s), or"
        f" end line {above} at its key's ':' to make it hold a mapping",
    )


def _previous_content_line(lines: list[str], line: int) -> int | None:
    """The number of the last line before ``line`` that is neither blank nor a comment."""
    for number in range(line - 1, 0, -1):
        stripped = lines[number - 1].strip()
        if stripped and not stripped.startswith("#"):
            return number
    return None


def _indent(row: str) -> int:
    return len(row) - len(row.lstrip(" "))
