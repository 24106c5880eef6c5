"""The studio's web server: a Starlette app (served by uvicorn) over a ``Studio``.

Routes: ``/`` (the page), ``/static/...`` (its script and style, shipped in the
package), ``/api/...`` (JSON, documented in docs/studio.md). Every request passes the
guard first: the ``Host`` header must name this server (no DNS rebinding), a token is
required when one is set (always on a non-loopback bind), and a state-changing request
must come from the studio's own origin with a JSON body (no cross-site request forgery).
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import FlowlibError
from ..render.internal import STEP_PANEL_HTML, STEP_VIEW_JS
from ._data import Studio, StudioError, check_limit

__all__ = ["TOKEN_COOKIE", "create_app"]

TOKEN_COOKIE = "flowlib_studio_token"
_ASSETS = {
    "step_view.js": "text/javascript; charset=utf-8",
    "studio.js": "text/javascript; charset=utf-8",
    "studio.css": "text/css; charset=utf-8",
}
_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
_SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        b"img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
]


def _asset(name: str) -> bytes:
    if name == "step_view.js":  # the run page's step view, shared (flowlib/render/assets)
        return STEP_VIEW_JS.encode("utf-8")
    return resources.files("flowlib.studio").joinpath("assets").joinpath(name).read_bytes()


# The run view's step panel is the run page's (render/_page.py), filled by its step view.
_INDEX = _asset("index.html").replace(b"<!-- step panel -->\n", STEP_PANEL_HTML.encode("utf-8"))


class Guard:
    """ASGI middleware: Host check, token check, same-origin check for changes.

    Args:
        app: The app behind it.
        hosts: The ``Host`` header values accepted (``host:port``); None: any (a
            non-loopback bind, where the token guards instead).
        token: The token every request must carry (header ``Authorization: Bearer``,
            the cookie set when the page is opened with ``?token=``, or ``?token=``);
            None: no token (loopback only).
    """

    def __init__(self, app: ASGIApp, *, hosts: set[str] | None, token: str | None) -> None:
        self.app = app
        self.hosts = hosts
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refusal = self._refusal(request)
        if refusal is not None:
            status, message = refusal
            await JSONResponse({"error": message}, status_code=status)(scope, receive, send)
            return
        set_cookie = (
            self.token is not None
            and request.query_params.get("token") is not None
            and request.url.path == "/"
        )

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.extend(_SECURITY_HEADERS)
                if set_cookie and self.token is not None:
                    cookie = f"{TOKEN_COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
                    headers.append((b"set-cookie", cookie.encode("latin-1")))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _refusal(self, request: Request) -> tuple[int, str] | None:
        host = request.headers.get("host", "")
        if self.hosts is not None and host.lower() not in self.hosts:
            return 421, f"this studio does not serve the host {host!r}"
        if self.token is not None and not self._has_token(request):
            return 401, "a token is required: open the address the studio printed"
        if request.method not in _SAFE_METHODS:
            origin = request.headers.get("origin")
            if origin is not None:
                parts = urlsplit(origin)
                if parts.scheme not in ("http", "https") or parts.netloc.lower() != host.lower():
                    return 403, "cross-origin request refused"
            if request.headers.get("sec-fetch-site") not in (None, "same-origin", "none"):
                return 403, "cross-site request refused"
            kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if kind != "application/json":
                return 415, "send the request body as application/json"
        return None

    def _has_token(self, request: Request) -> bool:
        assert self.token is not None
        given = [
            request.cookies.get(TOKEN_COOKIE),
            request.query_params.get("token"),
        ]
        authorization = request.headers.get("authorization", "")
        if authorization.lower().startswith("bearer "):
            given.append(authorization[7:].strip())
        expected = self.token.encode()
        return any(
            value is not None and hmac.compare_digest(value.encode(), expected) for value in given
        )


def _error(exc: Exception) -> JSONResponse:
    status = exc.status if isinstance(exc, StudioError) else 400
    return JSONResponse({"error": str(exc)}, status_code=status)


async def _body(request: Request) -> dict[str, Any]:
    try:
        data = json.loads(await request.body() or b"{}")
    except ValueError as exc:
        raise StudioError(f"the body is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise StudioError("the body must be a JSON object")
    return data


def _text(data: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise StudioError(f"`{key}` must be a string")
    return value


def create_app(
    studio: Studio,
    *,
    hosts: set[str] | None,
    token: str | None,
    poll: float = 0.2,
) -> ASGIApp:
    """The studio's ASGI app over ``studio``, behind the guard.

    Args:
        studio: The store and flows.
        hosts: Accepted ``Host`` values (None: any; then ``token`` must be set).
        token: The required token, or None.
        poll: Seconds between the store polls of a live run's event stream.
    """

    def handler(
        work: Callable[[Request], Awaitable[Any]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                result = await work(request)
            except (StudioError, FlowlibError) as exc:
                return _error(exc)
            if isinstance(result, Response):
                return result
            return JSONResponse(result)

        return endpoint

    async def index(request: Request) -> Response:
        return Response(_INDEX, media_type="text/html; charset=utf-8")

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _ASSETS:
            return JSONResponse({"error": "not found"}, status_code=404)
        return Response(_asset(name), media_type=_ASSETS[name])

    async def runs(request: Request) -> Any:
        query = request.query_params
        return await studio.list_runs(
            status=[s for s in query.getlist("status") if s],
            flow=query.get("flow") or None,
            limit=check_limit(query.get("limit")),
            cursor=query.get("cursor") or None,
        )

    async def start(request: Request) -> Any:
        data = await _body(request)
        run_id = await studio.start(
            _text(data, "flow") or "",
            _text(data, "task") or "",
            _text(data, "run_id", required=False),
        )
        return JSONResponse({"run_id": run_id}, status_code=201)

    async def detail(request: Request) -> Any:
        return await studio.run_detail(request.path_params["run_id"])

    async def delete(request: Request) -> Any:
        await studio.delete(request.path_params["run_id"])
        return {"deleted": request.path_params["run_id"]}

    async def resume(request: Request) -> Any:
        data = await _body(request)
        run_id = await studio.resume(
            request.path_params["run_id"], _text(data, "task", required=False)
        )
        return {"run_id": run_id}

    async def fork(request: Request) -> Any:
        data = await _body(request)
        checkpoint = data.get("checkpoint_id")
        if not isinstance(checkpoint, int) or isinstance(checkpoint, bool):
            raise StudioError("`checkpoint_id` must be a whole number")
        new_id = await studio.fork(
            request.path_params["run_id"], checkpoint, _text(data, "run_id", required=False)
        )
        if data.get("resume"):
            await studio.resume(new_id, _text(data, "task", required=False))
        return JSONResponse({"run_id": new_id}, status_code=201)

    async def answer(request: Request) -> Any:
        data = await _body(request)
        run_id = await studio.answer(
            request.path_params["run_id"],
            _text(data, "request_id") or "",
            _text(data, "text") or "",
        )
        return {"run_id": run_id}

    async def edit(request: Request) -> Any:
        data = await _body(request)
        append = data.get("append") or []
        replace = data.get("replace") or {}
        if not isinstance(append, list) or not all(isinstance(t, str) for t in append):
            raise StudioError("`append` must be a list of texts")
        if not isinstance(replace, dict) or not all(isinstance(t, str) for t in replace.values()):
            raise StudioError("`replace` must map thread indexes to texts")
        try:
            indexed = {int(key): text for key, text in replace.items()}
        except ValueError as exc:
            raise StudioError("`replace` keys must be thread indexes (whole numbers)") from exc
        checkpoint = await studio.edit(
            request.path_params["run_id"],
            append=append,
            replace=indexed,
            author=_text(data, "author") or "",
            reason=_text(data, "reason") or "",
            go_on=bool(data.get("continue")),
        )
        return {"run_id": request.path_params["run_id"], "checkpoint_id": checkpoint}

    async def flows(request: Request) -> Any:
        return {"flows": await studio.flow_list()}

    async def events(request: Request) -> Any:
        run_id = request.path_params["run_id"]
        if await studio.store.get_run(run_id) is None:
            raise StudioError(f"no run `{run_id}` in the store", status=404)

        async def stream() -> AsyncIterator[str]:
            seen: tuple[int, str] | None = None
            quiet = 0.0
            yield "retry: 1000\n\n"
            while not await request.is_disconnected():
                run = await studio.store.get_run(run_id)
                if run is None:
                    yield "event: deleted\ndata: {}\n\n"
                    return
                now = (run.last_checkpoint, run.status)
                if now != seen:
                    seen = now
                    quiet = 0.0
                    data = {
                        "last_checkpoint": run.last_checkpoint,
                        "status": run.status,
                        "turns": run.turns,
                        "updated": run.updated_at,
                    }
                    yield f"event: checkpoint\ndata: {json.dumps(data)}\n\n"
                elif quiet >= 15:
                    quiet = 0.0
                    yield ": still here\n\n"
                await asyncio.sleep(poll)
                quiet += poll

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    # A run id may hold "/" (the path is percent-decoded before routing): the suffixed
    # routes come first, so ".../events" is the event stream, not a run id.
    routes = [
        Route("/", index),
        Route("/static/{name}", static),
        Route("/api/runs", handler(runs), methods=["GET"]),
        Route("/api/runs", handler(start), methods=["POST"]),
        Route("/api/flows", handler(flows), methods=["GET"]),
        Route("/api/runs/{run_id:path}/events", handler(events), methods=["GET"]),
        Route("/api/runs/{run_id:path}/resume", handler(resume), methods=["POST"]),
        Route("/api/runs/{run_id:path}/fork", handler(fork), methods=["POST"]),
        Route("/api/runs/{run_id:path}/answer", handler(answer), methods=["POST"]),
        Route("/api/runs/{run_id:path}/edit", handler(edit), methods=["POST"]),
        Route("/api/runs/{run_id:path}", handler(detail), methods=["GET"]),
        Route("/api/runs/{run_id:path}", handler(delete), methods=["DELETE"]),
    ]
    return Guard(Starlette(routes=routes), hosts=hosts, token=token)
