"""``mcp_server_tools``: each tool of an MCP server as a standalone flowlib tool."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..._cancellation import CancellationToken
from .._keys import mcp_meta
from .._schema import ToolSchema
from .._workbench import ToolResult, WorkbenchToolError
from ._params import McpServerParams
from ._workbench import DEFAULT_MAX_RESULT_BYTES, McpWorkbench, _tool_result, call_with_key

if TYPE_CHECKING:
    from mcp import ClientSession

__all__ = ["McpToolAdapter", "mcp_server_tools"]


class McpToolAdapter:
    """One tool of an MCP server, usable anywhere a tool is (``AssistantAgent(tools=...)``).

    Without a ``session``, each call opens its own connection (for stdio: starts the
    server) and closes it afterwards, as AutoGen's adapters do; give a
    `McpWorkbench` to an agent instead to keep one connection open. A tool error
    raises [`WorkbenchToolError`][flowlib.tools.WorkbenchToolError] (an agent turns it into an error
    result for the model).
    """

    def __init__(
        self,
        server_params: McpServerParams,
        schema: ToolSchema,
        session: ClientSession | None = None,
    ) -> None:
        self._params = server_params
        self._schema = schema
        self._session = session

    @property
    def name(self) -> str:
        """The tool's name on the server."""
        return self._schema["name"]

    @property
    def description(self) -> str:
        """The server's description of the tool."""
        return self._schema.get("description", "")

    @property
    def schema(self) -> ToolSchema:
        """The schema sent to the model."""
        return self._schema

    @property
    def server_params(self) -> McpServerParams:
        """Where the server is."""
        return self._params

    async def run_json(
        self,
        args: Mapping[str, Any],
        cancellation_token: CancellationToken,
        call_id: str | None = None,
    ) -> ToolResult:
        """Call the tool on the server.

        Raises:
            WorkbenchToolError: If the server reports a tool error.
            McpServerError: If the server cannot be reached or dies during the call.
        """
        if self._session is not None:
            session = self._session
            future = cancellation_token.link_future(
                asyncio.ensure_future(call_with_key(session, self.name, dict(args), mcp_meta()))
            )
            try:
                result = _tool_result(self.name, await future, DEFAULT_MAX_RESULT_BYTES)
            finally:
                cancellation_token.remove_callback(future.cancel)
        else:
            async with McpWorkbench(self._params) as workbench:
                result = await workbench.call_tool(
                    self.name, args, cancellation_token=cancellation_token, call_id=call_id
                )
        if result.is_error:
            raise WorkbenchToolError(result.to_text(replace_image="[image]"))
        return result

    def return_value_as_string(self, value: Any) -> str:
        """The result's text (images as ``[image]``)."""
        if isinstance(value, ToolResult):
            return value.to_text(replace_image="[image]")
        return json.dumps(value) if isinstance(value, dict | list) else str(value)

    def __repr__(self) -> str:
        return f"McpToolAdapter(name={self.name!r})"


async def mcp_server_tools(
    server_params: McpServerParams, session: ClientSession | None = None
) -> list[McpToolAdapter]:
    """List the tools of an MCP server as flowlib tools.

    Args:
        server_params: Where the server is.
        session: An initialised ``mcp.ClientSession`` to use for listing and for every
            call; without it, listing and each call open their own connection.

    Raises:
        McpServerError: If the server cannot be reached.

    Examples:
        ```python
        params = StdioServerParams(command="python", args=["server.py"])
        tools = await mcp_server_tools(params)
        agent = AssistantAgent("assistant", model_client=client, tools=tools)
        ```
    """
    workbench = McpWorkbench(server_params)
    if session is not None:
        listed = await session.list_tools()
        schemas = [workbench._schema(tool) for tool in listed.tools]
    else:
        async with workbench:
            schemas = await workbench.list_tools()
    return [McpToolAdapter(server_params, schema, session) for schema in schemas]
