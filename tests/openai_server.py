"""A local server speaking the OpenAI Chat Completions wire protocol, for tests.

The real ``openai`` SDK is pointed at it (``base_url=server.base_url``), so tests exercise
the SDK's HTTP, SSE parsing, retries and timeouts rather than a monkeypatched method.

The server runs on ``127.0.0.1`` (a free port) in a background thread. Tests script it by
queueing responses; each request to ``POST .../chat/completions`` takes the next one:

* :class:`Reply` - a completion: text and/or tool calls, usage, reasoning, logprobs. It is
  sent as one JSON body, or as SSE chunks when the request has ``"stream": true`` (text
  split into chunks, tool-call arguments split across chunks, then a usage chunk when
  ``stream_options.include_usage`` is set).
* :class:`ErrorReply` - an HTTP error with an OpenAI-style error body (``times=`` repeats
  it, e.g. two 500s before a success). It sends ``retry-after-ms: 1`` by default so the
  SDK retries at once instead of backing off for half a second.
* :class:`RawReply` - any bytes, e.g. a malformed body.

Fault modes (issue 11) are options of :class:`Reply`: ``cut_after=n`` closes the
connection after ``n`` streamed chunks (or, unstreamed, after ``n`` bytes of a body whose
``Content-Length`` promised more), ``error_after=n`` sends an ``{"error": ...}`` event after
``n`` chunks, ``delay`` hangs before answering and ``chunk_delay`` trickles the chunks.
A non-SSE or bad-JSON body is a :class:`RawReply`.

Every request is recorded (:attr:`OpenAIServer.requests`) so tests can assert what the
SDK sent. The ``openai_server`` fixture gives each test a fresh server.

Example:
    >>> server = OpenAIServer().start()
    >>> server.enqueue(Reply("Hello!"), ErrorReply(500, times=2), Reply("again"))
    >>> server.base_url.startswith("http://127.0.0.1:")
    True
    >>> server.stop()
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

__all__ = [
    "ErrorReply",
    "OpenAIServer",
    "RawReply",
    "RecordedRequest",
    "Reply",
    "ToolCall",
    "openai_server",
]


@dataclass
class ToolCall:
    """A tool call in a scripted reply.

    Args:
        name: The function name.
        arguments: The JSON arguments text (sent verbatim, so it may be invalid on purpose).
        id: The call id; ``call_<n>`` when omitted.
    """

    name: str
    arguments: str = "{}"
    id: str | None = None


@dataclass
class Reply:
    """A successful completion.

    Args:
        content: The assistant text (``None`` for a pure tool-call reply).
        tool_calls: Tool calls; several make a parallel tool call.
        finish_reason: The wire finish reason; by default ``"tool_calls"`` when there are
            tool calls, else ``"stop"``. ``None`` sends ``null``.
        usage: ``(prompt_tokens, completion_tokens)``, or ``None`` to send no usage.
        reasoning_content: Sent as ``message.reasoning_content`` (as DeepSeek/vLLM do).
        refusal: Sent as ``message.refusal``.
        logprobs: The wire ``choices[0].logprobs.content`` list.
        chunks: How to split ``content`` when streaming; by default word by word.
        delay: Seconds to wait before answering (for timeout and cancellation tests).
        chunk_delay: Seconds to wait between streamed chunks.
        headers: Extra response headers.
        cut_after: Close the connection after this many streamed chunks, with no finish
            reason and no ``[DONE]``; unstreamed, after this many bytes of the body.
        error_after: Streamed: send an ``{"error": {...}}`` event after this many chunks
            (as OpenAI does when a stream fails), then close.
        break_after: Streamed: promise the whole stream in ``Content-Length``, send this
            many chunks, then close, so the client's transport raises its own protocol
            error mid-stream (a clean close, ``cut_after``, just ends the body).
    """

    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = "default"
    usage: tuple[int, int] | None = (10, 5)
    reasoning_content: str | None = None
    refusal: str | None = None
    logprobs: list[dict[str, Any]] | None = None
    chunks: list[str] | None = None
    delay: float = 0.0
    chunk_delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    cut_after: int | None = None
    error_after: int | None = None
    break_after: int | None = None


@dataclass
class ErrorReply:
    """An HTTP error response.

    Args:
        status: The status code (the SDK retries 408, 409, 429 and 5xx).
        message: The ``error.message`` of the body.
        times: How many consecutive requests get this error.
        headers: Response headers; ``retry-after-ms: 1`` by default so retries are instant.
        delay: Seconds to wait before answering.
    """

    status: int
    message: str = "scripted error"
    times: int = 1
    headers: dict[str, str] = field(default_factory=lambda: {"retry-after-ms": "1"})
    delay: float = 0.0


@dataclass
class RawReply:
    """Arbitrary bytes with a status and content type, e.g. a malformed body.

    Args:
        body: The bytes to send.
        status: The status code.
        content_type: The ``Content-Type`` header.
    """

    body: bytes
    status: int = 200
    content_type: str = "application/json"


Script = Reply | ErrorReply | RawReply | Callable[[dict[str, Any]], "Reply | ErrorReply | RawReply"]


@dataclass
class RecordedRequest:
    """A request the server received.

    Attributes:
        path: The request path (``/v1/chat/completions``).
        headers: The headers, names lower-cased.
        body: The parsed JSON body (``None`` if it was not JSON).
        raw: The body's bytes as received.
    """

    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = b""


def _split_words(text: str) -> list[str]:
    """Split text into chunks that join back to it, one word plus its trailing space."""
    pieces: list[str] = []
    current = ""
    for char in text:
        if current and not current[-1].isspace() and char.isspace():
            current += char
            continue
        if current and current[-1].isspace() and not char.isspace():
            pieces.append(current)
            current = ""
        current += char
    if current:
        pieces.append(current)
    return pieces


def _split_in(text: str, parts: int) -> list[str]:
    """Split text into ``parts`` roughly equal pieces (some may be empty)."""
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, max(len(text), 1), size)] or [""]


class OpenAIServer:
    """A scripted Chat Completions server on 127.0.0.1 in a background thread.

    Attributes:
        requests: Every request received, in order.
    """

    def __init__(self) -> None:
        self._queue: deque[Script] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self.requests: list[RecordedRequest] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> OpenAIServer:
        """Bind a free port and serve in a background thread; return ``self``."""
        owner = self

        class Handler(_Handler):
            server_owner = owner

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake any delayed responses and close the socket."""
        self._closing.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def port(self) -> int:
        """The port the server listens on."""
        assert self._httpd is not None, "start() the server first"
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:<port>``, e.g. for an Azure endpoint."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI ``base_url``: ``http://127.0.0.1:<port>/v1``."""
        return f"{self.root_url}/v1"

    # -- scripting ----------------------------------------------------------------------

    def enqueue(self, *items: Script) -> None:
        """Queue responses; each request takes the next one.

        An :class:`ErrorReply` with ``times=n`` answers ``n`` requests. A callable gets
        the request body and returns the response to send.
        """
        with self._lock:
            for item in items:
                if isinstance(item, ErrorReply):
                    self._queue.extend([item] * item.times)
                else:
                    self._queue.append(item)

    def reset(self) -> None:
        """Forget queued responses and recorded requests."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()

    @property
    def pending(self) -> int:
        """How many queued responses have not been used."""
        with self._lock:
            return len(self._queue)

    @property
    def bodies(self) -> list[Any]:
        """The JSON body of every request, in order."""
        with self._lock:
            return [request.body for request in self.requests]

    @property
    def last_body(self) -> Any:
        """The JSON body of the latest request."""
        with self._lock:
            assert self.requests, "the server has received no request"
            return self.requests[-1].body

    async def wait_for_requests(self, count: int = 1, timeout: float = 5.0) -> None:
        """Wait until ``count`` requests have arrived.

        Raises:
            TimeoutError: They did not arrive in ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"expected {count} request(s), got {len(self.requests)}")
            await asyncio.sleep(0.005)

    # -- used by the handler ------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> Script | None:
        with self._lock:
            self.requests.append(request)
            return self._queue.popleft() if self._queue else None

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server is stopping; return False if it is."""
        if seconds <= 0:
            return not self._closing.is_set()
        return not self._closing.wait(seconds)


class _Handler(BaseHTTPRequestHandler):
    server_owner: OpenAIServer
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = None
        owner = self.server_owner
        headers = {name.lower(): value for name, value in self.headers.items()}
        item = owner._record(RecordedRequest(path=self.path, headers=headers, body=body, raw=raw))
        if not self.path.split("?", 1)[0].endswith("/chat/completions"):
            self._send_error(404, f"openai_server: no route for {self.path}", {})
            return
        if callable(item):
            item = item(body)
        try:
            if item is None:
                self._send_error(
                    400, "openai_server: no scripted response left for this request", {}
                )
            elif isinstance(item, ErrorReply):
                if owner._sleep(item.delay):
                    self._send_error(item.status, item.message, item.headers)
            elif isinstance(item, RawReply):
                self._send(item.status, item.body, item.content_type, {})
            elif not owner._sleep(item.delay):
                return
            elif isinstance(body, dict) and body.get("stream"):
                self._send_stream(item, body)
            elif item.cut_after is not None:
                self._send_cut(json.dumps(_completion(item, body)).encode(), item.cut_after)
            else:
                self._send(200, json.dumps(_completion(item, body)).encode(), None, item.headers)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (cancellation or timeout): nothing to answer

    # -- writers ------------------------------------------------------------------------

    def _send(
        self, status: int, payload: bytes, content_type: str | None, headers: dict[str, str]
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type or "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _send_cut(self, payload: bytes, keep: int) -> None:
        """Promise the whole body in ``Content-Length``, send ``keep`` bytes, close."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload[:keep])
        self.wfile.flush()
        self.close_connection = True

    def _send_error(self, status: int, message: str, headers: dict[str, str]) -> None:
        error = {"error": {"message": message, "type": "server_error", "code": str(status)}}
        self._send(status, json.dumps(error).encode(), None, headers)

    def _send_stream(self, reply: Reply, body: dict[str, Any]) -> None:
        if reply.break_after is not None:
            self._send_broken_stream(reply, body, reply.break_after)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        for sent, chunk in enumerate(_chunks(reply, body, include_usage)):
            if sent == reply.cut_after:
                return  # HTTP/1.0 without a length: closing the connection ends the body
            if sent == reply.error_after:
                error = {"error": {"message": "scripted stream error", "type": "server_error"}}
                self.wfile.write(b"data: " + json.dumps(error).encode() + b"\n\n")
                self.wfile.flush()
                return
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()
            if not self.server_owner._sleep(reply.chunk_delay):
                return
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _send_broken_stream(self, reply: Reply, body: dict[str, Any], keep: int) -> None:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        events = [
            b"data: " + json.dumps(c).encode() + b"\n\n"
            for c in _chunks(reply, body, include_usage)
        ]
        events.append(b"data: [DONE]\n\n")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(sum(len(event) for event in events)))
        self.end_headers()
        for event in events[:keep]:
            self.wfile.write(event)
        self.wfile.flush()
        self.close_connection = True


