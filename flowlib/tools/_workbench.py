"""Workbenches: a set of tools listed and called together, possibly from another process.

A `Workbench` lists its tools (`list_tools()`) and runs one by name
(`call_tool()`), returning a `ToolResult` instead of raising when the
tool fails. `StaticWorkbench` holds plain tools; ``flowlib.tools.mcp.McpWorkbench``
serves the tools of an MCP server. ``AssistantAgent(workbench=...)`` lists the tools of
its workbenches before every model call and routes each call to the workbench that listed
the tool.
"""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, Field

from .._cancellation import CancellationToken
from .._lifecycle import AsyncResource
from ..errors import (
    ArgumentTypeError,
    FlowlibError,
    InvalidArgumentError,
    InvalidTypeError,
    InvalidValueError,
)
from ..models.image import Image
from ._schema import Tool, ToolSchema

__all__ = [
    "ImageResultContent",
    "ListedTool",
    "ResultContent",
    "StaticWorkbench",
    "TextResultContent",
    "ToolResult",
    "Workbench",
    "WorkbenchToolError",
    "as_workbenches",
    "workbench_tools",
]


class TextResultContent(BaseModel):
    """A text part of a tool's result."""

    type: Literal["TextResultContent"] = "TextResultContent"
    content: str


class ImageResultContent(BaseModel):
    """An image part of a tool's result."""

    type: Literal["ImageResultContent"] = "ImageResultContent"
    content: Image


ResultContent = Annotated[TextResultContent | ImageResultContent, Field(discriminator="type")]
"""One part of a `ToolResult`."""


class ToolResult(BaseModel):
    """What `Workbench.call_tool()` returns: the tool's name, its result parts, and
    whether the call failed (a failed call's parts say why)."""

    type: Literal["ToolResult"] = "ToolResult"
    name: str
    result: list[ResultContent]
    is_error: bool = False

    def to_text(self, replace_image: str | None = None) -> str:
        """The result as text: text parts as they are, images as ``replace_image`` (or
        their data URI), joined with newlines."""
        parts: list[str] = []
        for part in self.result:
            if isinstance(part, TextResultContent):
                parts.append(part.content)
            else:
                parts.append(replace_image if replace_image is not None else part.content.data_uri)
        return "\n".join(parts)


class WorkbenchToolError(FlowlibError, RuntimeError):
    """A workbench reported a failed tool call (its `ToolResult` has
    ``is_error=True``); the message is the result's text."""


class Workbench(AsyncResource):
    """A group of tools that are listed and called together and may share state or a
    connection (an MCP server, ...).

    Use it as an async context manager (``async with workbench:``) or call
    `start()` and `stop()`. Workbenches that need no resources may be used
    without starting them.
    """

    component_type: ClassVar[str] = "workbench"

    @abstractmethod
    async def list_tools(self) -> list[ToolSchema]:
        """The schemas of the tools currently available."""

    @abstractmethod
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> ToolResult:
        """Run the tool ``name`` on ``arguments``.

        A tool that fails, or a name that is not listed, gives a result with
        ``is_error=True``; it does not raise.

        Raises:
            asyncio.CancelledError: If ``cancellation_token`` is cancelled.
        """

    async def start(self) -> None:
        """Acquire what the tools need (a connection, a process); nothing by default."""

    async def stop(self) -> None:
        """Release what `start()` acquired; nothing by default."""

    async def reset(self) -> None:
        """Bring the tools back to their initial state; nothing by default."""

    async def save_state(self) -> Mapping[str, Any]:
        """The workbench's state as JSON-serialisable data; empty by default."""
        return {}

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore a state from `save_state()`; ignored by default."""


class StaticWorkbench(Workbench):
    """A workbench over a fixed list of tools (``BaseTool`` / ``FunctionTool`` objects).

    Args:
        tools: The tools; their names must be unique.
        description: What the tools are for (informational).

    Raises:
        ValueError: If two tools share a name.
        TypeError: If an item is not a tool.

    Examples:
        >>> import asyncio
        >>> from flowlib.tools import FunctionTool
        >>> def add(a: int, b: int) -> int:
        ...     return a + b
        >>> workbench = StaticWorkbench([FunctionTool(add, description="Add two numbers.")])
        >>> [schema["name"] for schema in asyncio.run(workbench.list_tools())]
        ['add']
        >>> asyncio.run(workbench.call_tool("add", {"a": 1, "b": 2})).to_text()
        '3'
    """

    def __init__(self, tools: Sequence[Tool], description: str | None = None) -> None:
        by_name: dict[str, Tool] = {}
        for tool in tools:
            if not isinstance(tool, Tool):
                raise InvalidTypeError(
                    f"StaticWorkbench takes tools (BaseTool, FunctionTool), not "
                    f"{type(tool).__name__}; wrap a function with FunctionTool(func, "
                    "description=...)."
                )
            if tool.name in by_name:
                raise InvalidValueError(
                    f"StaticWorkbench: two tools are named `{tool.name}`; tool names must be "
                    "unique."
                )
            by_name[tool.name] = tool
        self._tools = by_name
        self._description = description

    @property
    def tools(self) -> list[Tool]:
        """The tools, in the order given."""
        return list(self._tools.values())

    @property
    def description(self) -> str | None:
        """What the tools are for."""
        return self._description

    async def list_tools(self) -> list[ToolSchema]:
        """The schemas of the tools, in the order given."""
        return [tool.schema for tool in self._tools.values()]

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> ToolResult:
        """Run the tool ``name``; a failure becomes a result with ``is_error=True``.

        Raises:
            asyncio.CancelledError: If ``cancellation_token`` is cancelled.
        """
        tool = self._tools.get(name)
        if tool is None:
            available = ", ".join(f"`{known}`" for known in self._tools) or "none"
            return _error(name, f"there is no tool named `{name}`. Available tools: {available}.")
        token = cancellation_token or CancellationToken()
        try:
            value = await tool.run_json(dict(arguments or {}), token, call_id=call_id)
            text = tool.return_value_as_string(value)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return _error(name, str(exc) or type(exc).__name__)
        return ToolResult(name=name, result=[TextResultContent(content=text)])

    async def save_state(self) -> Mapping[str, Any]:
        """The saved states of the tools that have one, by tool name."""
        states: dict[str, Any] = {}
        for name, tool in self._tools.items():
            saver = getattr(tool, "save_state_json", None)
            if saver is not None:
                states[name] = dict(await saver())
        return {"type": "StaticWorkbenchState", "tools": states}

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore tool states saved by `save_state()` (unknown tools are skipped)."""
        tools = state.get("tools", {})
        if not isinstance(tools, Mapping):
            return
        for name, tool_state in tools.items():
            loader = getattr(self._tools.get(name), "load_state_json", None)
            if loader is not None and isinstance(tool_state, Mapping):
                await loader(tool_state)


