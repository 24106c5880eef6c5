"""``McpWorkbench``: the tools of an MCP server (stdio, SSE or streamable HTTP), through
the official ``mcp`` SDK's ``ClientSession``.

One connection per workbench. The SDK's transports are anyio context managers that must
be entered and left by one task, so a small owner task holds them open between
`start()` and `stop()`; requests are sent on the
session from the caller's task. Every request also watches the owner task, so a server
that dies (the process exits, the HTTP endpoint goes away) fails the request with
[`McpServerError`][flowlib.errors.McpServerError] at once instead of leaving it waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

from pydantic import BaseModel, TypeAdapter

from ..._cancellation import CancellationToken
from ...component.internal import register_builtin
from ...errors import InvalidTypeError, InvalidValueError, McpServerError, MissingExtraError
from ...models.image import Image
from .._keys import mcp_meta
from .._schema import ParametersSchema, ToolSchema
from .._workbench import ImageResultContent, TextResultContent, ToolResult, Workbench
from ._params import (
    McpServerParams,
    SseServerParams,
    StdioServerParams,
    StreamableHttpServerParams,
)

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult
    from mcp.types import Tool as McpTool

__all__ = ["DEFAULT_MAX_RESULT_BYTES", "McpWorkbench", "McpWorkbenchConfig", "ToolOverride"]

_T = TypeVar("_T")
_PARAMS: TypeAdapter[McpServerParams] = TypeAdapter(McpServerParams)


class ToolOverride(BaseModel):
    """A new name and/or description for one of the server's tools."""

    name: str | None = None
    description: str | None = None


DEFAULT_MAX_RESULT_BYTES = 1024 * 1024
"""The largest tool result (its text and base64 images together) an ``McpWorkbench``
passes on by default, 1 MiB; a larger one becomes an error result (issue 21.7)."""


_META_SUPPORTED: dict[type, bool] = {}


def call_with_key(
    session: Any, name: str, args: dict[str, Any], meta: dict[str, str] | None
) -> Awaitable[Any]:
    """``session.call_tool(name, args)`` with the call's idempotency key in the request's
    ``_meta`` (``flowlib/call_key``, see [`call_key`][flowlib.tools.call_key]); an mcp
    SDK older than ``call_tool(meta=...)`` sends none."""
    kind = type(session)
    supported = _META_SUPPORTED.get(kind)
    if supported is None:
        import inspect

        try:
            supported = "meta" in inspect.signature(session.call_tool).parameters
        except (TypeError, ValueError):
            supported = False
        _META_SUPPORTED[kind] = supported
    if meta is not None and supported:
        return session.call_tool(name, args, meta=meta)  # type: ignore[no-any-return]
    return session.call_tool(name, args)  # type: ignore[no-any-return]


class McpWorkbenchConfig(BaseModel):
    """The component config of `McpWorkbench`."""

    server_params: McpServerParams
    tool_overrides: dict[str, ToolOverride] = {}
    max_result_bytes: int | None = None


def _import_mcp() -> Any:
    try:
        import mcp
    except ImportError as exc:  # tested in the plain-install environment (packaging check)
        raise MissingExtraError(
            "MCP tools need the `mcp` package: pip install 'flowlib[mcp]'."
        ) from exc
    return mcp


def _describe(params: McpServerParams) -> str:
    if isinstance(params, StdioServerParams):
        return " ".join([params.command, *params.args])
    return params.url


