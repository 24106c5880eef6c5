"""``mcp_server_tools``: each tool of an MCP server as a standalone flowlib tool."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..._cancellation import CancellationToken
from .._keys import mcp_meta
from .._schema import ToolSchema
from .._workbench import ListedTool, ToolResult
from ._params import McpServerParams
from ._workbench import DEFAULT_MAX_RESULT_BYTES, McpWorkbench, _tool_result, call_with_key

if TYPE_CHECKING:
    from mcp import ClientSession

__all__ = ["McpToolAdapter", "mcp_server_tools"]


class McpToolAdapter(ListedTool):
    """One tool of an MCP server, usable anywhere a tool is (``AssistantAgent(tools=...)``).

    Without a ``session``, each call opens its own connection (for stdio: starts the
    server) and closes it afterwards, as AutoGen's adapters do; give a
    `McpWorkbench` to an agent instead to keep one connection open. A tool error
    raises [`WorkbenchToolError`][flowlib.tools.WorkbenchToolError] (an agent turns it into an error
    result for the model); a server that cannot be reached, or dies during the call,
    raises ``McpServerError``.
    """

    def __init__(
        self,
        server_params: McpServerParams,
        schema: ToolSchema,
        session: ClientSession | None = None,
    ) -> None:
        super().__init__(schema)
        self._params = server_params
        self._session = session

    @property
    def server_params(self) -> McpServerParams:
        """Where the server is."""
        return self._params

    async def _call(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken, call_id: str | None
    ) -> ToolResult:
        if self._session is None:
            async with McpWorkbench(self._params) as workbench:
                return await workbench.call_tool(
                    self.name, args, cancellation_token=cancellation_token, call_id=call_id
                )
        future = cancellation_token.link_future(
            asyncio.ensure_future(call_with_key(self._session, self.name, dict(args), mcp_meta()))
        )
        try:
            return _tool_result(self.name, await future, DEFAULT_MAX_RESULT_BYTES)
        finally:
            cancellation_token.remove_callback(future.cancel)

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
