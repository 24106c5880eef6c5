"""An MCP server (stdio) with one tool, ``key``: it returns the idempotency key the
request's ``_meta`` carried (``flowlib/call_key``), or ``none``."""

from __future__ import annotations

from mcp.server.fastmcp import Context, FastMCP

server = FastMCP("flowlib-key", log_level="ERROR")


@server.tool()
def key(ctx: Context) -> str:  # type: ignore[type-arg]
    """The idempotency key the client sent in the request's _meta (or 'none')."""
    meta = ctx.request_context.meta
    extra = (meta.model_extra or {}) if meta is not None else {}
    return str(extra.get("flowlib/call_key", "none"))


if __name__ == "__main__":
    server.run(transport="stdio")