# -- wire payloads ----------------------------------------------------------------------


def _finish_reason(reply: Reply) -> str | None:
    if reply.finish_reason == "default":
        return "tool_calls" if reply.tool_calls else "stop"
    return reply.finish_reason


def _usage(reply: Reply) -> dict[str, int] | None:
    if reply.usage is None:
        return None
    prompt, completion = reply.usage
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _call_id(call: ToolCall, index: int) -> str:
    return call.id or f"call_{index}"


def _completion(reply: Reply, body: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.refusal is not None:
        message["refusal"] = reply.refusal
    if reply.reasoning_content is not None:
        message["reasoning_content"] = reply.reasoning_content
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": _call_id(call, index),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for index, call in enumerate(reply.tool_calls)
        ]
    choice: dict[str, Any] = {
        "index": 0,
        "message": message,
        "finish_reason": _finish_reason(reply),
        "logprobs": None if reply.logprobs is None else {"content": reply.logprobs},
    }
    result: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": body.get("model", "unknown") if isinstance(body, dict) else "unknown",
        "choices": [choice],
    }
    usage = _usage(reply)
    if usage is not None:
        result["usage"] = usage
    return result


def _chunks(reply: Reply, body: dict[str, Any], include_usage: bool) -> Iterator[dict[str, Any]]:
    model = body.get("model", "unknown")

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        choice.update(extra)
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": model,
            "choices": [choice],
        }

    yield chunk({"role": "assistant", "content": ""})
    if reply.reasoning_content:
        for piece in _split_words(reply.reasoning_content):
            yield chunk({"reasoning_content": piece})
    if reply.content:
        pieces = reply.chunks if reply.chunks is not None else _split_words(reply.content)
        for position, piece in enumerate(pieces):
            logprobs = None
            if reply.logprobs is not None and position < len(reply.logprobs):
                logprobs = {"content": [reply.logprobs[position]]}
            yield chunk({"content": piece}, logprobs=logprobs)
    for index, call in enumerate(reply.tool_calls):
        # The first delta carries id and name; the arguments follow in three pieces.
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": _call_id(call, index),
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        for piece in _split_in(call.arguments, 3):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _finish_reason(reply))
    usage = _usage(reply)
    if include_usage and usage is not None:
        yield {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": model,
            "choices": [],
            "usage": usage,
        }


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A fresh, running :class:`OpenAIServer`, stopped after the test."""
    server = OpenAIServer().start()
    try:
        yield server
    finally:
        server.stop()
