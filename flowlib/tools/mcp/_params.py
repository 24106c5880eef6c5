"""How to reach an MCP server: a subprocess on stdio, an SSE endpoint, or a streamable
HTTP endpoint. Plain pydantic models, so they dump to JSON and need no ``mcp`` import."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

__all__ = [
    "DEFAULT_MCP_READ_TIMEOUT",
    "McpServerParams",
    "SseServerParams",
    "StdioServerParams",
    "StreamableHttpServerParams",
]


DEFAULT_MCP_READ_TIMEOUT = 300.0
"""Seconds one MCP request waits for its answer by default, over every transport
(stdio's ``read_timeout_seconds``, SSE's and HTTP's ``sse_read_timeout``): a tool that
takes 6 s works the same over stdio and HTTP (issue 21.7)."""


class StdioServerParams(BaseModel):
    """Start the server as a subprocess and talk to it over its stdin/stdout.

    Attributes:
        command: The executable (looked up on ``PATH``).
        args: Its arguments.
        env: Extra environment variables (merged over the SDK's safe default set).
        cwd: The working directory.
        encoding: Text encoding of the messages.
        encoding_error_handler: ``"strict"``, ``"ignore"`` or ``"replace"``.
        read_timeout_seconds: How long one request may wait for its answer
            (``DEFAULT_MCP_READ_TIMEOUT``, 300 s).
    """

    type: Literal["StdioServerParams"] = "StdioServerParams"
    command: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: str | None = None
    encoding: str = "utf-8"
    encoding_error_handler: Literal["strict", "ignore", "replace"] = "strict"
    read_timeout_seconds: float = DEFAULT_MCP_READ_TIMEOUT


class SseServerParams(BaseModel):
    """Connect to a server's SSE endpoint (the older HTTP transport).

    Attributes:
        url: The SSE endpoint, e.g. ``http://127.0.0.1:8000/sse``.
        headers: HTTP headers (authentication, ...).
        timeout: Timeout of the HTTP operations, in seconds.
        sse_read_timeout: How long to wait for the next event, in seconds
            (``DEFAULT_MCP_READ_TIMEOUT``, 300 s).
    """

    type: Literal["SseServerParams"] = "SseServerParams"
    url: str
    headers: dict[str, Any] | None = None
    timeout: float = 5
    sse_read_timeout: float = DEFAULT_MCP_READ_TIMEOUT


class StreamableHttpServerParams(BaseModel):
    """Connect to a server's streamable HTTP endpoint.

    Attributes:
        url: The endpoint, e.g. ``http://127.0.0.1:8000/mcp``.
        headers: HTTP headers (authentication, ...).
        timeout: Timeout of the HTTP operations, in seconds.
        sse_read_timeout: How long to wait for the next streamed event, in seconds
            (``DEFAULT_MCP_READ_TIMEOUT``, 300 s).
        terminate_on_close: End the server-side session when the workbench stops.
    """

    type: Literal["StreamableHttpServerParams"] = "StreamableHttpServerParams"
    url: str
    headers: dict[str, Any] | None = None
    timeout: float = 30.0
    sse_read_timeout: float = DEFAULT_MCP_READ_TIMEOUT
    terminate_on_close: bool = True


McpServerParams = Annotated[
    StdioServerParams | SseServerParams | StreamableHttpServerParams,
    Field(discriminator="type"),
]
"""Any of the three server parameter models."""