class McpWorkbench(Workbench):
    """The tools of one MCP server, listed and called over one connection.

    The connection opens on `start()` (or on the first call) and closes on
    `stop()`; ``async with McpWorkbench(params) as workbench:`` does both. A tool
    that fails on the server gives a [`ToolResult`][flowlib.tools.ToolResult] with
    ``is_error=True``. A server that cannot be reached, answers with a protocol error,
    or dies during a request raises [`McpServerError`][flowlib.errors.McpServerError]; the
    workbench then closes its connection and the next call reconnects.

    Args:
        server_params: `StdioServerParams`, `SseServerParams` or
            `StreamableHttpServerParams`.
        tool_overrides: New names/descriptions for tools, by the server's tool name.
        max_result_bytes: The largest tool result passed on, in characters of text and
            base64 image data (``DEFAULT_MAX_RESULT_BYTES``, 1 MiB); a larger one becomes
            an error result starting ``McpResultTooLarge``, so a hostile server cannot
            fill the agent's context.

    Raises:
        TypeError: If ``server_params`` is not one of the three parameter models.
        ValueError: If two overrides give the same new name.

    Examples:
        ```python
        params = StdioServerParams(command="python", args=["my_mcp_server.py"])
        async with McpWorkbench(params) as workbench:
            print(await workbench.list_tools())
            print((await workbench.call_tool("add", {"a": 1, "b": 2})).to_text())
        ```
    """

    component_type: ClassVar[str] = "workbench"
    component_config_schema: ClassVar[type[BaseModel]] = McpWorkbenchConfig

    def __init__(
        self,
        server_params: McpServerParams,
        *,
        tool_overrides: Mapping[str, ToolOverride] | None = None,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    ) -> None:
        if isinstance(max_result_bytes, bool) or not isinstance(max_result_bytes, int):
            raise InvalidTypeError(
                f"McpWorkbench: max_result_bytes must be an int, not {max_result_bytes!r}."
            )
        if max_result_bytes < 1:
            raise InvalidValueError(
                f"McpWorkbench: max_result_bytes must be at least 1, not {max_result_bytes}."
            )
        if not isinstance(
            server_params, StdioServerParams | SseServerParams | StreamableHttpServerParams
        ):
            raise InvalidTypeError(
                "McpWorkbench needs StdioServerParams, SseServerParams or "
                f"StreamableHttpServerParams, not {type(server_params).__name__}."
            )
        _import_mcp()  # name the extra now, not at the first start()
        overrides = dict(tool_overrides or {})
        new_names = [o.name for o in overrides.values() if o.name]
        duplicates = sorted({n for n in new_names if new_names.count(n) > 1})
        if duplicates:
            raise InvalidValueError(
                f"McpWorkbench: tool_overrides give the name `{duplicates[0]}` to several "
                "tools; each new name must be unique."
            )
        self._params = server_params
        self._overrides = overrides
        self._max_result_bytes = max_result_bytes
        self._original_name = {o.name: name for name, o in overrides.items() if o.name}
        self._session: ClientSession | None = None
        self._owner: asyncio.Task[None] | None = None
        self._closing: asyncio.Event | None = None
        self._opening: asyncio.Lock | None = None

    @property
    def server_params(self) -> McpServerParams:
        """Where the server is."""
        return self._params

    # --- connection -----------------------------------------------------------------------

    async def start(self) -> None:
        """Start the server (stdio) or connect to it, and initialise the MCP session.

        Raises:
            McpServerError: If the server cannot be started or reached.
        """
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._owner is not None and not self._owner.done():
                return
            await self._discard()
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[ClientSession] = loop.create_future()
            self._closing = asyncio.Event()
            self._owner = asyncio.ensure_future(self._own(ready, self._closing))
            waiting: set[asyncio.Future[Any]] = {ready, self._owner}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if not ready.done():
                error = self._owner.exception() if not self._owner.cancelled() else None
                self._owner = None
                raise McpServerError(
                    f"Could not connect to the MCP server `{_describe(self._params)}`: "
                    f"{_reason(error)}. Check that the server starts (or listens) and speaks "
                    "MCP."
                ) from error
            self._session = ready.result()

    async def stop(self) -> None:
        """Close the session and stop the server process (stdio). Safe to call twice."""
        owner, closing = self._owner, self._closing
        self._owner = self._session = None
        if owner is None or closing is None:
            return
        closing.set()
        with contextlib.suppress(Exception):
            await owner

    async def _discard(self) -> None:
        """Forget a connection whose owner task ended (the server died)."""
        if self._owner is not None and self._owner.done():
            with contextlib.suppress(BaseException):
                self._owner.result()
        self._owner = self._session = None

    async def _own(self, ready: asyncio.Future[ClientSession], closing: asyncio.Event) -> None:
        mcp = _import_mcp()
        from mcp.client.session import ClientSession

        params = self._params
        async with contextlib.AsyncExitStack() as stack:
            if isinstance(params, StdioServerParams):
                from mcp.client.stdio import stdio_client

                server = mcp.StdioServerParameters(
                    command=params.command,
                    args=params.args,
                    env=params.env,
                    cwd=params.cwd,
                    encoding=params.encoding,
                    encoding_error_handler=params.encoding_error_handler,
                )
                read, write = await stack.enter_async_context(stdio_client(server))
                timeout = timedelta(seconds=params.read_timeout_seconds)
            elif isinstance(params, SseServerParams):
                from mcp.client.sse import sse_client

                read, write = await stack.enter_async_context(
                    sse_client(
                        params.url,
                        headers=params.headers,
                        timeout=params.timeout,
                        sse_read_timeout=params.sse_read_timeout,
                    )
                )
                timeout = timedelta(seconds=params.sse_read_timeout)
            else:
                import httpx  # a dependency of `mcp` itself (imported above)
                from mcp.client.streamable_http import streamable_http_client

                client = await stack.enter_async_context(
                    httpx.AsyncClient(
                        headers=params.headers,
                        timeout=httpx.Timeout(params.timeout, read=params.sse_read_timeout),
                    )
                )
                read, write, _ = await stack.enter_async_context(
                    streamable_http_client(
                        params.url,
                        http_client=client,
                        terminate_on_close=params.terminate_on_close,
                    )
                )
                timeout = timedelta(seconds=params.sse_read_timeout)
            session = await stack.enter_async_context(
                ClientSession(read, write, read_timeout_seconds=timeout)
            )
            await session.initialize()
            ready.set_result(session)
            await closing.wait()

    async def _request(
        self,
        what: str,
        send: Callable[[ClientSession], Awaitable[_T]],
        token: CancellationToken | None,
    ) -> _T:
        """Send one request; fail with McpServerError if the server dies meanwhile."""
        if self._owner is None or self._owner.done():
            await self.start()
        owner, session = self._owner, self._session
        assert owner is not None and session is not None
        call = asyncio.ensure_future(send(session))
        if token is not None:
            token.link_future(call)
        try:
            both: set[asyncio.Future[Any]] = {call, owner}
            await asyncio.wait(both, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            call.cancel()
            raise
        finally:
            if token is not None:
                token.remove_callback(call.cancel)
        if not call.done():
            call.cancel()
            with contextlib.suppress(BaseException):
                await call
            cause = None if owner.cancelled() else owner.exception()
            await self._discard()
            raise McpServerError(
                f"The MCP server `{_describe(self._params)}` stopped during {what} "
                f"({_reason(cause)}). The next call reconnects."
            ) from cause
        if call.cancelled():
            raise asyncio.CancelledError()
        error = call.exception()
        if error is not None and (owner.done() or _connection_closed(error)):
            await self.stop()
            raise McpServerError(
                f"The MCP server `{_describe(self._params)}` stopped during {what} "
                f"({_reason(error)}). The next call reconnects."
            ) from error
        if error is not None:
            raise McpServerError(
                f"The MCP server `{_describe(self._params)}` failed {what}: {_reason(error)}."
            ) from error
        return call.result()

    # --- the Workbench API ----------------------------------------------------------------

    async def list_tools(self) -> list[ToolSchema]:
        """The server's tools (with the overrides applied).

        Raises:
            McpServerError: If the server cannot be reached or dies.
        """
        listed = await self._request("`tools/list`", lambda session: session.list_tools(), None)
        return [self._schema(tool) for tool in listed.tools]

    def _schema(self, tool: McpTool) -> ToolSchema:
        override = self._overrides.get(tool.name, ToolOverride())
        return ToolSchema(
            name=override.name or tool.name,
            description=override.description or tool.description or "",
            parameters=_parameters(tool.inputSchema),
        )

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> ToolResult:
        """Call the tool ``name`` on the server.

        Raises:
            McpServerError: If the server cannot be reached, or dies during the call.
            asyncio.CancelledError: If ``cancellation_token`` is cancelled.
        """
        server_name = self._original_name.get(name, name)
        args = dict(arguments or {})
        meta = mcp_meta()  # read here: the request may run in the session's own task
        result = await self._request(
            f"the call of tool `{name}`",
            lambda session: call_with_key(session, server_name, args, meta),
            cancellation_token,
        )
        return _tool_result(name, result, self._max_result_bytes)

    async def list_prompts(self) -> Any:
        """The server's prompts (the SDK's ``ListPromptsResult``)."""
        return await self._request("`prompts/list`", lambda s: s.list_prompts(), None)

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> Any:
        """One prompt of the server, filled in (the SDK's ``GetPromptResult``)."""
        args = dict(arguments or {})
        return await self._request(f"prompt `{name}`", lambda s: s.get_prompt(name, args), None)

    async def list_resources(self) -> Any:
        """The server's resources (the SDK's ``ListResourcesResult``)."""
        return await self._request("`resources/list`", lambda s: s.list_resources(), None)

    async def list_resource_templates(self) -> Any:
        """The server's resource templates (the SDK's ``ListResourceTemplatesResult``):
        URI patterns such as ``weather://{city}`` that `read_resource` fills in."""
        return await self._request(
            "`resources/templates/list`", lambda s: s.list_resource_templates(), None
        )

    async def read_resource(self, uri: str) -> Any:
        """Read one resource (the SDK's ``ReadResourceResult``)."""
        from pydantic import AnyUrl

        return await self._request(
            f"resource `{uri}`", lambda s: s.read_resource(AnyUrl(uri)), None
        )

    async def save_state(self) -> Mapping[str, Any]:
        """``{"type": "McpWorkbenchState"}``: the server keeps its own state."""
        return {"type": "McpWorkbenchState"}

    # --- component ------------------------------------------------------------------------

    def _to_config(self) -> McpWorkbenchConfig:
        limit = self._max_result_bytes
        return McpWorkbenchConfig(
            server_params=self._params,
            tool_overrides=self._overrides,
            max_result_bytes=None if limit == DEFAULT_MAX_RESULT_BYTES else limit,
        )

    @classmethod
    def _from_config(cls, config: McpWorkbenchConfig) -> McpWorkbench:
        limit = config.max_result_bytes
        return cls(
            config.server_params,
            tool_overrides=config.tool_overrides,
            max_result_bytes=DEFAULT_MAX_RESULT_BYTES if limit is None else limit,
        )

    def __repr__(self) -> str:
        return f"McpWorkbench({_describe(self._params)!r})"


def _parameters(input_schema: Mapping[str, Any] | None) -> ParametersSchema:
    """A tool's input schema as the model gets it: whole, ``$defs`` and all.

    A server's schema for an argument that is a model (a FastMCP tool taking a pydantic
    class) refers to its definition with ``{"$ref": "#/$defs/Point"}``; keeping only
    ``properties`` would leave the model a reference to nothing. Only ``type`` and
    ``properties`` are made sure of, as the Chat Completions API needs an object schema.
    """
    schema = dict(input_schema or {})
    schema["type"] = "object"
    schema["properties"] = dict(schema.get("properties") or {})
    return cast(ParametersSchema, schema)


def _result_size(result: CallToolResult) -> int:
    size = 0
    for content in result.content:
        for field in ("text", "data", "blob"):
            value = getattr(content, field, None)
            if isinstance(value, str):
                size += len(value)
        resource = getattr(content, "resource", None)
        for field in ("text", "blob"):
            value = getattr(resource, field, None)
            if isinstance(value, str):
                size += len(value)
    return size


def _tool_result(name: str, result: CallToolResult, limit: int) -> ToolResult:
    size = _result_size(result)
    if size > limit:
        # Passed on, it would go into every later model call of the agent (and its
        # summaries, logs and checkpoints); the model is told instead.
        message = (
            f"McpResultTooLarge: the result of `{name}` holds {size:,} characters, more "
            f"than this workbench passes on (max_result_bytes={limit:,}); nothing of it is "
            "kept. Ask the tool for less."
        )
        return ToolResult(name=name, result=[TextResultContent(content=message)], is_error=True)
    parts: list[TextResultContent | ImageResultContent] = []
    for content in result.content:
        kind = getattr(content, "type", None)
        if kind == "text":
            parts.append(TextResultContent(content=content.text))  # type: ignore[union-attr]
        elif kind == "image":
            image = Image.from_base64(content.data, mime_type=content.mimeType)  # type: ignore[union-attr]
            parts.append(ImageResultContent(content=image))
        else:
            parts.append(TextResultContent(content=content.model_dump_json()))
    return ToolResult(name=name, result=parts, is_error=bool(result.isError))


def _connection_closed(error: BaseException) -> bool:
    """Whether ``error`` is the SDK's answer to a request whose connection went away."""
    from mcp.types import CONNECTION_CLOSED

    return getattr(getattr(error, "error", None), "code", None) == CONNECTION_CLOSED


def _reason(error: BaseException | None) -> str:
    """The innermost useful message of an error (anyio wraps them in groups)."""
    while error is not None and len(getattr(error, "exceptions", ())) == 1:
        error = error.exceptions[0]  # type: ignore[attr-defined]
    if error is None:
        return "the connection closed"
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}"


register_builtin(McpWorkbench, autogen="autogen_ext.tools.mcp")
