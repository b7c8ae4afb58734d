"""core.evidence.yaml_limits: aliases are measured on the node tree before anything is built."""

from __future__ import annotations

import pytest

from pytest_diageval.core.evidence.yaml_limits import (
    YamlLimitError,
    may_contain_alias,
    safe_load_limited,
)


def _bomb(levels: int, width: int = 9) -> str:
    lines = [f"l0: &l0 [{', '.join(['x'] * width)}]\n"]
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]\n")
    return "".join(lines)


def test_shared_aliases_within_the_limit_load_as_safe_load_does() -> None:
    data = safe_load_limited("a: &x {k: [1, 2]}\nb: *x\nc: [*x, *x]\n")

    assert data == {"a": {"k": [1, 2]}, "b": {"k": [1, 2]}, "c": [{"k": [1, 2]}] * 2}


def test_an_alias_bomb_is_refused_at_the_value_that_crosses_the_limit() -> None:
    # Expanded sizes: l0 10, l1 91, l2 820, l3 7,381, l4 66,430, l5 597,871 > 200,000.
    with pytest.raises(YamlLimitError) as excinfo:
        safe_load_limited(_bomb(9))

    assert str(excinfo.value) == (
        "line 6, column 5: YAML aliases expand this value to more than 200,000 values (an"
        " alias bomb?): write the values out, or use fewer nested aliases"
    )


def test_the_limit_counts_expanded_values_not_written_ones() -> None:
    assert safe_load_limited(_bomb(5))["l4"][0][0][0][0][0] == "x"  # 66,430 values: fine
    with pytest.raises(YamlLimitError):
        safe_load_limited(_bomb(6))


@pytest.mark.parametrize(
    ("text", "position"),
    [("a: &a [*a]\n", "line 1, column 4"), ("a: &m {b: {c: *m}}\n", "line 1, column 4")],
)
def test_a_recursive_alias_is_refused(text: str, position: str) -> None:
    with pytest.raises(YamlLimitError) as excinfo:
        safe_load_limited(text)

    assert str(excinfo.value) == (
        f"{position}: recursive YAML alias: this anchored value contains an alias to itself"
    )


def test_deep_nesting_without_aliases_is_not_a_recursion_problem() -> None:
    depth = 900  # libyaml refuses more than 1,000 levels itself
    data = safe_load_limited("[" * depth + "]" * depth)

    for _ in range(depth - 1):
        data = data[0]
    assert data == []


def test_only_a_text_with_an_asterisk_can_hold_an_alias() -> None:
    """The fast path: without ``*`` there is no alias, so no walk; with one, the walk runs
    whatever else the text holds (an asterisk inside a string is enough to check)."""
    assert may_contain_alias("a: &x 1\nb: [1, 2]\n") is False  # an anchor alone shares nothing
    assert may_contain_alias("a: &x 1\nb: *x\n") is True
    assert may_contain_alias("note: '**bold**'\n") is True


def test_bytes_are_measured_and_loaded_as_their_text() -> None:
    """Cassettes are handed to libyaml as bytes: same aliases check, same document."""
    assert may_contain_alias(b"a: &x 1\nb: *x\n")
    assert not may_contain_alias("a: 内存 91%\n".encode())
    with pytest.raises(YamlLimitError, match="line 6, column 5: YAML aliases expand"):
        safe_load_limited(_bomb(9).encode())
    text = "a: &x {k: [1, 内存]}\nb: *x\nc: |-\n  第一行\r\n  second\n"
    assert safe_load_limited(text.encode()) == safe_load_limited(text)
    assert safe_load_limited(text.encode())["c"] == "第一行\nsecond"
