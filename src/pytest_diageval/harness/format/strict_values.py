"""Integer choices that take integers only.

``true == 1`` and ``1.0 == 1`` in Python, so pydantic's ``Literal[1, 2]`` takes ``true`` and
``1.0`` as 1, strict model or not: ``expect.rounds: true`` passed as ``rounds: 1``. The types
here refuse them first, in the words of the other scenario errors.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator

__all__ = ["Rounds"]


def _an_integer(value: Any) -> Any:
    if isinstance(value, bool | float):
        kind = "a boolean" if isinstance(value, bool) else "a number"
        raise ValueError(f"must be an integer, 1 or 2; got {str(value).lower()} ({kind})")
    return value


Rounds = Annotated[Literal[1, 2], BeforeValidator(_an_integer)]
"""The verifier rounds a run may take: the integer 1 or 2."""
