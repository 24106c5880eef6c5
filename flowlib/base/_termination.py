"""Termination conditions: the protocol, the reuse error, and the ``&`` / ``|`` combinators.

A condition is called with the *new* messages since its previous call (the delta), never
with the whole history, and keeps whatever state it needs between calls. Once it has
returned a [`StopMessage`][flowlib.messages.StopMessage] it stays fired until ``reset()``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel
from typing_extensions import Self

from .._english import a
from ..component.internal import (
    ComponentBase,
    ComponentModel,
    dump_fields,
    load_fields,
    register_builtin,
)
from ..errors import FlowlibError, InvalidTypeError, InvalidValueError, StateError
from ..messages import BaseAgentEvent, BaseChatMessage, StopMessage

__all__ = [
    "TERMINATION_STATE_VERSION",
    "AndTerminationCondition",
    "OrTerminationCondition",
    "TerminatedException",
    "TerminationCondition",
    "saves_state",
]

TERMINATION_STATE_VERSION = 1

_ALREADY_REACHED = "Termination condition has already been reached"


class TerminatedException(FlowlibError, RuntimeError):
    """A termination condition was called again after it fired, with no ``reset()`` between.

    AutoGen derives this class from ``BaseException``; flowlib derives it from ``Exception``
    (through [`FlowlibError`][flowlib.errors.FlowlibError]) so that task groups, exception groups
    and ``except Exception`` handlers treat it like any other error. It is also a
    ``RuntimeError`` because AutoGen's OR condition raises ``RuntimeError`` in this case;
    ``except TerminatedException`` catches it either way.

    Args:
        message: Defaults to ``"Termination condition has already been reached"``.
    """

    def __init__(self, message: str = _ALREADY_REACHED) -> None:
        super().__init__(message)


class TerminationCondition(ComponentBase, ABC):
    """A stateful check, fed each batch of new messages, that decides when a run stops.

    Subclasses implement [`terminated`][flowlib.base.TerminationCondition.terminated], ``__call__``
    and [`reset`][flowlib.base.TerminationCondition.reset]. Combine conditions with ``|`` (stop when
    either fires) and ``&`` (stop once both have fired).

    Examples:
        ```python
        from flowlib.conditions import MaxMessageTermination, TextMentionTermination

        # Stop after 10 messages, or as soon as someone says "TERMINATE".
        either = MaxMessageTermination(10) | TextMentionTermination("TERMINATE")
        # Stop once 10 messages have passed and "TERMINATE" has been said.
        both = MaxMessageTermination(10) & TextMentionTermination("TERMINATE")
        ```
    """

    component_type: ClassVar[str] = "termination"
    # The public import path component configs record (flowlib.component); None: not serialisable.
    component_provider_override: ClassVar[str | None] = None

    @property
    @abstractmethod
    def terminated(self) -> bool:
        """Whether the condition has fired since it was created or last reset."""

    @abstractmethod
    async def __call__(
        self, messages: Sequence[BaseAgentEvent | BaseChatMessage]
    ) -> StopMessage | None:
        """Check the messages received since the previous call.

        Args:
            messages: The new messages and events (the delta), oldest first.

        Returns:
            A ``StopMessage`` whose content is the stop reason if the run should stop,
            otherwise ``None``.

        Raises:
            TerminatedException: If the condition has already fired and was not reset.
        """

    @abstractmethod
    async def reset(self) -> None:
        """Return the condition to its initial, not-fired state."""

    async def save_state(self) -> Mapping[str, Any]:
        """The condition's progress (counters, whether it fired), JSON-serialisable.

        A checkpointed run stores it with every checkpoint, so a run resumed after a
        crash stops where the uninterrupted run would have. Every built-in condition
        (and ``&`` / ``|`` of them) overrides this. A subclass that does not keeps no
        state here and falls back to the *replay rule* (docs/state.md, "Termination
        conditions"): on resume it is reset and called once with the run's chat
        messages so far.

        Returns:
            ``{}`` here (nothing saved; see [`saves_state`][flowlib.base.saves_state]).
        """
        return {}

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore a state returned by [`save_state`][flowlib.base.TerminationCondition.save_state].

        Raises:
            StateError: If the state was saved by another kind of condition, or is
                malformed; the condition is unchanged.
        """
        if state:
            raise StateError(
                f"`{type(self).__name__}` keeps no saved state (it does not override "
                "save_state), but was given one; load it into the condition that saved it."
            )

    def __and__(self, other: TerminationCondition) -> AndTerminationCondition:
        """Combine with ``other``: stop once both have fired, possibly on different calls."""
        if not isinstance(other, TerminationCondition):
            return NotImplemented
        return AndTerminationCondition(self, other)

    def __or__(self, other: TerminationCondition) -> OrTerminationCondition:
        """Combine with ``other``: stop as soon as either fires."""
        if not isinstance(other, TerminationCondition):
            return NotImplemented
        return OrTerminationCondition(self, other)


def saves_state(condition: TerminationCondition) -> bool:
    """Whether ``condition`` (every part, for ``&`` / ``|``) saves its own progress.

    False for a user subclass that does not override ``save_state``: a resumed run then
    rebuilds it by the replay rule (docs/state.md, "Termination conditions").
    """
    if isinstance(condition, _CombinedCondition):
        return all(saves_state(part) for part in condition.conditions)
    return type(condition).save_state is not TerminationCondition.save_state


def state_header(condition: object, state: Mapping[str, Any]) -> None:
    """Check that ``state`` was saved by a condition of ``condition``'s kind and version.

    Raises:
        StateError: If it was not.
    """
    if not isinstance(state, Mapping):
        raise StateError(
            f"`{type(condition).__name__}` state must be the dict save_state() returned, "
            f"not {type(state).__name__}."
        )
    kind = state.get("type")
    if kind != type(condition).__name__:
        raise StateError(
            f"This state was saved by `{kind}`, not by `{type(condition).__name__}`; load it "
            "into the condition that saved it (a run must be resumed with the same "
            "termination condition)."
        )
    if state.get("version") != TERMINATION_STATE_VERSION:
        raise StateError(
            f"`{kind}` state has version {state.get('version')!r}; this flowlib reads "
            f"version {TERMINATION_STATE_VERSION}."
        )


def _check_parts(
    kind: str, conditions: tuple[TerminationCondition, ...]
) -> tuple[TerminationCondition, ...]:
    if not conditions:
        raise InvalidValueError(f"`{kind}` needs at least one termination condition.")
    for position, condition in enumerate(conditions):
        if not isinstance(condition, TerminationCondition):
            raise InvalidTypeError(
                f"`{kind}` part {position} is {a(type(condition).__name__)}; every part must be "
                "a TerminationCondition such as MaxMessageTermination(10)."
            )
    return conditions


def _join(stops: Iterable[StopMessage]) -> StopMessage:
    """Merge the parts' stop messages the way AutoGen does: both fields joined by ", "."""
    stops = list(stops)
    return StopMessage(
        content=", ".join(stop.content for stop in stops),
        source=", ".join(stop.source for stop in stops),
    )


class CombinedConfig(BaseModel):
    """The config of [`AndTerminationCondition`][flowlib.base.AndTerminationCondition] and
    [`OrTerminationCondition`][flowlib.base.OrTerminationCondition]."""

    model_config = {"extra": "forbid"}

    conditions: list[ComponentModel]


class _CombinedCondition(TerminationCondition):
    """What ``&`` and ``|`` share: their parts, and their config (the parts' configs)."""

    _conditions: tuple[TerminationCondition, ...]

    def __init__(self, *conditions: TerminationCondition) -> None:
        self._conditions = _check_parts(type(self).__name__, conditions)

    @property
    def conditions(self) -> tuple[TerminationCondition, ...]:
        """The combined conditions, in order."""
        return tuple(self._conditions)

    component_config_schema: ClassVar[type[BaseModel]] = CombinedConfig

    def _parts_of(self, state: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        state_header(self, state)
        parts = state.get("parts")
        if not isinstance(parts, list) or len(parts) != len(self._conditions):
            count = len(parts) if isinstance(parts, list) else "no"
            raise StateError(
                f"`{type(self).__name__}` state has {count} parts; this condition has "
                f"{len(self._conditions)}. Load it into the condition that saved it."
            )
        return parts

    async def _load_parts(self, parts: list[Mapping[str, Any]]) -> None:
        """Load each part's state, or change none (a part that refuses rolls back)."""
        before = [await part.save_state() for part in self._conditions]
        loaded: list[TerminationCondition] = []
        try:
            for part, state in zip(self._conditions, parts, strict=True):
                await part.load_state(state)
                loaded.append(part)
        except Exception:
            for part, state in zip(loaded, before, strict=False):
                await part.load_state(state)
            raise

    def _to_config(self) -> CombinedConfig:
        return CombinedConfig(conditions=dump_fields(list(self._conditions), "conditions"))

    @classmethod
    def _from_config(cls, config: CombinedConfig) -> Self:
        return cls(*load_fields(config.conditions, "conditions", TerminationCondition))


class AndTerminationCondition(_CombinedCondition):
    """Fires once every part has fired; the parts may fire on different calls.

    A part that has fired is not called again until
    [`reset`][flowlib.base.AndTerminationCondition.reset]. The stop message joins the parts'
    contents, and their sources, with ``", "`` in the order the parts fired (parts that fire on the
    same call are taken in the order they were given).

    Usually built with ``a & b``.

    Args:
        *conditions: The parts, at least one.

    Raises:
        ValueError: If no condition is given.
        TypeError: If a part is not a [`TerminationCondition`][flowlib.base.TerminationCondition].
    """

    def __init__(self, *conditions: TerminationCondition) -> None:
        super().__init__(*conditions)
        # Part index -> its stop message; dict order is firing order.
        self._stops: dict[int, StopMessage] = {}

    @property
    def terminated(self) -> bool:
        """Whether every part has fired since the last reset."""
        return len(self._stops) == len(self._conditions)

    async def __call__(
        self, messages: Sequence[BaseAgentEvent | BaseChatMessage]
    ) -> StopMessage | None:
        """Feed the delta to every part that has not fired yet.

        Parts are called one at a time, in order, so side effects happen in a fixed order.

        Raises:
            TerminatedException: If every part has already fired and there was no reset.
        """
        if self.terminated:
            raise TerminatedException()
        for index, condition in enumerate(self._conditions):
            if index in self._stops:
                continue
            stop = await condition(messages)
            if stop is not None:
                self._stops[index] = stop
        if not self.terminated:
            return None
        return _join(self._stops.values())

    async def reset(self) -> None:
        """Reset every part and forget which parts have fired."""
        for condition in self._conditions:
            await condition.reset()
        self._stops.clear()

    async def save_state(self) -> Mapping[str, Any]:
        """Every part's state and the stop messages of the parts that fired, in order."""
        return {
            "type": type(self).__name__,
            "version": TERMINATION_STATE_VERSION,
            "parts": [dict(await part.save_state()) for part in self._conditions],
            "stops": [[index, stop.model_dump(mode="json")] for index, stop in self._stops.items()],
        }

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore every part and which parts fired (all checked first).

        Raises:
            StateError: If the state does not fit this combination.
        """
        parts = self._parts_of(state)
        try:
            stops = {int(index): StopMessage.model_validate(stop) for index, stop in state["stops"]}
        except Exception as exc:
            raise StateError(f"`AndTerminationCondition` state is malformed: {exc}") from exc
        if any(not 0 <= index < len(self._conditions) for index in stops):
            raise StateError("`AndTerminationCondition` state names a part it does not have.")
        await self._load_parts(parts)
        self._stops = stops

    def __repr__(self) -> str:
        return f"AndTerminationCondition({', '.join(map(repr, self._conditions))})"


class OrTerminationCondition(_CombinedCondition):
    """Fires as soon as any part fires.

    Every part sees every delta (so counters stay right even after another part fires).
    If several parts fire on the same call, their contents, and their sources, are joined
    with ``", "`` in the order the parts were given.

    Usually built with ``a | b``.

    Args:
        *conditions: The parts, at least one.

    Raises:
        ValueError: If no condition is given.
        TypeError: If a part is not a [`TerminationCondition`][flowlib.base.TerminationCondition].
    """

    def __init__(self, *conditions: TerminationCondition) -> None:
        super().__init__(*conditions)
        self._fired = False

    @property
    def terminated(self) -> bool:
        """Whether a part has fired since the last reset."""
        return self._fired

    async def __call__(
        self, messages: Sequence[BaseAgentEvent | BaseChatMessage]
    ) -> StopMessage | None:
        """Feed the delta to every part, one at a time, in order.

        Raises:
            TerminatedException: If the condition has already fired and there was no reset.
        """
        if self._fired:
            raise TerminatedException()
        stops: list[StopMessage] = []
        for condition in self._conditions:
            stop = await condition(messages)
            if stop is not None:
                stops.append(stop)
        if not stops:
            return None
        self._fired = True
        return _join(stops)

    async def reset(self) -> None:
        """Reset every part."""
        for condition in self._conditions:
            await condition.reset()
        self._fired = False

    async def save_state(self) -> Mapping[str, Any]:
        """Every part's state and whether the combination fired."""
        return {
            "type": type(self).__name__,
            "version": TERMINATION_STATE_VERSION,
            "parts": [dict(await part.save_state()) for part in self._conditions],
            "fired": self._fired,
        }

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore every part and whether the combination fired (all checked first).

        Raises:
            StateError: If the state does not fit this combination.
        """
        parts = self._parts_of(state)
        fired = state.get("fired")
        if not isinstance(fired, bool):
            raise StateError("`OrTerminationCondition` state has no boolean `fired`.")
        await self._load_parts(parts)
        self._fired = fired

    def __repr__(self) -> str:
        return f"OrTerminationCondition({', '.join(map(repr, self._conditions))})"


for _combined in (AndTerminationCondition, OrTerminationCondition):
    register_builtin(_combined, autogen="autogen_agentchat.base")
