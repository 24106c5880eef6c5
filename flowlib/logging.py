"""Structured events that flowlib logs with Python's `logging`, as AutoGen does.

Two loggers, named as constants so code ported from AutoGen only changes its import
(`from autogen_agentchat import EVENT_LOGGER_NAME` -> `from flowlib import EVENT_LOGGER_NAME`):

- [`EVENT_LOGGER_NAME`][flowlib.logging.EVENT_LOGGER_NAME] (`"flowlib.events"`): structured
  events at level `INFO`. The record's `msg` is one of the event objects below (its
  `str()` is one line of JSON with a `"type"` key), so a handler can read the fields
  from `record.msg.kwargs` instead of parsing text:
    - [`MessageEvent`][flowlib.logging.MessageEvent]: every message and event a team emits
      (logged once, by the outermost team of a run);
    - [`LLMCallEvent`][flowlib.logging.LLMCallEvent]: a finished model call with its token
      counts; [`LLMStreamStartEvent`][flowlib.logging.LLMStreamStartEvent] and
      [`LLMStreamEndEvent`][flowlib.logging.LLMStreamEndEvent] bracket a streamed one;
    - [`ToolCallEvent`][flowlib.logging.ToolCallEvent]: a tool call an agent ran, with
      its arguments and result.
- [`TRACE_LOGGER_NAME`][flowlib.logging.TRACE_LOGGER_NAME] (`"flowlib"`): human-readable
  `DEBUG` lines for developers (a team run starts and stops, a node turn starts and ends).
  Their wording may change between versions.

Nothing is built unless a logger is enabled for the level, so logging costs nothing when
it is off.

Examples:
    ```python
    import logging

    from flowlib import EVENT_LOGGER_NAME, TRACE_LOGGER_NAME

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger(TRACE_LOGGER_NAME).setLevel(logging.DEBUG)
    logging.getLogger(EVENT_LOGGER_NAME).setLevel(logging.INFO)
    ```
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "EVENT_LOGGER_NAME",
    "TRACE_LOGGER_NAME",
    "LLMCallEvent",
    "LLMStreamEndEvent",
    "LLMStreamStartEvent",
    "LogEvent",
    "MessageEvent",
    "ToolCallEvent",
]

EVENT_LOGGER_NAME = "flowlib.events"
"""Logger name for structured event logs (AutoGen: ``"autogen_agentchat.events"``)."""

TRACE_LOGGER_NAME = "flowlib"
"""Logger name for developer trace logs (AutoGen: ``"autogen_agentchat"``)."""

event_logger = logging.getLogger(EVENT_LOGGER_NAME)
trace_logger = logging.getLogger(TRACE_LOGGER_NAME)


def _plain(value: Any) -> Any:
    """A JSON-friendly form of ``value`` (pydantic models are dumped)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class LogEvent:
    """Base of the logged events: keyword fields, shown as one line of JSON.

    Args:
        **kwargs: The event's fields; pydantic models among them are dumped to JSON data.
    """

    type: str = "Event"

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = {key: _plain(value) for key, value in kwargs.items()}

    @property
    def kwargs(self) -> dict[str, Any]:
        """The event's fields (JSON data)."""
        return self._kwargs

    def __str__(self) -> str:
        return json.dumps({"type": self.type, **self._kwargs}, default=str)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._kwargs!r})"


class _UsageEvent(LogEvent):
    """An event of a finished model call: its token counts."""

    @property
    def prompt_tokens(self) -> int:
        """Input tokens the call used."""
        return int(self.kwargs["prompt_tokens"])

    @property
    def completion_tokens(self) -> int:
        """Output tokens the call used."""
        return int(self.kwargs["completion_tokens"])


class LLMCallEvent(_UsageEvent):
    """A model call finished.

    Args:
        messages: The request's messages (LLM messages or their JSON data).
        response: The [`CreateResult`][flowlib.models.CreateResult] (or its JSON data).
        prompt_tokens: Input tokens the call used.
        completion_tokens: Output tokens the call used.
        **kwargs: More fields (flowlib adds ``model`` and ``system``).
    """

    type = "LLMCall"

    def __init__(
        self,
        *,
        messages: Sequence[Any],
        response: Any,
        prompt_tokens: int,
        completion_tokens: int,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            messages=list(messages),
            response=response,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            **kwargs,
        )


class LLMStreamStartEvent(LogEvent):
    """A streamed model call started.

    Args:
        messages: The request's messages.
        **kwargs: More fields (flowlib adds ``model`` and ``system``).
    """

    type = "LLMStreamStart"

    def __init__(self, *, messages: Sequence[Any], **kwargs: Any) -> None:
        super().__init__(messages=list(messages), **kwargs)


class LLMStreamEndEvent(_UsageEvent):
    """A streamed model call finished.

    Args:
        response: The assembled [`CreateResult`][flowlib.models.CreateResult].
        prompt_tokens: Input tokens the call used.
        completion_tokens: Output tokens the call used.
        **kwargs: More fields (flowlib adds ``model`` and ``system``).
    """

    type = "LLMStreamEnd"

    def __init__(
        self, *, response: Any, prompt_tokens: int, completion_tokens: int, **kwargs: Any
    ) -> None:
        super().__init__(
            response=response,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            **kwargs,
        )


class ToolCallEvent(LogEvent):
    """An agent ran a tool call.

    Args:
        tool_name: The tool's name.
        arguments: The arguments the model gave.
        result: The result as the model sees it (the error text when it failed).
        **kwargs: More fields (flowlib adds ``call_id`` and ``is_error``).
    """

    type = "ToolCall"

    def __init__(
        self, *, tool_name: str, arguments: Mapping[str, Any], result: str, **kwargs: Any
    ) -> None:
        super().__init__(tool_name=tool_name, arguments=dict(arguments), result=result, **kwargs)


class MessageEvent(LogEvent):
    """A team emitted a message or an event.

    Args:
        message: The message or event (its ``dump()`` is logged).
        team: The name of the team whose run emitted it.
        **kwargs: More fields.
    """

    type = "Message"

    def __init__(self, *, message: Any, team: str, **kwargs: Any) -> None:
        dump = getattr(message, "dump", None)
        data = dump() if callable(dump) else message
        super().__init__(team=team, message=data, **kwargs)
