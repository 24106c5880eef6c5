"""The built-in termination conditions.

Each condition's ``StopMessage`` has the class name as ``source`` and a fixed reason text
(the run's ``stop_reason``) that matches AutoGen AgentChat word for word.
"""

from __future__ import annotations

import inspect
import time
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar, TypeAlias

from pydantic import BaseModel, ConfigDict
from typing_extensions import Self

from ..base import TerminatedException, TerminationCondition
from ..base.internal import TERMINATION_STATE_VERSION, check_count, check_number, state_header
from ..component import json_field, load_error, refuse_field, skip_field
from ..component.internal import register_builtin
from ..errors import InvalidArgumentError, InvalidTypeError, InvalidValueError, StateError
from ..messages import (
    BaseAgentEvent,
    BaseChatMessage,
    HandoffMessage,
    StopMessage,
    TextMessage,
    ToolCallExecutionEvent,
)

_Messages: TypeAlias = Sequence[BaseAgentEvent | BaseChatMessage]


def _names(parameter: str, owner: str, names: Sequence[str]) -> tuple[str, ...]:
    """Copy a list of agent names, refusing a bare string (which `in` would match by substring)."""
    if isinstance(names, str):
        raise InvalidTypeError(
            f"`{owner}` {parameter} must be a list of agent names, not the string {names!r}; "
            f"write {parameter}=[{names!r}]."
        )
    copied = tuple(names)
    if not copied:
        raise InvalidValueError(
            f"`{owner}` {parameter} is empty, so the condition could never fire; "
            "give at least one agent name."
        )
    return copied


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EmptyConfig(_Config):
    """The config of a condition without arguments."""


class MaxMessageConfig(_Config):
    """The config of [`MaxMessageTermination`][flowlib.conditions.MaxMessageTermination]."""

    max_messages: int
    include_agent_event: bool = False


class TextMentionConfig(_Config):
    """The config of [`TextMentionTermination`][flowlib.conditions.TextMentionTermination]."""

    text: str
    sources: list[str] | None = None


class TokenUsageConfig(_Config):
    """The config of [`TokenUsageTermination`][flowlib.conditions.TokenUsageTermination]."""

    max_total_token: int | None = None
    max_prompt_token: int | None = None
    max_completion_token: int | None = None


class HandoffConfig(_Config):
    """The config of [`HandoffTermination`][flowlib.conditions.HandoffTermination]."""

    target: str


class TimeoutConfig(_Config):
    """The config of [`TimeoutTermination`][flowlib.conditions.TimeoutTermination]."""

    timeout_seconds: float


class SourceMatchConfig(_Config):
    """The config of [`SourceMatchTermination`][flowlib.conditions.SourceMatchTermination]."""

    sources: list[str]


class TextMessageConfig(_Config):
    """The config of [`TextMessageTermination`][flowlib.conditions.TextMessageTermination]."""

    source: str | None = None


class FunctionCallConfig(_Config):
    """The config of [`FunctionCallTermination`][flowlib.conditions.FunctionCallTermination]."""

    function_name: str


_HEADER = ("type", "version", "terminated")


