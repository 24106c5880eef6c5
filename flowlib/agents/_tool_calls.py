"""Tool calling for AssistantAgent: building the tool set, running a model's calls, and
summarising their results."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from .._cancellation import CancellationToken
from ..base import Handoff
from ..errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from ..models import (
    AssistantMessage,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
)
from ..tools import BaseTool, Tool, as_tool
from ..tools.internal import CallScope, call_scope, tool_call, tool_call_scopes

__all__ = [
    "DEFAULT_MAX_TOOL_CALLS",
    "TOOL_CALL_LIMIT_ERROR",
    "SummaryFormatter",
    "ToolInput",
    "build_handoffs",
    "build_tools",
    "handoff_context",
    "run_linked",
    "run_tool_calls",
    "summarize",
]

ToolInput = BaseTool[Any, Any] | Tool | Callable[..., Any] | Callable[..., Awaitable[Any]]
"""What ``AssistantAgent(tools=...)`` accepts: tools, or plain sync / async functions."""

SummaryFormatter = Callable[[FunctionCall, FunctionExecutionResult], str]
"""Renders one tool call and its result for a ``ToolCallSummaryMessage``."""

_T = TypeVar("_T")


def build_tools(agent: str, tools: Sequence[ToolInput]) -> list[Tool]:
    """Turn ``tools`` into [`Tool`][flowlib.tools.Tool] objects, wrapping plain functions.

    Raises:
        ValueError: If two tools share a name.
        TypeError: If an item is neither a tool nor callable.
    """
    built: list[Tool] = []
    seen: set[str] = set()
    for item in tools:
        if isinstance(item, Tool):
            tool: Tool = item
        elif callable(item):
            tool = as_tool(item)
        else:
            raise InvalidArgumentTypeError(
                f"Agent `{agent}`: tools must be BaseTool instances or functions, not "
                f"{type(item).__name__} ({item!r}).",
                argument="tools",
            )
        if tool.name in seen:
            raise InvalidArgumentError(
                f"Agent `{agent}`: tool names must be unique, but `{tool.name}` is given "
                "twice. Rename one of the functions, or pass FunctionTool(func, "
                "description=..., name='other_name').",
                argument="tools",
            )
        seen.add(tool.name)
        built.append(tool)
    return built


def build_handoffs(
    agent: str, handoffs: Sequence[Handoff | str], tool_names: set[str]
) -> dict[str, Handoff]:
    """Turn ``handoffs`` into [`Handoff`][flowlib.base.Handoff] objects keyed by tool name.

    Raises:
        ValueError: If two handoffs share a name, or a handoff is named like a tool.
        TypeError: If an item is neither a Handoff nor a string.
    """
    built: dict[str, Handoff] = {}
    for item in handoffs:
        if isinstance(item, str):
            handoff = Handoff(target=item)
        elif isinstance(item, Handoff):
            handoff = item
        else:
            raise InvalidArgumentTypeError(
                f"Agent `{agent}`: handoffs must be Handoff objects or target names, not "
                f"{type(item).__name__} ({item!r}).",
                argument="handoffs",
            )
        if handoff.name in built:
            raise InvalidArgumentError(
                f"Agent `{agent}`: handoff names must be unique, but `{handoff.name}` is "
                "given twice. Remove the duplicate or give one a different `name`.",
                argument="handoffs",
            )
        if handoff.name in tool_names:
            raise InvalidArgumentError(
                f"Agent `{agent}`: handoff `{handoff.name}` has the same name as a tool. "
                "Give the handoff another `name` (Handoff(target=..., name=...)) or "
                "rename the tool.",
                argument="handoffs",
            )
        built[handoff.name] = handoff
    return built


async def run_linked(awaitable: Awaitable[_T], token: CancellationToken) -> _T:
    """Await ``awaitable`` as a task that ``token`` cancels.

    Raises:
        asyncio.CancelledError: If the token is (or becomes) cancelled.
    """
    if token.is_cancelled():
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        raise asyncio.CancelledError()
    task = asyncio.ensure_future(awaitable)
    token.add_callback(task.cancel)
    try:
        return await task
    finally:
        token.remove_callback(task.cancel)


async def _run_one(
    call: FunctionCall, tools: Mapping[str, Tool], token: CancellationToken, scope: CallScope
) -> FunctionExecutionResult:
    """Run one call in its idempotency-key scope; every failure becomes an error result,
    never an exception."""
    with call_scope(scope):
        return await _run_scoped(call, tools, token)


async def _run_scoped(
    call: FunctionCall, tools: Mapping[str, Tool], token: CancellationToken
) -> FunctionExecutionResult:

    def error(text: str) -> FunctionExecutionResult:
        return FunctionExecutionResult(
            content=f"Error: {text}", name=call.name, call_id=call.id, is_error=True
        )

    tool = tools.get(call.name)
    if tool is None:
        available = ", ".join(f"`{name}`" for name in tools) or "none"
        return error(f"there is no tool named `{call.name}`. Available tools: {available}.")
    try:
        arguments = json.loads(call.arguments) if call.arguments.strip() else {}
    except json.JSONDecodeError as exc:
        return error(f"the arguments of `{call.name}` are not valid JSON ({exc}).")
    if not isinstance(arguments, dict):
        return error(
            f"the arguments of `{call.name}` must be a JSON object, not {type(arguments).__name__}."
        )
    # Telemetry (flowlib/_telemetry.py): an execute_tool span and a ToolCallEvent log.
    with tool_call(
        name=call.name, call_id=call.id, description=tool.description, arguments=arguments
    ) as traced:
        try:
            value = await tool.run_json(arguments, token, call_id=call.id)
            content = tool.return_value_as_string(value)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failed = error(str(exc) or type(exc).__name__)
            traced.done(failed.content, is_error=True, error=exc)
            return failed
        traced.done(content)
    return FunctionExecutionResult(content=content, name=call.name, call_id=call.id, is_error=False)


DEFAULT_MAX_TOOL_CALLS = 100
"""How many tool calls of one model reply an ``AssistantAgent`` runs by default
(``max_tool_calls``); the rest get an error result naming the limit (issue 21.7)."""

TOOL_CALL_LIMIT_ERROR = "ToolCallLimitError"
"""The name an error result of a call past ``max_tool_calls`` starts with."""


async def run_tool_calls(
    calls: Sequence[FunctionCall],
    tools: Mapping[str, Tool],
    token: CancellationToken,
    *,
    limit: int | None = None,
) -> list[FunctionExecutionResult]:
    """Run the calls concurrently; return one result per call, in call order.

    Only the first ``limit`` calls run; each later one gets an error result starting
    with ``ToolCallLimitError`` (the model sees why, and may ask again with fewer).

    Raises:
        asyncio.CancelledError: If ``token`` is cancelled (every running call is cancelled).
    """
    if limit is not None and len(calls) > limit:
        ran = await run_tool_calls(calls[:limit], tools, token)
        refused = [
            FunctionExecutionResult(
                content=(
                    f"Error: {TOOL_CALL_LIMIT_ERROR}: not run. The reply asked for "
                    f"{len(calls)} tool calls and at most {limit} are run per reply (the "
                    f"first {limit} ran); ask again with fewer calls."
                ),
                name=call.name,
                call_id=call.id,
                is_error=True,
            )
            for call in calls[limit:]
        ]
        return [*ran, *refused]
    # Each call's key is numbered by its position in the turn (flowlib/tools/_keys.py).
    scopes = tool_call_scopes([call.name for call in calls])
    if len(calls) == 1:
        return [await run_linked(_run_one(calls[0], tools, token, scopes[0]), token)]
    results = await asyncio.gather(
        *(
            run_linked(_run_one(call, tools, token, scope), token)
            for call, scope in zip(calls, scopes, strict=True)
        )
    )
    return list(results)


def summarize(
    calls: Sequence[FunctionCall],
    results: Sequence[FunctionExecutionResult],
    template: str,
    formatter: SummaryFormatter | None,
) -> str:
    """Render each call with ``formatter`` (or ``template``) and join them with newlines."""
    lines: list[str] = []
    for call, result in zip(calls, results, strict=True):
        if formatter is not None:
            lines.append(formatter(call, result))
        else:
            lines.append(
                template.format(
                    tool_name=call.name,
                    arguments=call.arguments,
                    result=result.content,
                    is_error=result.is_error,
                )
            )
    return "\n".join(lines)


def handoff_context(
    agent: str,
    steps: Sequence[tuple[AssistantMessage, Sequence[FunctionExecutionResult]]],
    handoff_names: set[str],
) -> list[LLMMessage]:
    """The LLM messages a handoff passes on: this call's tool calls and their results.

    Handoff calls themselves are left out; a step that made only handoff calls
    contributes its ``thought`` (if any) as an assistant message.
    """
    context: list[LLMMessage] = []
    for request, results in steps:
        assert isinstance(request.content, list)
        # Results are in call order; pair them by position, as call ids may be empty.
        pairs = [
            (call, result)
            for call, result in zip(request.content, results, strict=True)
            if call.name not in handoff_names
        ]
        if pairs:
            context.append(
                AssistantMessage(
                    content=[call for call, _ in pairs], thought=request.thought, source=agent
                )
            )
            context.append(FunctionExecutionResultMessage(content=[r for _, r in pairs]))
        elif request.thought:
            context.append(AssistantMessage(content=request.thought, source=agent))
    return context
