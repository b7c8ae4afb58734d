"""Checks of your own: the registry of ``expect`` keys, the built-in ones and a project's.

A check is a name (the ``expect`` key), the type of its parameters (a pydantic model, or any
type pydantic validates: ``int``, ``Annotated[int, Field(gt=0)]``, ``list[str]``) and a function
``fn(params, ctx: CheckContext) -> CheckOutcome`` (``harness/checks/outcome.py``), as a
pydantic_evals evaluator is parameters and one ``evaluate(ctx)``. The built-in keys go through
the same registry (``register_builtin_checks`` in ``harness/checks/evaluators.py``); their
parameters are the fields of :class:`~pytest_diageval.harness.format.expectations.Expect`.

A project registers its own in the hook ``pytest_diageval_register_checks(registry)`` (a
``conftest.py`` or a plugin; see :mod:`pytest_diageval.harness.hookspecs`), a package through
the entry-point group ``pytest_diageval.checks`` (the entry point names a function that takes
the registry). A registered key is checked when the file loads (``file:line:col`` and the
allowed values, as a built-in key), joins the JSON Schema and becomes its own item. A
parameter model refuses unknown keys unless it sets ``extra`` itself.

The earlier form ``fn(params, result)`` (and ``fn(params, result, usage | grade)`` with
``needs_usage`` / ``needs_grade``) is still accepted, adapted, with a ``DeprecationWarning``.
"""

from __future__ import annotations

import inspect
import itertools
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Optional, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PydanticSchemaGenerationError,
    TypeAdapter,
    create_model,
)

from pytest_diageval.harness.format.expectations import EXPECT_KEYS, Expect

__all__ = [
    "CHECKS_ENTRY_POINT_GROUP",
    "CheckRegistrationError",
    "CheckRegistry",
    "CheckSpec",
    "builtin_params",
    "config_checks",
    "project_checks",
    "register_entry_point_checks",
]

CHECKS_ENTRY_POINT_GROUP = "pytest_diageval.checks"
"""A package's entry points in this group name ``register(registry)`` functions."""
CHECK_NAME_PATTERN = r"^[a-z][a-z0-9_]*$"
"""Check names are ``expect`` keys, node ids and report fields: lowercase identifiers."""

F = TypeVar("F", bound=Callable[..., Any])


class CheckRegistrationError(ValueError):
    """A check that cannot be registered (its name, its parameters or its function)."""


@dataclass(frozen=True)
class CheckSpec:
    """One ``expect`` key: its name, its parameters' type, its function and where it came from."""

    name: str
    params: Any
    """The parameters' type as validated: a model that set no ``extra`` refuses unknown keys."""
    function: Callable[[Any, Any], Any]
    """Called ``function(params, ctx)`` (a ``CheckContext``); an earlier form is adapted."""
    description: str = ""
    source: str = ""
    """Who registered it (a module, an entry point): named in a clash."""

    @property
    def builtin(self) -> bool:
        """A key of :class:`Expect`: validated by its field, not by :attr:`params` alone."""
        return self.name in EXPECT_KEYS


def builtin_params(name: str) -> Any:
    """The parameters of a built-in key: the annotation of its :class:`Expect` field."""
    return Expect.model_fields[name].annotation


