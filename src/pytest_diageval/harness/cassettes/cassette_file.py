"""How a cassette file looks on disk: readable YAML, always UTF-8.

:mod:`pytest_diageval.harness.cassettes.cassette_session` registers these with vcrpy. Both replace a
vcrpy default that would make cassettes hard to review or silently re-recorded: the stock
serializer escapes every Chinese character as ``\\uXXXX``, and the stock persister reads in the
locale's encoding and treats an unreadable cassette as an empty one. The persister reports a
broken file with an error type it is given, so this module needs nothing from ``cassettes`` (no
import cycle).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from pytest_diageval.core.evidence.yaml_limits import YamlLimitError, safe_load_limited
from pytest_diageval.harness.cassettes.check import cassette_problem
from pytest_diageval.harness.cassettes.samples import holds_recording
from pytest_diageval.harness.cassettes.vcr_adapter import (
    CassetteNotFoundError,
    request_from_dict,
    response_to_bytes,
    serialize,
    yaml_deserialize,
)
from pytest_diageval.harness.outputs import write_atomically

__all__ = ["ReadableYaml", "Utf8Persister", "holds_recording", "utf8_text"]


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
        return yaml_deserialize(cassette_string)

    @staticmethod
    def serialize(cassette_dict: Any) -> str:
        return str(yaml.dump(cassette_dict, Dumper=_LiteralDumper, allow_unicode=True, width=100))


def utf8_text(raw: bytes) -> str:
    """A cassette file's text: its bytes decoded as UTF-8, line endings left to YAML.

    ``Path.read_text`` translates line endings as it decodes, which takes twice as long as
    reading the file and decoding it (a replayed cassette is a few hundred KB, read for every
    run); YAML reads ``\\r\\n`` and ``\\r`` as line breaks itself, so what is loaded is the same.
    """
    return raw.decode("utf-8")


_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def _load_yaml(raw: bytes) -> Any:
    """The cassette document, as :func:`safe_load_limited` of :func:`utf8_text` gives it.

    libyaml is handed the bytes: it checks UTF-8 itself, and a Python string would be
    decoded here only for pyyaml to encode it back to UTF-8 for libyaml (together a fifth
    of a cassette's load). What libyaml would read otherwise (UTF-16 after a byte order
    mark), and any file it refuses, goes the text way, so errors read exactly as from text.
    """
    if raw.startswith(_UTF16_BOMS):
        return safe_load_limited(utf8_text(raw))
    try:
        return safe_load_limited(raw)
    except (YamlLimitError, yaml.YAMLError):
        return safe_load_limited(utf8_text(raw))


def _yaml_problem(error: Exception) -> str:
    """One line: ``line 2, column 1: did not find expected node content``."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        return f"line {mark.line + 1}, column {mark.column + 1}: {error.problem}"
    return " ".join(str(error).split())


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
        """vcrpy's ``deserialize``, after :func:`cassette_problem` found nothing wrong."""
        path = Path(cassette_path)
        raw = path.read_bytes() if path.is_file() else b""
        if not raw.strip():  # as holds_recording, on the bytes read once
            raise CassetteNotFoundError()
        try:
            data = _load_yaml(raw)
        except UnicodeDecodeError as exc:
            raise self._unreadable_error(
                f"cassette {path} is not UTF-8 text: {exc.reason}"
            ) from None
        except (YamlLimitError, yaml.YAMLError) as exc:
            message = f"cassette {path} is not valid YAML: {_yaml_problem(exc)}"
            raise self._unreadable_error(message) from None
        except (ValueError, RecursionError) as exc:  # an int of 5,000 digits, say
            message = f"cassette {path} cannot be read: {' '.join(str(exc).split())}"
            raise self._unreadable_error(message) from None
        problem = cassette_problem(data)
        if problem is not None:
            raise self._unreadable_error(f"cassette {path}: {problem}")
        interactions = data["interactions"]
        requests = [request_from_dict(dict(i["request"])) for i in interactions]
        responses = [response_to_bytes(i["response"]) for i in interactions]
        return requests, responses

    def save_cassette(self, cassette_path: str, cassette_dict: Any, serializer: Any) -> None:
        write_atomically(Path(cassette_path), serialize(cassette_dict, serializer))
        self.saved = True
