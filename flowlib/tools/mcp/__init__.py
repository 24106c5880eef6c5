"""MCP tools: the tools of a Model Context Protocol server, on the official ``mcp`` SDK
(``pip install 'flowlib[mcp]'``).

:class:`McpWorkbench` keeps one connection to a server and serves its tools to an agent
(``AssistantAgent(workbench=McpWorkbench(params))``); :func:`mcp_server_tools` lists them
as standalone tools. Servers are reached by :class:`StdioServerParams` (a subprocess),
:class:`SseServerParams` or :class:`StreamableHttpServerParams` (HTTP).
"""

from ._adapter import McpToolAdapter, mcp_server_tools
from ._params import (
    McpServerParams,
    SseServerParams,
    StdioServerParams,
    StreamableHttpServerParams,
)
from ._workbench import McpWorkbench, McpWorkbenchConfig, ToolOverride

__all__ = [
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