class CheckRegistry:
    """The ``expect`` keys of a run, in order: the built-in ones first, then the registered."""

    def __init__(self) -> None:
        self._specs: dict[str, CheckSpec] = {}
        self._model: type[Expect] | None = None

    def register(
        self,
        name: str,
        params: Any,
        function: Callable[..., Any],
        *,
        description: str = "",
        needs_usage: bool = False,
        needs_grade: bool = False,
    ) -> CheckSpec:
        """Add the check ``name``, called ``function(params, ctx)``; a
        :class:`CheckRegistrationError` says what is wrong. ``needs_usage`` / ``needs_grade``
        are deprecated: they adapt ``fn(params, result, usage | grade)``."""
        source = getattr(function, "__module__", "") or ""
        if not isinstance(name, str) or not re.match(CHECK_NAME_PATTERN, name):
            raise CheckRegistrationError(
                f"check name {name!r} (from {source}) must be a lowercase identifier"
                " (letters, digits, '_'), as an expect key"
            )
        if name in self._specs:
            first = self._specs[name].source
            raise CheckRegistrationError(
                f"a check named {name!r} is already registered (by {first}); {source} cannot"
                " register it again: choose another name"
            )
        if name in EXPECT_KEYS and params != builtin_params(name):
            raise CheckRegistrationError(f"{name!r} is a built-in expect key: choose another name")
        if name not in EXPECT_KEYS and (name.startswith("model_") or hasattr(Expect, name)):
            raise CheckRegistrationError(f"check name {name!r} is reserved: choose another name")
        if not callable(function):
            raise CheckRegistrationError(f"the function of check {name!r} is not callable")
        try:
            TypeAdapter(params)
        except (PydanticSchemaGenerationError, TypeError) as error:
            raise CheckRegistrationError(
                f"the parameters of check {name!r} must be a type pydantic can validate"
                f" (a model, int, Annotated[int, Field(gt=0)], …): {error}"
            ) from None
        if needs_usage and needs_grade:
            raise CheckRegistrationError(f"check {name!r}: needs_usage or needs_grade, not both")
        extra = "usage" if needs_usage else "grade" if needs_grade else None
        check = _as_check(name, function, extra)
        spec = CheckSpec(name, _validated_params(name, params), check, description, source)
        self._specs[name] = spec
        self._model = None
        return spec

    def check(
        self,
        name: str,
        params: Any,
        *,
        description: str = "",
        needs_usage: bool = False,
        needs_grade: bool = False,
    ) -> Callable[[F], F]:
        """:meth:`register` as a decorator: ``@registry.check("max_answer_chars", int)``."""

        def decorate(function: F) -> F:
            self.register(
                name,
                params,
                function,
                description=description,
                needs_usage=needs_usage,
                needs_grade=needs_grade,
            )
            return function

        return decorate

    def __getitem__(self, name: str) -> CheckSpec:
        return self._specs[name]

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[CheckSpec]:
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._specs)

    def registered(self) -> list[CheckSpec]:
        """The checks that are not built-in keys, in the order they were registered."""
        return [spec for spec in self if not spec.builtin]

    def expect_model(self) -> type[Expect]:
        """:class:`Expect` with a field per registered check (itself when there is none).

        The loader validates ``expect`` with it (through the context ``{"checks": registry}``),
        so a registered key is refused, located and explained as a built-in one is.
        """
        extra = self.registered()
        if not extra:
            return Expect
        if self._model is None:
            fields: dict[str, Any] = {
                spec.name: (
                    Optional[spec.params],  # noqa: UP045 (a type built at run time)
                    Field(None, description=spec.description or None),
                )
                for spec in extra
            }
            self._model = create_model(
                "Expect", __base__=Expect, __module__=Expect.__module__, **fields
            )
        assert self._model is not None
        return self._model


NEW_FORM = (
    "write fn(params, ctx) and read ctx.result, ctx.usage and ctx.grade"
    " (from pytest_diageval import CheckContext, CheckOutcome; see docs/api.md)"
)


def _as_check(name: str, function: Callable[..., Any], extra: str | None) -> Any:
    """``function`` as ``fn(params, ctx)``: an earlier form is adapted, with a warning."""
    if extra is not None:
        _deprecated(name, function, f"fn(params, result, {extra}) with needs_{extra}=True")
        if extra == "usage":
            return lambda params, ctx: function(params, ctx.result, ctx.usage)
        return lambda params, ctx: function(params, ctx.result, ctx.grade)
    try:
        signature = inspect.signature(function, follow_wrapped=False)  # what is called
    except (TypeError, ValueError):  # a callable without a signature: taken at its word
        return function
    try:
        signature.bind(None, None)
    except TypeError:
        takes = f"{getattr(function, '__name__', 'function')}({', '.join(signature.parameters)})"
        raise CheckRegistrationError(
            f"check {name!r}: {takes} cannot be called as fn(params, ctx); a check takes its"
            " parameters and a CheckContext (needs_usage / needs_grade: read ctx.usage, ctx.grade)"
        ) from None
    if _takes_result(signature):
        _deprecated(name, function, "fn(params, result)")
        return lambda params, ctx: function(params, ctx.result)
    return function