class _LatchedCondition(TerminationCondition):
    """Bookkeeping shared by the built-ins: fire once, then refuse calls until reset.

    Subclasses implement ``_check``; ``_restart`` clears their own counters and
    ``_params`` returns their constructor arguments (for ``repr`` and the config; by
    default the config schema's fields, kept as ``_<field>``).
    """

    def __init__(self) -> None:
        self._terminated = False

    @property
    def terminated(self) -> bool:
        """Whether the condition has fired since it was created or last reset."""
        return self._terminated

    async def __call__(self, messages: _Messages) -> StopMessage | None:
        """Check the messages received since the previous call.

        Args:
            messages: The new messages and events (the delta), oldest first.

        Returns:
            A ``StopMessage`` carrying the stop reason, or ``None`` to keep going.

        Raises:
            TerminatedException: If the condition has already fired and was not reset.
        """
        if self._terminated:
            raise TerminatedException()
        stop = await self._check(messages)
        if stop is not None:
            self._terminated = True
        return stop

    async def reset(self) -> None:
        """Return the condition to its initial, not-fired state."""
        self._terminated = False
        self._restart()

    @abstractmethod
    async def _check(self, messages: _Messages) -> StopMessage | None:
        """Return a stop message if ``messages`` complete the condition."""

    def _stop(self, reason: str) -> StopMessage:
        """The stop message giving ``reason``; its source is the built-in's class name (the
        last part of its provider, so a subclass keeps it), as in AutoGen."""
        provider = self.component_provider_override or type(self).__name__
        return StopMessage(content=reason, source=provider.rpartition(".")[2])

    def _restart(self) -> None:
        """Clear per-run state other than the fired flag. Nothing by default."""

    async def save_state(self) -> Mapping[str, Any]:
        """Whether the condition fired and its progress (e.g. the message count)."""
        return {
            "type": type(self).__name__,
            "version": TERMINATION_STATE_VERSION,
            "terminated": self._terminated,
            **self._progress(),
        }

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore a state returned by ``save_state`` (checked first).

        Raises:
            StateError: If it was saved by another kind of condition or is malformed.
        """
        state_header(self, state)
        terminated = state.get("terminated")
        if not isinstance(terminated, bool):
            raise StateError(f"`{type(self).__name__}` state has no boolean `terminated`.")
        progress = {k: v for k, v in state.items() if k not in _HEADER}
        self._restore(progress)
        self._terminated = terminated

    def _progress(self) -> dict[str, Any]:
        """The per-run counters ``save_state`` stores. None by default."""
        return {}

    def _restore(self, progress: Mapping[str, Any]) -> None:
        """Check and install counters saved by ``_progress``; raise StateError if bad."""
        if progress:
            raise StateError(
                f"`{type(self).__name__}` state has unknown entries {sorted(progress)}."
            )

    def _params(self) -> dict[str, Any]:
        """The constructor arguments that recreate this condition: its config's fields,
        which the condition keeps as ``_<field>`` (a tuple is given back as the list the
        config holds)."""
        params: dict[str, Any] = {}
        for name in self.component_config_schema.model_fields:
            value = getattr(self, "_" + name)
            params[name] = list(value) if isinstance(value, tuple) else value
        return params

    # -- the component protocol: the config is the constructor arguments ------------------

    component_config_schema: ClassVar[type[BaseModel]] = EmptyConfig

    def _to_config(self) -> BaseModel:
        arguments = {
            name: json_field(value, name)
            for name, value in self._params().items()
            if value is not None
        }
        return self.component_config_schema.model_validate(arguments)

    @classmethod
    def _from_config(cls, config: BaseModel) -> Self:
        return cls(**config.model_dump(exclude_none=True))

    def __repr__(self) -> str:
        arguments = ", ".join(f"{name}={value!r}" for name, value in self._params().items())
        return f"{type(self).__name__}({arguments})"


class _FirstMatch(_LatchedCondition):
    """A condition that fires on the first new message that matches: ``_reason`` says
    whether one does (its stop reason, or None)."""

    async def _check(self, messages: _Messages) -> StopMessage | None:
        for message in messages:
            reason = self._reason(message)
            if reason is not None:
                return self._stop(reason)
        return None

    @abstractmethod
    def _reason(self, message: BaseAgentEvent | BaseChatMessage) -> str | None:
        """The stop reason if ``message`` completes the condition, else None."""


class _Counting(_LatchedCondition):
    """A condition that counts across calls: ``_counts`` holds the non-negative integers
    named by ``_count_names``, which its state saves by name and a reset sets to 0."""

    _count_names: ClassVar[tuple[str, ...]]

    def __init__(self) -> None:
        super().__init__()
        self._counts = dict.fromkeys(self._count_names, 0)

    def _restart(self) -> None:
        self._counts = dict.fromkeys(self._count_names, 0)

    def _progress(self) -> dict[str, Any]:
        return dict(self._counts)

    def _restore(self, progress: Mapping[str, Any]) -> None:
        names = self._count_names
        if set(progress) != set(names) or any(
            type(progress[name]) is not int or progress[name] < 0 for name in names
        ):
            raise StateError(
                f"`{type(self).__name__}` state must hold the non-negative integers "
                f"{', '.join(names)}; got {dict(progress)!r}."
            )
        self._counts = {name: progress[name] for name in names}


class StopMessageTermination(_LatchedCondition):
    """Stops when a [`StopMessage`][flowlib.messages.StopMessage] is among the new messages.

    Stop reason: ``"Stop message received"``.
    """

    async def _check(self, messages: _Messages) -> StopMessage | None:
        if any(isinstance(message, StopMessage) for message in messages):
            return self._stop("Stop message received")
        return None


class MaxMessageTermination(_Counting):
    """Stops once a number of messages have passed, task messages included.

    Stop reason: ``"Maximum number of messages {max_messages} reached, current message
    count: {count}"`` (one line). The count can overshoot ``max_messages`` when one call
    brings several messages.

    Args:
        max_messages: How many messages end the run; at least 1.
        include_agent_event: Also count events (``BaseAgentEvent``: tool calls, tool
            results, ...). By default only chat messages (``BaseChatMessage``) count.

    Raises:
        ValueError: If ``max_messages`` is less than 1.

    Examples:
        ```python
        from flowlib.conditions import MaxMessageTermination
        from flowlib.messages import TextMessage

        stop = MaxMessageTermination(2)
        assert await stop([TextMessage(content="Hi", source="user")]) is None
        result = await stop([TextMessage(content="Hello", source="assistant")])
        assert result.content == (
            "Maximum number of messages 2 reached, current message count: 2"
        )
        ```
    """

    component_config_schema = MaxMessageConfig
    _count_names = ("message_count",)

    def __init__(self, max_messages: int, include_agent_event: bool = False) -> None:
        super().__init__()
        check_count(max_messages, "max_messages")
        self._max_messages = max_messages
        self._include_agent_event = include_agent_event

    async def _check(self, messages: _Messages) -> StopMessage | None:
        self._counts["message_count"] += sum(
            1
            for message in messages
            if self._include_agent_event or isinstance(message, BaseChatMessage)
        )
        count = self._counts["message_count"]
        if count < self._max_messages:
            return None
        return self._stop(
            f"Maximum number of messages {self._max_messages} reached, "
            f"current message count: {count}"
        )


class TextMentionTermination(_FirstMatch):
    """Stops when a text appears in a message.

    Every new message *and event* is checked through its ``to_text()`` rendering (as in
    AutoGen), so a mention inside a tool-call event or a thought event counts too.

    Stop reason: ``"Text '{text}' mentioned"``.

    Args:
        text: The text to look for (case-sensitive substring).
        sources: Only look at messages from these agents. ``None`` (default): all.

    Raises:
        ValueError: If ``text`` is empty, or ``sources`` is an empty list.
        TypeError: If ``sources`` is a single string instead of a list.

    Examples:
        ```python
        from flowlib.conditions import TextMentionTermination
        from flowlib.messages import TextMessage

        stop = TextMentionTermination("APPROVE", sources=["critic"])
        result = await stop([TextMessage(content="APPROVE", source="critic")])
        assert result.content == "Text 'APPROVE' mentioned"
        ```
    """

    component_config_schema = TextMentionConfig

    def __init__(self, text: str, sources: Sequence[str] | None = None) -> None:
        super().__init__()
        if not text:
            raise InvalidValueError(
                "`TextMentionTermination` text is empty, so every message would match; "
                'give the text to look for, e.g. TextMentionTermination("TERMINATE").'
            )
        self._text = text
        self._sources = (
            None if sources is None else _names("sources", "TextMentionTermination", sources)
        )

    @property
    def text(self) -> str:
        """The text whose mention stops the run."""
        return self._text

    @property
    def sources(self) -> tuple[str, ...] | None:
        """The sources whose messages count, or None for every source."""
        return None if self._sources is None else tuple(self._sources)

    def _reason(self, message: BaseAgentEvent | BaseChatMessage) -> str | None:
        if self._sources is not None and message.source not in self._sources:
            return None
        return f"Text '{self._text}' mentioned" if self._text in message.to_text() else None


class TokenUsageTermination(_Counting):
    """Stops once the messages' reported token usage reaches a budget.

    Sums ``models_usage`` (prompt and completion tokens) over every message and event;
    messages without ``models_usage`` count nothing. Fires when any given limit is reached.

    Stop reason: ``"Token usage limit reached, total token count: {total}, prompt token
    count: {prompt}, completion token count: {completion}."`` (one line).

    Args:
        max_total_token: Limit on prompt plus completion tokens.
        max_prompt_token: Limit on prompt tokens.
        max_completion_token: Limit on completion tokens.

    Raises:
        ValueError: If no limit is given, or a limit is less than 1.
    """

    component_config_schema = TokenUsageConfig
    _count_names = ("prompt_tokens", "completion_tokens")

    def __init__(
        self,
        max_total_token: int | None = None,
        max_prompt_token: int | None = None,
        max_completion_token: int | None = None,
    ) -> None:
        super().__init__()
        limits = {
            "max_total_token": max_total_token,
            "max_prompt_token": max_prompt_token,
            "max_completion_token": max_completion_token,
        }
        if all(limit is None for limit in limits.values()):
            raise InvalidArgumentError(
                "At least one of max_total_token, max_prompt_token, or max_completion_token "
                "must be provided",
                argument="max_total_token",
            )
        for name, limit in limits.items():
            if limit is not None and limit < 1:
                raise InvalidArgumentError(
                    f"`TokenUsageTermination` {name} is {limit}; a limit must be at least 1.",
                    argument=name,
                )
        self._max_total_token = max_total_token
        self._max_prompt_token = max_prompt_token
        self._max_completion_token = max_completion_token

    async def _check(self, messages: _Messages) -> StopMessage | None:
        counts = self._counts
        for message in messages:
            usage = message.models_usage
            if usage is not None:
                counts["prompt_tokens"] += usage.prompt_tokens
                counts["completion_tokens"] += usage.completion_tokens
        prompt = counts["prompt_tokens"]
        completion = counts["completion_tokens"]
        total = prompt + completion
        if not (
            _reached(total, self._max_total_token)
            or _reached(prompt, self._max_prompt_token)
            or _reached(completion, self._max_completion_token)
        ):
            return None
        return self._stop(
            f"Token usage limit reached, total token count: {total}, "
            f"prompt token count: {prompt}, completion token count: {completion}."
        )


def _reached(count: int, limit: int | None) -> bool:
    return limit is not None and count >= limit


class HandoffTermination(_FirstMatch):
    """Stops when a [`HandoffMessage`][flowlib.messages.HandoffMessage] to ``target`` appears.

    Stop reason: ``"Handoff to {target} from {source} detected."``, where ``source`` is
    the agent that handed off.

    Args:
        target: The handoff target to watch for, e.g. ``"user"``.
    """

    component_config_schema = HandoffConfig

    def __init__(self, target: str) -> None:
        super().__init__()
        self._target = target

    def _reason(self, message: BaseAgentEvent | BaseChatMessage) -> str | None:
        if isinstance(message, HandoffMessage) and message.target == self._target:
            return f"Handoff to {self._target} from {message.source} detected."
        return None


class TimeoutTermination(_LatchedCondition):
    """Stops on the first call made once a duration has passed.

    The clock starts when the condition is created and restarts on
    [`reset`][flowlib.base.TerminationCondition.reset]. It is only looked at when the condition is
    called, i.e. after an agent's turn: a turn in progress is never interrupted.

    Stop reason: ``"Timeout of {timeout_seconds} seconds reached"``.

    Args:
        timeout_seconds: The duration, in seconds.
        clock: Returns the current time in seconds; defaults to ``time.monotonic``.
            Inject a fake clock in tests.

    Raises:
        ValueError: If ``timeout_seconds`` is negative.
    """

    component_config_schema = TimeoutConfig

    def __init__(
        self, timeout_seconds: float, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        check_number(timeout_seconds, "timeout_seconds")
        if timeout_seconds < 0:
            raise InvalidValueError(
                f"`TimeoutTermination` timeout_seconds is {timeout_seconds}; "
                "it must be zero or more."
            )
        self._timeout_seconds = timeout_seconds
        self._clock = clock
        self._start_time = clock()

    async def _check(self, messages: _Messages) -> StopMessage | None:
        if self._clock() - self._start_time < self._timeout_seconds:
            return None
        return self._stop(f"Timeout of {self._timeout_seconds} seconds reached")

    def _restart(self) -> None:
        self._start_time = self._clock()

    def _progress(self) -> dict[str, Any]:
        # Elapsed time, not a clock reading: a monotonic clock means nothing in another
        # process. Time while no process ran the run does not count (docs/state.md).
        return {"elapsed_seconds": max(0.0, self._clock() - self._start_time)}

    def _restore(self, progress: Mapping[str, Any]) -> None:
        elapsed = progress.get("elapsed_seconds")
        if (
            set(progress) != {"elapsed_seconds"}
            or isinstance(elapsed, bool)
            or not isinstance(elapsed, int | float)
            or not elapsed >= 0
        ):
            raise StateError(
                "`TimeoutTermination` state must hold elapsed_seconds >= 0; "
                f"got {dict(progress)!r}."
            )
        self._start_time = self._clock() - float(elapsed)

    def _to_config(self) -> BaseModel:
        if self._clock is not time.monotonic:
            skip_field(
                "clock",
                "a replaced clock is a Python callable; the loaded condition uses time.monotonic.",
            )
        return super()._to_config()


class ExternalTermination(_LatchedCondition):
    """Stops on the next call after [`set`][flowlib.conditions.ExternalTermination.set], e.g. from a
    UI "Stop" button.

    The agent that is speaking finishes its turn first, so the team's state stays
    consistent; to abort at once, use a ``CancellationToken`` instead.

    Stop reason: ``"External termination requested"``.

    Examples:
        ```python
        import asyncio

        from flowlib.conditions import ExternalTermination, TextMentionTermination
        from flowlib.teams import RoundRobinGroupChat

        stop_button = ExternalTermination()
        team = RoundRobinGroupChat(
            [primary, critic],
            termination_condition=stop_button | TextMentionTermination("APPROVE"),
        )
        run = asyncio.create_task(team.run(task="Write a poem."))
        stop_button.set()  # the team stops after the current agent's turn
        await run
        ```
    """

    def __init__(self) -> None:
        super().__init__()
        self._requested = False

    def set(self) -> None:
        """Ask the run to stop; the condition fires on its next call."""
        self._requested = True

    async def _check(self, messages: _Messages) -> StopMessage | None:
        if not self._requested:
            return None
        return self._stop("External termination requested")

    def _restart(self) -> None:
        self._requested = False

    def _progress(self) -> dict[str, Any]:
        return {"requested": self._requested}

    def _restore(self, progress: Mapping[str, Any]) -> None:
        requested = progress.get("requested")
        if set(progress) != {"requested"} or not isinstance(requested, bool):
            raise StateError(
                "`ExternalTermination` state must hold a boolean `requested`; "
                f"got {dict(progress)!r}."
            )
        self._requested = requested


class SourceMatchTermination(_FirstMatch):
    """Stops as soon as one of the given agents has produced a message.

    Stop reason: ``"'{source}' answered"``.

    Args:
        sources: The agent names to watch for.

    Raises:
        ValueError: If ``sources`` is empty.
        TypeError: If ``sources`` is a single string instead of a list.
    """

    component_config_schema = SourceMatchConfig

    def __init__(self, sources: Sequence[str]) -> None:
        super().__init__()
        self._sources = _names("sources", "SourceMatchTermination", sources)

    def _reason(self, message: BaseAgentEvent | BaseChatMessage) -> str | None:
        return f"'{message.source}' answered" if message.source in self._sources else None


class TextMessageTermination(_FirstMatch):
    """Stops when a [`TextMessage`][flowlib.messages.TextMessage] arrives, optionally from one
    agent.

    Handy for a single agent in a tool loop: the run ends when the agent answers in
    plain text instead of calling a tool.

    Stop reason: ``"Text message received from '{source}'"``.

    Args:
        source: Only a text message from this agent counts. ``None`` (default): any.
    """

    component_config_schema = TextMessageConfig

    def __init__(self, source: str | None = None) -> None:
        super().__init__()
        self._source = source

    def _reason(self, message: BaseAgentEvent | BaseChatMessage) -> str | None:
        if isinstance(message, TextMessage) and self._source in (None, message.source):
            return f"Text message received from '{message.source}'"
        return None


class FunctionCallTermination(_FirstMatch):
    """Stops once a tool with the given name has been executed.

    Looks at the results carried by
    [`ToolCallExecutionEvent`][flowlib.messages.ToolCallExecutionEvent]; a result that is an error
    still counts as executed.

    Stop reason: ``"Function '{function_name}' was executed."``.

    Args:
        function_name: The tool (function) name to watch for.
    """

    component_config_schema = FunctionCallConfig

    def __init__(self, function_name: str) -> None:
        super().__init__()
        self._function_name = function_name

    def _reason(self, message: BaseAgentEvent | BaseChatMessage) -> str | None:
        if isinstance(message, ToolCallExecutionEvent) and any(
            result.name == self._function_name for result in message.content
        ):
            return f"Function '{self._function_name}' was executed."
        return None


class FunctionalTermination(_LatchedCondition):
    """Stops when a function of the new messages returns a true value.

    The function receives each delta (not the whole history) and may be sync or async.
    It cannot be serialised, so this condition has no declarative config.

    Stop message: ``StopMessage(source="FunctionalTermination",
    content="Functional termination condition met")``.

    Args:
        func: ``func(messages) -> bool``, or an async function returning ``bool``.

    Raises:
        TypeError: If ``func`` is not callable.

    Examples:
        ```python
        from flowlib.conditions import FunctionalTermination
        from flowlib.messages import StopMessage

        def last_is_stop(messages):
            return bool(messages) and isinstance(messages[-1], StopMessage)

        stop = FunctionalTermination(last_is_stop)
        result = await stop([StopMessage(content="Stop", source="agent1")])
        assert result.content == "Functional termination condition met"
        ```
    """

    component_provider_override = None

    def __init__(
        self, func: Callable[[_Messages], bool] | Callable[[_Messages], Awaitable[bool]]
    ) -> None:
        super().__init__()
        if not callable(func):
            raise InvalidTypeError(
                f"`FunctionalTermination` needs a function of the messages, got a "
                f"{type(func).__name__}."
            )
        self._func = func

    async def _check(self, messages: _Messages) -> StopMessage | None:
        outcome = self._func(messages)
        met = bool(await outcome) if inspect.isawaitable(outcome) else bool(outcome)
        if not met:
            return None
        return self._stop("Functional termination condition met")

    def _params(self) -> dict[str, Any]:
        return {"func": self._func}

    def _to_config(self) -> BaseModel:
        refuse_field(
            "func",
            "FunctionalTermination wraps a Python function, which a declarative config cannot "
            "hold. Use a built-in condition (they all serialise), or register your own "
            "TerminationCondition subclass with flowlib.component.register_component().",
        )

    @classmethod
    def _from_config(cls, config: BaseModel) -> Self:
        raise load_error(
            "FunctionalTermination wraps a Python function and cannot be loaded from a config."
        )


_AUTOGEN = "autogen_agentchat.conditions"

for _condition in (
    MaxMessageTermination,
    TextMentionTermination,
    StopMessageTermination,
    TokenUsageTermination,
    HandoffTermination,
    TimeoutTermination,
    SourceMatchTermination,
    TextMessageTermination,
    FunctionCallTermination,
):
    register_builtin(_condition, autogen=_AUTOGEN)
register_builtin(ExternalTermination, autogen=_AUTOGEN, shared_state=True)  # one stop button
register_builtin(FunctionalTermination, autogen=_AUTOGEN, loadable=False)
