"""Hostile model servers (issue 21.4, 21.6): a server on 127.0.0.1 that keeps the
connection alive with an SSE comment and never finishes is cut off by the client's
overall deadline, streamed or not (the per-read timeout alone never fires); a reply body
that is not UTF-8 is a ModelResponseError, streamed or not, never a UnicodeDecodeError."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from openai_server import OpenAIServer, RawReply

from flowlib.component import dump_component, load_component
from flowlib.errors import ArgumentTypeError, InvalidArgumentError
from flowlib.models import (
    DEFAULT_DEADLINE,
    ModelResponseError,
    OpenAIChatCompletionClient,
    UserMessage,
)

ASK = [UserMessage(content="Say hello.", source="user")]
INFO: Any = {
    "vision": False,
    "function_calling": True,
    "json_output": True,
    "family": "unknown",
    "structured_output": True,
}
KEEPALIVE_EVERY = 0.25  # seconds between keep-alive comments
SERVER_CAP = 40.0  # the hostile server gives up after this long (bounded test)


class KeepAliveServer:
    """Answers every request with status 200 and then only ``: keepalive`` comments,
    never a completion, until ``SERVER_CAP`` seconds have passed."""

    def __init__(self) -> None:
        self.stop_event = threading.Event()
        self.hung_up = threading.Event()  # the client closed a connection mid-answer
        self.requests = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                owner.requests += 1
                self.rfile.read(int(self.headers.get("content-length", 0)))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                ends = time.monotonic() + SERVER_CAP
                try:
                    while time.monotonic() < ends and not owner.stop_event.is_set():
                        self.wfile.write(b": keepalive\n\n")
                        self.wfile.flush()
                        owner.stop_event.wait(KEEPALIVE_EVERY)
                except OSError:
                    owner.hung_up.set()  # the client gave up while the server still sent

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> KeepAliveServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_event.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def keepalive_server() -> Iterator[KeepAliveServer]:
    with KeepAliveServer() as server:
        yield server


def client_for(base_url: str, **options: Any) -> OpenAIChatCompletionClient:
    return OpenAIChatCompletionClient(
        "m", api_key="k", base_url=base_url, model_info=INFO, max_retries=0, **options
    )


@pytest.mark.parametrize("stream", [False, True])
async def test_the_deadline_ends_a_call_the_per_read_timeout_never_ends(
    keepalive_server: KeepAliveServer, stream: bool
) -> None:
    """Keep-alives reset the read clock (timeout=1 never fires); the 2 s deadline
    ends the call, long before the server itself would stop."""
    client = client_for(keepalive_server.base_url, timeout=1.0, deadline=2.0)
    started = time.monotonic()
    with pytest.raises(ModelResponseError, match="deadline of 2 s"):
        if stream:
            async for _ in client.create_stream(ASK):
                pass
        else:
            await client.create(ASK)
    await client.close()
    assert keepalive_server.requests == 1
    # Ended by the client's deadline while the server was still sending, not by the
    # server giving up (which would be a stream without a finish reason).
    assert keepalive_server.hung_up.wait(SERVER_CAP)
    assert time.monotonic() - started < SERVER_CAP


async def test_the_deadline_is_an_option_in_the_config(keepalive_server: KeepAliveServer) -> None:
    client = client_for(keepalive_server.base_url, deadline=2.5)
    assert client.deadline == 2.5
    data = dump_component(client).model_dump(mode="json")
    assert data["config"]["deadline"] == 2.5
    loaded = load_component(data, allow_hosts=[])
    assert loaded.deadline == 2.5
    unbounded = client_for(keepalive_server.base_url, deadline=None)
    data = dump_component(unbounded).model_dump(mode="json")
    assert data["config"]["deadline"] == "none"
    assert load_component(data).deadline is None
    no_field = {**data, "config": {k: v for k, v in data["config"].items() if k != "deadline"}}
    assert load_component(no_field).deadline == DEFAULT_DEADLINE
    for each in (client, unbounded, loaded):
        await each.close()


@pytest.mark.parametrize(
    ("bad", "error"),
    [(0, InvalidArgumentError), (-1.0, InvalidArgumentError), ("1", ArgumentTypeError)],
)
def test_a_bad_deadline_is_named(bad: Any, error: type) -> None:
    with pytest.raises(error, match="deadline"):
        client_for("http://127.0.0.1:9/v1", deadline=bad)


# --- invalid UTF-8 (issue 21.6) -------------------------------------------------------------

NOT_UTF8 = (
    b'{"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", '
    b'"content": "\xff\xfe"}, "finish_reason": "stop"}]}'
)
NOT_UTF8_STREAM = (
    b'data: {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m", '
    b'"choices": [{"index": 0, "delta": {"content": "\xc3\x28"}, "finish_reason": null}]}\n\n'
    b"data: [DONE]\n\n"
)


async def test_a_body_that_is_not_utf8_is_a_model_response_error(
    openai_server: OpenAIServer,
) -> None:
    client = client_for(openai_server.base_url)
    openai_server.enqueue(RawReply(NOT_UTF8))
    with pytest.raises(ModelResponseError, match="UTF-8"):
        await client.create(ASK)
    await client.close()


async def test_a_stream_that_is_not_utf8_is_a_model_response_error(
    openai_server: OpenAIServer,
) -> None:
    client = client_for(openai_server.base_url)
    openai_server.enqueue(RawReply(NOT_UTF8_STREAM, content_type="text/event-stream"))
    with pytest.raises(ModelResponseError, match="UTF-8"):
        async for _ in client.create_stream(ASK):
            pass
    await client.close()
