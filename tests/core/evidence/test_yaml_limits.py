"""core.evidence.yaml_limits: aliases are measured on the node tree before anything is built."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_diageval.core.evidence import yaml_limits
from pytest_diageval.core.evidence.yaml_limits import (
    YamlLimitError,
    may_contain_alias,
    read_limited,
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


def test_nesting_up_to_the_limit_loads_and_deeper_is_refused_where_it_starts() -> None:
    """Composing is the one recursive step of loading: bounded, so no RecursionError."""
    depth = yaml_limits.MAX_DEPTH
    data = safe_load_limited("[" * depth + "]" * depth)
    for _ in range(depth - 1):
        data = data[0]
    assert data == []
    for deeper in (depth + 1, 990):  # 990: under libyaml's own refusal at 1,000
        with pytest.raises(YamlLimitError) as excinfo:
            # the two mappings are levels too: the 63rd bracket is level 65
            safe_load_limited("a:\n  b: " + "[" * deeper + "]" * deeper)
        assert str(excinfo.value) == (
            f"line 2, column {4 + depth}: values nested more than 64 levels deep, over the"
            " nesting limit: flatten the value"
        )


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


# --------------------------------------------------------------------------- the other limits


def test_a_long_list_or_mapping_is_refused_at_its_start_without_reading_the_rest() -> None:
    entries = yaml_limits.MAX_ITEMS
    assert len(safe_load_limited("k:\n" + "- x\n" * entries)["k"]) == entries
    with pytest.raises(YamlLimitError) as excinfo:
        safe_load_limited("k:\n" + "- x\n" * 1_000_000)  # one million entries
    assert str(excinfo.value) == (
        "line 2, column 1: this list has more than 10,000 entries, over the length limit:"
        " split it up"
    )
    with pytest.raises(YamlLimitError, match="line 1, column 1: this mapping has more than"):
        safe_load_limited("".join(f"k{i}: {i}\n" for i in range(entries + 1)))


def test_a_document_of_too_many_values_is_refused_while_it_is_read() -> None:
    rows = ", ".join(["[a, b, c, d, e, f, g, h, i]"] * 2_500)  # 25,001 values a block
    text = "".join(f"k{i}: [{rows}]\n" for i in range(9))
    with pytest.raises(YamlLimitError) as excinfo:
        safe_load_limited(text)
    assert "line 8, column " in str(excinfo.value)
    assert "the document holds more than 200,000 values, over the value count limit" in str(
        excinfo.value
    )


@pytest.mark.parametrize("number", ["9" * 21, "-" + "1" * 400, "0x" + "f" * 5_000, "1_" * 21])
def test_an_integer_of_too_many_digits_is_refused_before_python_reads_it(number: str) -> None:
    with pytest.raises(YamlLimitError) as excinfo:
        safe_load_limited(f"notes: {number}\n")
    assert str(excinfo.value).startswith("line 1, column 8: an integer of ")
    assert "digits, over the integer limit of 20 digits: quote it if it is text" in str(
        excinfo.value
    )


def test_integers_within_the_limit_and_quoted_digits_load() -> None:
    assert safe_load_limited("a: 2000000000000000\nb: 0xff\nc: '" + "9" * 500 + "'\n") == {
        "a": 2_000_000_000_000_000,
        "b": 255,
        "c": "9" * 500,
    }


def test_an_alias_that_expands_to_too_much_text_is_refused() -> None:
    text = "s: &s " + "x" * 100_000 + "\nkeywords: [" + ", ".join(["*s"] * 2_000) + "]\n"
    with pytest.raises(YamlLimitError) as excinfo:
        safe_load_limited(text)
    assert str(excinfo.value) == (
        "line 2, column 11: YAML aliases expand this value to more than 8,388,608 characters,"
        " over the expansion limit (an alias bomb?): write the text out once, or use fewer"
        " aliases"
    )


def test_a_file_over_the_size_limit_is_not_read(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("wb") as stream:  # sparse: 50 MB that cost nothing to write
        stream.truncate(50 * 2**20)
    with pytest.raises(YamlLimitError) as excinfo:
        read_limited(big)
    assert str(excinfo.value) == (
        "the file is 52,428,800 bytes, over the file size limit of 8,388,608 bytes; it was"
        " not read (split it, or keep large data out of it)"
    )
    with pytest.raises(YamlLimitError, match="over the file size limit"):
        safe_load_limited("k: v\n" * (2 * 2**20))


def test_the_parse_time_limit_is_checked_while_composing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(yaml_limits, "MAX_PARSE_SECONDS", 0.0)
    assert safe_load_limited("[" + ", ".join(["x"] * 998) + "]") == ["x"] * 998
    with pytest.raises(YamlLimitError) as excinfo:
        safe_load_limited("[" + ", ".join(["x"] * 1_000) + "]")
    assert "over the parse time limit" in str(excinfo.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: !!int abc", "'abc' cannot be read as !!int (invalid literal for int()"),
        ("a: !!float abc", "'abc' cannot be read as !!float (could not convert string to"),
        ("a: !!bool maybe", "'maybe' cannot be read as !!bool (not a valid value)"),
        ("a: !!timestamp nope", "'nope' cannot be read as !!timestamp (not a valid value)"),
        ("a: 2026-13-01", "'2026-13-01' cannot be read as !!timestamp (month must be in 1..12)"),
        ("a: 2026-07-08 25:00:00", "as !!timestamp (hour must be in 0..23)"),
    ],
)
def test_a_value_its_tag_cannot_read_is_a_yaml_error_at_its_line(text: str, message: str) -> None:
    with pytest.raises(yaml.MarkedYAMLError) as excinfo:
        safe_load_limited("x: 1\n" + text + "\n")
    error = excinfo.value
    assert error.problem is not None
    assert message in error.problem
    assert error.problem.endswith("; quote it to make it text")
    assert error.problem_mark is not None
    assert error.problem_mark.line == 1


def test_the_document_and_its_errors_are_those_of_safe_load() -> None:
    text = "a: 2026-07-08T11:20:00+08:00\nb: [1, 2.5, true, null, !!str 5]\nc: {d: e}\n"
    assert safe_load_limited(text) == yaml.safe_load(text)
    for broken in ("a: *zz\n", "a: 1\n---\nb: 2\n", "a: [\n"):
        with pytest.raises(yaml.YAMLError):
            safe_load_limited(broken)


def test_the_reliability_page_lists_every_limit_with_its_value() -> None:
    page = (Path(__file__).resolve().parents[3] / "docs" / "reliability.md").read_text("utf-8")
    section = page.split("## Limits on the files read", 1)[1].split("\n## ", 1)[0]
    assert f"| file size | {yaml_limits.MAX_FILE_BYTES:,} bytes (8 MiB)" in section
    assert f"| nesting depth | {yaml_limits.MAX_DEPTH} levels |" in section
    assert f"| entries of one list or mapping | {yaml_limits.MAX_ITEMS:,} |" in section
    assert f"| values in a document, aliases expanded | {yaml_limits.MAX_NODES:,} |" in section
    assert f"| characters of the text aliases expand to | {yaml_limits.MAX_EXPANDED_CHARS:,} |" in (
        section
    )
    assert f"| digits of an integer (`0x…` too) | {yaml_limits.MAX_INT_DIGITS} |" in section
    assert f"| time to read one document | {yaml_limits.MAX_PARSE_SECONDS:g} s |" in section
