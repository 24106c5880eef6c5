"""Helpers for a class's own ``_to_config`` / ``_from_config``.

Called while a dump or a load runs, they nest under the path of the component being
written or built (``participants[0].model_client``), so errors and warnings say where
they are. Called outside one, they work on their own (a plain dump or load).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from ._errors import (
    ComponentLoadError,
    ComponentSerializationError,
    ComponentSerializationWarning,
)
from ._model import ACTIVE_DUMPER, ACTIVE_LOADER, ComponentModel, Dumper, Loader

if TYPE_CHECKING:
    from ._model import EdgeFunction

T = TypeVar("T")


def _dumper() -> Dumper:
    return ACTIVE_DUMPER.get() or Dumper()


def _loader() -> Loader:
    return ACTIVE_LOADER.get() or Loader()


def dump_field(component: object, field_name: str) -> ComponentModel:
    """Dump the nested component held in ``field_name`` (from ``_to_config``).

    Raises:
        ComponentSerializationError: The component cannot be dumped.
    """
    dumper = ACTIVE_DUMPER.get()
    if dumper is None:
        return Dumper().root(component)
    return ComponentModel.model_validate(dumper.component(component, field_name))


def dump_fields(components: Sequence[object], field_name: str) -> list[ComponentModel]:
    """Dump a list of nested components (``field[0]``, ``field[1]``, ...)."""
    return [dump_field(item, f"{field_name}[{index}]") for index, item in enumerate(components)]


def skip_field(field_name: str, reason: str) -> None:
    """Leave out an optional field the config cannot hold: it is listed in the dump's
    ``unserializable`` and a
    [`ComponentSerializationWarning`][flowlib.component.ComponentSerializationWarning] says why
    (from ``_to_config``)."""
    dumper = ACTIVE_DUMPER.get()
    if dumper is None:
        warnings.warn(
            f"`{field_name}` is not serialised: {reason}",
            ComponentSerializationWarning,
            stacklevel=2,
        )
        return
    dumper.skip(field_name, reason)


def refuse_field(field_name: str, reason: str) -> NoReturn:
    """Stop the dump: the component needs ``field_name`` and a config cannot hold it.

    Raises:
        ComponentSerializationError: Always, with the path of the field.
    """
    dumper = ACTIVE_DUMPER.get()
    if dumper is None:
        raise ComponentSerializationError(
            f"Cannot dump `{field_name or '<root>'}`: {reason}", path=field_name, field=field_name
        )
    dumper.refuse(field_name, reason)


def json_field(value: T, field_name: str) -> T:
    """Return ``value`` if it is JSON data, else refuse the dump naming ``field_name``."""
    result: T = _dumper().json_value(value, field_name)
    return result


def load_field(
    model: ComponentModel | Mapping[str, Any] | None,
    field_name: str,
    expected: type | tuple[type, ...] = object,
) -> Any:
    """Build the nested component of ``field_name`` (from ``_from_config``) and check it
    is an ``expected`` instance; None (an optional field left empty) gives None.

    Raises:
        ComponentLoadError: The nested config is invalid or builds the wrong kind.
    """
    if model is None:
        return None
    loader = ACTIVE_LOADER.get()
    if loader is None:
        loader = Loader()
    return loader.component(model, field_name, expected)


def load_fields(
    models: Sequence[ComponentModel | Mapping[str, Any]],
    field_name: str,
    expected: type | tuple[type, ...] = object,
) -> list[Any]:
    """Build a list of nested components (``field[0]``, ``field[1]``, ...)."""
    return [
        load_field(item, f"{field_name}[{index}]", expected) for index, item in enumerate(models)
    ]


def load_error(message: str, field_name: str = "") -> ComponentLoadError:
    """A [`ComponentLoadError`][flowlib.component.ComponentLoadError] located at
    ``field_name`` of the component being built (raise it from ``_from_config``)."""
    return _loader().error(message, field_name)


@contextmanager
def loading_at(segment: str) -> Iterator[None]:
    """Enter ``segment`` for the paths of errors raised inside (a non-component field)."""
    with _loader().at(segment):
        yield


def edge_conditions() -> Mapping[str, EdgeFunction]:
    """The callables passed to ``load_component(..., conditions=...)`` in this load."""
    loader = ACTIVE_LOADER.get()
    return {} if loader is None else loader.conditions


def read_env(name: str, field_name: str, *, owned: bool = False) -> str:
    """The value of the environment variable ``name`` that the config being loaded names
    in ``field_name`` (from ``_from_config``), if the load allows it: it is listed in
    ``load_component(..., allow_env=[...])``, or ``owned`` says it is the credential of
    the very endpoint the config names (``OPENAI_API_KEY`` for OpenAI's own endpoint).

    Raises:
        ComponentLoadError: The variable is not allowed, or not set.
    """
    loader = _loader()
    return loader.policy.read_env(name, field_name, loader, owned=owned)