def _takes_result(signature: inspect.Signature) -> bool:
    """The earlier form: a second parameter annotated as something other than a
    ``CheckContext``, or named ``result`` and not annotated."""
    positional = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(positional) < 2:
        return False
    second = positional[1]
    if second.annotation is inspect.Parameter.empty:
        return second.name == "result"
    return "CheckContext" not in str(second.annotation)  # a class, an alias or a string


def _deprecated(name: str, function: Callable[..., Any], form: str) -> None:
    """A ``DeprecationWarning`` at the function's own line (a conftest.py, a package)."""
    message = f"check {name!r} is written as {form}, which is deprecated: {NEW_FORM}"
    code = getattr(function, "__code__", None)
    if code is None:
        warnings.warn(message, DeprecationWarning, stacklevel=4)
        return
    module = getattr(function, "__module__", None) or "<unknown>"
    warnings.warn_explicit(
        message, DeprecationWarning, code.co_filename, code.co_firstlineno, module=module
    )


_PARAMS_COUNT = itertools.count(1)


def _validated_params(name: str, params: Any) -> Any:
    """The parameters as validated: a pydantic model that sets no ``extra`` of its own gets
    ``extra="forbid"`` (``{mni: 5}`` is a typo, not a silent default), and a model defined
    inside a function is made one the collected scenario can be pickled with. Both are a
    subclass kept in this module; the check still receives an instance of the model."""
    if not (isinstance(params, type) and issubclass(params, BaseModel)):
        return params
    strict = "extra" not in params.model_config
    if not strict and "<locals>" not in params.__qualname__:
        return params
    holder = f"_{name}_params_{next(_PARAMS_COUNT)}"
    namespace: dict[str, Any] = {
        "__module__": __name__,
        # pickle finds it by this path; the JSON Schema names it by the last part, as before
        "__qualname__": f"{holder}.{params.__name__}",
        "__doc__": params.__doc__,
    }
    if strict:
        namespace["model_config"] = ConfigDict(extra="forbid")
    subclass = type(params.__name__, (params,), namespace)
    setattr(sys.modules[__name__], holder, SimpleNamespace(**{params.__name__: subclass}))
    return subclass


def register_entry_point_checks(registry: CheckRegistry) -> None:
    """Call every ``register(registry)`` a package names in :data:`CHECKS_ENTRY_POINT_GROUP`."""
    from importlib.metadata import entry_points

    for entry in sorted(entry_points(group=CHECKS_ENTRY_POINT_GROUP), key=lambda e: e.name):
        register = entry.load()
        if not callable(register):
            raise CheckRegistrationError(
                f"entry point {entry.name} = {entry.value} (group {CHECKS_ENTRY_POINT_GROUP})"
                " must name a function that takes the registry"
            )
        register(registry)


def config_checks(config: Any) -> CheckRegistry:
    """The run's checks: ``pytest_diageval_register_checks`` called once, on first use, and
    for every conftest.py or plugin registered after that (a historic hook).

    The plugin's own implementation runs first (the built-in keys, then the packages' entry
    points), then every conftest.py and plugin that implements it. A scenario loaded before a
    later conftest.py registered its key is loaded again when collection ends
    (:func:`pytest_diageval.harness.collect.reload_late_checks`).
    """
    import pytest

    key = _STASH_KEY.setdefault("key", pytest.StashKey[CheckRegistry]())
    registry: CheckRegistry | None = config.stash.get(key, None)
    if registry is None:
        registry = CheckRegistry()
        # Historic: a conftest.py pytest loads later (a scenario sub-folder's) registers too.
        config.hook.pytest_diageval_register_checks.call_historic(kwargs={"registry": registry})
        config.stash[key] = registry
    return registry


_STASH_KEY: dict[str, Any] = {}


def project_checks(args: list[str] | None = None) -> CheckRegistry:
    """The checks of the project in the current folder, as ``pytest`` there would see them
    (its plugins and its ``conftest.py``): what ``diageval schema`` prints."""
    from pytest_diageval.harness.pytest_adapter import standalone_config

    with standalone_config(args or []) as config:
        return config_checks(config)
