"""How a cassette file looks on disk: readable YAML, always UTF-8.

Split from :mod:`pytest_diageval.harness.cassettes`, which registers these with vcrpy. Both
replace a vcrpy default that would make cassettes hard to review or silently re-recorded:
the stock serializer escapes every Chinese character as ``\\uXXXX``, and the stock
persister reads in the locale's encoding and treats an unreadable cassette as an empty one.
The persister reports a broken file with an error type it is given, so this module needs
nothing from ``cassettes`` (no import cycle).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from vcr.persisters.filesystem import CassetteNotFoundError
from vcr.serialize import deserialize, serialize
from vcr.serializers import yamlserializer

__all__ = ["ReadableYaml", "Utf8Persister", "holds_recording"]


class _LiteralDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Safe YAML; multi-line strings as literal blocks, so bodies read like the JSON they are."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_LiteralDumper.add_representer(str, _represent_str)


class ReadableYaml:
    """vcrpy serializer: stock safe loading, dumping with real Unicode and literal blocks.

    The stock serializer dumps with ``allow_unicode=False``: every Chinese character would be
    a ``\\uXXXX`` escape.
    """

    @staticmethod
    def deserialize(cassette_string: str) -> Any:
        return yamlserializer.deserialize(cassette_string)

    @staticmethod
    def serialize(cassette_dict: Any) -> str:
        return str(yaml.dump(cassette_dict, Dumper=_LiteralDumper, allow_unicode=True, width=100))


def holds_recording(path: Path) -> bool:
    """Whether a cassette file exists with content: an empty file is recorded over, as vcrpy
    treats a missing one."""
    return path.is_file() and bool(path.read_bytes().strip())


class Utf8Persister:
    """vcrpy's filesystem persister, but UTF-8 whatever the locale, and it remembers writes.

    The stock one opens files in the locale's encoding and turns an unreadable cassette into
    an empty one (to be recorded over); here a broken cassette raises ``unreadable_error``
    with a message that names it.
    """

    def __init__(self, unreadable_error: Callable[[str], Exception]) -> None:
        self.saved = False
        self._unreadable_error = unreadable_error

    def load_cassette(self, cassette_path: str, serializer: Any) -> Any:
        path = Path(cassette_path)
        if not holds_recording(path):
            raise CassetteNotFoundError()
        try:
            return deserialize(path.read_text("utf-8"), serializer)
        except (UnicodeDecodeError, ValueError, yaml.YAMLError, KeyError, TypeError) as exc:
            raise self._unreadable_error(f"cassette {path} cannot be read: {exc}") from exc

    def save_cassette(self, cassette_path: str, cassette_dict: Any, serializer: Any) -> None:
        path = Path(cassette_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(serialize(cassette_dict, serializer), "utf-8")
        self.saved = True
