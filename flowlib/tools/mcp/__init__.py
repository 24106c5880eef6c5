"""MCP tools: the tools of a Model Context Protocol server, on the official ``mcp`` SDK
(``pip install 'flowlib[mcp]'``).

[`McpWorkbench`][flowlib.tools.mcp.McpWorkbench] keeps one connection to a server and
serves its tools to an agent (``AssistantAgent(workbench=McpWorkbench(params))``);
[`mcp_server_tools`][flowlib.tools.mcp.mcp_server_tools] lists them as standalone tools.
Servers are reached by [`StdioServerParams`][flowlib.tools.mcp.StdioServerParams] (a
subprocess), [`SseServerParams`][flowlib.tools.mcp.SseServerParams] or
[`StreamableHttpServerParams`][flowlib.tools.mcp.StreamableHttpServerParams] (HTTP).
See the [MCP tools](../mcp.md) page.
"""

from ._adapter import McpToolAdapter, mcp_server_tools
from ._params import (
    DEFAULT_MCP_READ_TIMEOUT,
    McpServerParams,
    SseServerParams,
    StdioServerParams,
    StreamableHttpServerParams,
)
from ._workbench import DEFAULT_MAX_RESULT_BYTES, McpWorkbench, McpWorkbenchConfig, ToolOverride

__all__ = [
    "DEFAULT_MAX_RESULT_BYTES",
    "DEFAULT_MCP_READ_TIMEOUT",
    "McpServerParams",
    "McpToolAdapter",
    "McpWorkbench",
    "McpWorkbenchConfig",
    "SseServerParams",
    "StdioServerParams",
    "StreamableHttpServerParams",
    "ToolOverride",
    "mcp_server_tools",
]
