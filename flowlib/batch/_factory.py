"""Team factories: ``"module:function"``, ``"path/to/file.py:function"`` or a callable."""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._english import a, clause
from ..checkpoint import CheckpointStore
from ..errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["Factory", "build_team", "resolve_factory"]

Factory = str | Callable[..., Any]
"""``"module:function"``, ``"path/to/file.py:function"`` or a callable returning a team."""


def _check_reference(reference: str) -> tuple[str, str]:
    where, sep, name = reference.rpartition(":")
    if not sep or not where or not name.isidentifier():
        raise InvalidArgumentError(
            f"`factory` {reference!r} is not `module:function` or `path/to/file.py:function`.",
            argument="factory",
        )
    return where, name


def factory_reference(factory: Factory) -> tuple[str, str] | None:
    """A factory reference's two parts (``module`` or ``path.py``, and the function's
    name); None for a callable.

    Raises:
        ArgumentTypeError: If ``factory`` is neither a string nor a callable.
        InvalidArgumentError: If the string is not ``module:function`` or
            ``path/to/file.py:function``.
    """
    if callable(factory):
        return None
    if not isinstance(factory, str):
        raise ArgumentTypeError(
            f"`factory` must be a 'module:function' string or a callable returning a team "
            f"(picklable, for Ray), got {type(factory).__name__}.",
            argument="factory",
        )
    return _check_reference(factory)


@functools.cache
def _module_from_file(path: str) -> Any:
    file = Path(path)
    if not file.is_file():
        raise InvalidArgumentError(
            f"`factory` file `{path}` does not exist (on this machine; on a cluster, ship it "
            "to the workers, e.g. with Ray's `runtime_env={'working_dir': ...}`).",
            argument="factory",
        )
    digest = hashlib.sha1(str(file.resolve()).encode()).hexdigest()[:10]
    name = f"_flowlib_batch_{file.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise InvalidArgumentError(
            f"`factory` file `{path}` is not an importable Python file.", argument="factory"
        )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folder = str(file.parent.resolve())
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    return module


def resolve_factory(factory: Factory) -> Callable[..., Any]:
    """Turn a factory reference into the function it names.

    Args:
        factory: ``"package.module:function"``, ``"path/to/file.py:function"`` (imported
            once per process) or a callable.

    Raises:
        InvalidArgumentError: If the reference is malformed or names nothing callable.
        ArgumentTypeError: If ``factory`` is neither a string nor a callable.
    """
    reference = factory_reference(factory)
    if reference is None:
        return factory  # type: ignore[return-value]
    where, name = reference
    if where.endswith(".py"):
        module = _module_from_file(where)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise InvalidArgumentError(
                f"`factory` module `{where}` cannot be imported here: {clause(exc)}. Check "
                "that it is on the workers' PYTHONPATH.",
                argument="factory",
            ) from exc
    found = getattr(module, name, None)
    if not callable(found):
        raise InvalidArgumentError(
            f"`factory` {factory!r}: `{where}` has no function `{name}`.", argument="factory"
        )
    return found  # type: ignore[no-any-return]


def _takes_store(function: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature
        return False
    return any(
        p.name == "checkpoint_store" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters
    )


def build_team(factory: Callable[..., Any], store: CheckpointStore | None) -> Any:
    """Call the factory for one run: ``factory(checkpoint_store=store)``.

    A factory without a ``checkpoint_store`` parameter is called with no arguments, which
    is only allowed when there is no store.

    Raises:
        InvalidArgumentError: If a store is given and the factory cannot take it, or the
            factory returns something that cannot run a task.
    """
    if _takes_store(factory):
        team = factory(checkpoint_store=store)
    elif store is None:
        team = factory()
    else:
        name = getattr(factory, "__qualname__", repr(factory))
        raise InvalidArgumentError(
            f"`factory` `{name}` takes no `checkpoint_store` argument, so its teams cannot "
            "checkpoint: define it as `def build(*, checkpoint_store=None)` and pass "
            "`checkpoint_store=checkpoint_store` to the team's constructor.",
            argument="factory",
        )
    if not hasattr(team, "run_stream"):
        raise InvalidArgumentError(
            f"`factory` returned {a(type(team).__name__)}, not a team (nothing with `run_stream`).",
            argument="factory",
        )
    return team
