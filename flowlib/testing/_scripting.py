"""Scripted model replies: what a ``ReplayChatCompletionClient`` plays back when the
model should call tools."""

from __future__ import annotations

import itertools
import json
from typing import Any

from ..errors import InvalidTypeError, InvalidValueError
from ..models import CreateResult, FunctionCall, RequestUsage

__all__ = ["tool_calls"]

# Deterministic call ids (call_1, call_2, ...) in one process, so printed runs repeat.
_call_ids = itertools.count(1)


def tool_calls(
    *calls: tuple[str, dict[str, Any]],
    thought: str | None = None,
    usage: RequestUsage | None = None,
) -> CreateResult:
    """A scripted model reply that calls tools, for a ``ReplayChatCompletionClient``.

    Args:
        calls: ``(tool name, arguments)`` pairs; several make a parallel tool call (the
            agent runs them concurrently).
        thought: Text the model says along with the calls (the agent emits it as a
            ``ThoughtEvent``).
        usage: The tokens the reply reports; none by default.

    Returns:
        A [`CreateResult`][flowlib.models.CreateResult] with ``finish_reason
        "function_calls"`` and one [`FunctionCall`][flowlib.models.FunctionCall] per pair,
        with ids ``call_1``, ``call_2``, ... counted across the process.

    Raises:
        ValueError: No call was given.
        TypeError: A call is not a ``(str, dict)`` pair, or its arguments are not JSON.

    Examples:
        >>> from flowlib.models import ReplayChatCompletionClient
        >>> reply = tool_calls(("get_weather", {"city": "Paris"}))
        >>> reply.content[0].name, reply.content[0].arguments
        ('get_weather', '{"city": "Paris"}')
        >>> model = ReplayChatCompletionClient([reply, "It is sunny in Paris."])
    """
    if not calls:
        raise InvalidValueError("tool_calls() needs at least one (tool name, arguments) pair.")
    content = []
    for call in calls:
        if (
            not isinstance(call, tuple)
            or len(call) != 2
            or not isinstance(call[0], str)
            or not isinstance(call[1], dict)
        ):
            raise InvalidTypeError(
                f"Each tool call is a (tool name, arguments dict) pair, got {call!r}."
            )
        name, arguments = call
        try:
            text = json.dumps(arguments)
        except TypeError as exc:
            raise InvalidTypeError(
                f"The arguments of the `{name}` call are not JSON-serialisable: {exc}."
            ) from exc
        content.append(FunctionCall(id=f"call_{next(_call_ids)}", name=name, arguments=text))
    return CreateResult(
        finish_reason="function_calls",
        content=content,
        usage=usage or RequestUsage(prompt_tokens=0, completion_tokens=0),
        cached=False,
        thought=thought,
    )