def _error(name: str, text: str) -> ToolResult:
    return ToolResult(name=name, result=[TextResultContent(content=text)], is_error=True)


class ListedTool(ABC):
    """A tool known by the schema a workbench or server listed, whose calls return a
    [`ToolResult`][flowlib.tools.ToolResult]: an error result raises
    [`WorkbenchToolError`][flowlib.tools.WorkbenchToolError] (an agent turns it into an error
    result for the model)."""

    def __init__(self, schema: ToolSchema) -> None:
        self._schema = schema

    @property
    def name(self) -> str:
        """The tool's name, as listed."""
        return self._schema["name"]

    @property
    def description(self) -> str:
        """The listed description of the tool."""
        return self._schema.get("description", "")

    @property
    def schema(self) -> ToolSchema:
        """The schema sent to the model."""
        return self._schema

    async def run_json(
        self,
        args: Mapping[str, Any],
        cancellation_token: CancellationToken,
        call_id: str | None = None,
    ) -> ToolResult:
        """Call the tool; an error result raises ``WorkbenchToolError``."""
        result = await self._call(args, cancellation_token, call_id)
        if result.is_error:
            raise WorkbenchToolError(result.to_text(replace_image="[image]"))
        return result

    @abstractmethod
    async def _call(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken, call_id: str | None
    ) -> ToolResult:
        """Run the call where the tool lives."""

    def return_value_as_string(self, value: Any) -> str:
        """The result's text (images as ``[image]``)."""
        if isinstance(value, ToolResult):
            return value.to_text(replace_image="[image]")
        return json.dumps(value) if isinstance(value, dict | list) else str(value)


class _WorkbenchTool(ListedTool):
    """A tool listed by a workbench, as the ``Tool`` protocol an agent calls."""

    def __init__(self, workbench: Workbench, schema: ToolSchema) -> None:
        super().__init__(schema)
        self._workbench = workbench

    async def _call(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken, call_id: str | None
    ) -> ToolResult:
        return await self._workbench.call_tool(
            self.name, args, cancellation_token=cancellation_token, call_id=call_id
        )


async def workbench_tools(agent: str, workbenches: Sequence[Workbench]) -> list[Tool]:
    """List the tools of ``workbenches`` as ``Tool`` objects that call back into them.

    Raises:
        ValueError: If two workbenches list a tool of the same name.
    """
    tools: list[Tool] = []
    owner: dict[str, int] = {}
    for index, workbench in enumerate(workbenches):
        for schema in await workbench.list_tools():
            name = schema["name"]
            if name in owner:
                raise InvalidValueError(
                    f"Agent `{agent}`: workbenches {owner[name]} and {index} both list a tool "
                    f"named `{name}`; tool names must be unique across an agent's workbenches."
                )
            owner[name] = index
            tools.append(_WorkbenchTool(workbench, schema))
    return tools


def as_workbenches(
    agent: str, workbench: object, tools: Sequence[object] | None
) -> list[Workbench]:
    """Normalise ``AssistantAgent(workbench=...)``: one workbench, several, or ``None``.

    Raises:
        ArgumentTypeError: If an item is not a `Workbench`.
        InvalidArgumentError: If both `tools` and `workbench` are given.
    """
    if workbench is None:
        return []
    items: list[object]
    if isinstance(workbench, Sequence) and not isinstance(workbench, str):
        items = list(workbench)
    else:
        items = [workbench]
    for item in items:
        if not isinstance(item, Workbench):
            raise ArgumentTypeError(
                f"Agent `{agent}`: workbench takes a Workbench (StaticWorkbench, "
                f"McpWorkbench, ...) or a list of them, not {type(item).__name__}.",
                argument="workbench",
            )
    if tools:
        raise InvalidArgumentError(
            f"Agent `{agent}`: pass tools either as `tools=[...]` or through `workbench=`, "
            "not both; put the tools in a StaticWorkbench to combine them with others.",
            argument="workbench",
        )
    return [item for item in items if isinstance(item, Workbench)]
