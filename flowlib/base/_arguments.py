"""Argument checks shared by agents, teams and termination conditions (issue 11.5).

Each check runs first in its constructor or method, so bad input is a named flowlib
error ([`ArgumentTypeError`][flowlib.errors.ArgumentTypeError], a ``TypeError``, or
[`InvalidArgumentError`][flowlib.errors.InvalidArgumentError], a ``ValueError``) that
names the argument and what is expected, and nothing has changed yet.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import ArgumentTypeError, FlowlibError, InvalidArgumentError, StateError

__all__ = [
    "check_count",
    "check_number",
    "check_state_argument",
    "load_atomically",
    "parsed_state",
    "state_entry",
]

_State = TypeVar("_State", bound=BaseModel)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def kind_of(value: object) -> str:
    name = type(value).__name__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    return f"{article} {name} ({_shown(value)})"


def check_count(value: object, argument: str, *, minimum: int = 1, optional: bool = False) -> None:
    """``value`` must be an int >= ``minimum`` (or None when ``optional``)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        expected = f"an int >= {minimum}" + (" or None" if optional else "")
        raise ArgumentTypeError(
            f"`{argument}` must be {expected}, not {kind_of(value)}.", argument=argument
        )
    if value < minimum:
        raise InvalidArgumentError(
            f"`{argument}` must be at least {minimum}, not {value}.", argument=argument
        )


def check_number(
    value: object, argument: str, *, minimum: float = 0.0, optional: bool = False
) -> None:
    """``value`` must be a real number >= ``minimum`` (or None when ``optional``)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentTypeError(
            f"`{argument}` must be a number, not {kind_of(value)}.", argument=argument
        )
    if not value >= minimum:  # NaN fails too
        raise InvalidArgumentError(
            f"`{argument}` must be at least {minimum:g}, not {value}.", argument=argument
        )


def check_state_argument(state: object, owner: str) -> Mapping[str, Any]:
    """``state`` must be the mapping ``save_state()`` returned.

    Raises:
        StateError: It is not a mapping (a ``ValueError``).
    """
    if not isinstance(state, Mapping):
        raise StateError(
            f"{owner}: `state` must be the dict `save_state()` returned, not {kind_of(state)}."
        )
    return state


def state_entry(state: object, owner: str, state_type: str, key: str) -> Mapping[str, Any]:
    """The mapping at ``key`` of ``state``, which must be the ``save_state()`` result of
    type ``state_type`` (``{"type": state_type, key: {...}, ...}``).

    Raises:
        StateError: ``state`` is not a mapping, is of another type, or holds no mapping
            at ``key`` (a ``ValueError``).
    """
    state = check_state_argument(state, owner)
    entry = state.get(key)
    if state.get("type") != state_type or not isinstance(entry, Mapping):
        raise StateError(
            f"{owner} cannot load a state of type {state.get('type')!r}; pass the dict its "
            "save_state() returned."
        )
    return entry


def parsed_state(
    model: type[_State],
    state: Mapping[str, Any],
    owner: str,
    *,
    version: object = None,
    saved_by: str = "its save_state()",
) -> _State:
    """``state``, a ``save_state()`` result, validated as ``model``; with ``version``, a
    state that names another version is refused first (one without a version is taken
    as this one). ``saved_by`` says what makes such states, for the error.

    Raises:
        StateError: ``state`` names another version, or does not fit ``model`` (how many
            problems, where the first is and what it is) (a ``ValueError``).
    """
    found = state.get("version", version)
    if version is not None and found != version:
        raise StateError(
            f"{owner} state has version {found!r}; this flowlib reads version {version!r}. "
            "Save it again with this version of flowlib."
        )
    try:
        return model.model_validate(dict(state))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "the state"
        raise StateError(
            f"{owner} cannot load this state, which is malformed ({exc.error_count()} "
            f"problem(s); the first at `{where}`: {first['msg']}); pass the dict "
            f"{saved_by} returned."
        ) from exc


async def load_atomically(
    owner: str,
    state: Mapping[str, Any],
    save: Callable[[], Awaitable[Mapping[str, Any]]],
    load: Callable[[Mapping[str, Any]], Awaitable[None]],
) -> None:
    """``await load(state)``, all or nothing: if it fails part-way (a participant's state
    is malformed after the executor's was taken), the state from before is loaded back,
    and an error that is not a flowlib error becomes a ``StateError``.

    Args:
        owner: Names the team in the error.
        state: The state to load.
        save: Returns the current state (loaded back on failure).
        load: Loads a state, possibly in several steps.
    """
    before = await save()
    try:
        await load(state)
    except Exception as exc:
        await load(before)
        if isinstance(exc, FlowlibError):
            raise
        raise StateError(
            f"{owner}: cannot load this state ({type(exc).__name__}: {exc}); pass the dict "
            "`save_state()` returned. Nothing was changed."
        ) from exc
