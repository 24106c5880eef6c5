"""An agent that stands for a human: it asks an input function for each reply."""

from __future__ import annotations

import asyncio
import builtins
import codecs
import concurrent.futures
import contextlib
import contextvars
import hashlib
import inspect
import locale
import os
import sys
import threading
import uuid
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, cast

from pydantic import BaseModel, ConfigDict
from typing_extensions import Self

from ..base import CancellationToken, Response
from ..component import refuse_field
from ..component.internal import register_builtin
from ..errors import AgentError
from ..messages import (
    BaseAgentEvent,
    BaseChatMessage,
    HandoffMessage,
    TextMessage,
    UserInputRequestedEvent,
)
from ..tools import NoCallKeyError, call_key
from ._base_chat_agent import BaseChatAgent

__all__ = ["AsyncInputFunc", "InputFuncType", "SyncInputFunc", "UserProxyAgent"]

SyncInputFunc = Callable[[str], str]
"""A blocking input function, like the built-in ``input``; it runs in a worker thread."""
AsyncInputFunc = Callable[[str, CancellationToken | None], Awaitable[str]]
"""An async input function taking the prompt and the cancellation token."""
InputFuncType = SyncInputFunc | AsyncInputFunc
"""Either kind of input function."""

_current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar(
    "flowlib_user_input_request_id"
)
# Replies a team has already received for requests of this run, by request id (see
# `UserProxyAgent.given_answers`).
_given: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar(
    "flowlib_user_input_given", default=None
)

PROMPT = "Enter your response: "
HANDOFF_PROMPT = "Handoff received from {source}. Enter your response: "


class UserProxyAgentConfig(BaseModel):
    """The config of [`UserProxyAgent`][flowlib.agents.UserProxyAgent] (a console agent)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = "A human user"
    input_func: str | None = None


class UserProxyAgent(BaseChatAgent):
    """Represents a human user: each turn asks ``input_func`` for the reply.

    Before asking, the agent yields a
    [`UserInputRequestedEvent`][flowlib.messages.UserInputRequestedEvent] whose ``request_id`` the
    input function can read with
    [`UserProxyAgent.InputRequestContext.request_id`][flowlib.agents.UserProxyAgent.InputRequestContext.request_id]
    (for example to match a web reply to the request). The answer is returned as a ``TextMessage``;
    when the last new message is a ``HandoffMessage`` addressed to this agent, the answer is a
    ``HandoffMessage`` back to the agent that handed off.

    A running team is blocked while the agent waits, and cannot be saved meanwhile:
    keep the interaction short, time it out, or cancel it with the cancellation token.
    For slow humans, stop the team instead (``HandoffTermination``,
    ``SourceMatchTermination``) and run it again with the answer.

    Args:
        name: The agent's name.
        description: What the agent is; defaults to ``"A human user"``.
        input_func: A blocking ``(prompt) -> str`` (run in a worker thread, so the event
            loop keeps running) or an async ``(prompt, cancellation_token) -> str``.
            ``None`` (or the built-in ``input``) reads a line from the console: from the
            standard input's file descriptor, waited for on the event loop, so a
            cancelled prompt leaves no thread holding the standard input behind and the
            process can exit at once (docs/choices.md, "Console input without input()").

    Examples:
        >>> import asyncio
        >>> agent = UserProxyAgent("user_proxy", input_func=lambda prompt: "APPROVE")
        >>> result = asyncio.run(agent.run(task="Is the poem fine?"))
        >>> [type(m).__name__ for m in result.messages]
        ['TextMessage', 'UserInputRequestedEvent', 'TextMessage']
        >>> result.messages[-1].to_text()
        'APPROVE'
    """

    class InputRequestContext:
        """Gives the input function the id of the request it is answering."""

        def __init__(self) -> None:
            raise AgentError(
                "InputRequestContext cannot be instantiated; call "
                "UserProxyAgent.InputRequestContext.request_id() inside the input function."
            )

        @classmethod
        def request_id(cls) -> str:
            """Return the ``request_id`` of the ``UserInputRequestedEvent`` being answered.

            Raises:
                RuntimeError: When called outside a UserProxyAgent's input function.
            """
            try:
                return _current_request_id.get()
            except LookupError:
                raise AgentError(
                    "UserProxyAgent.InputRequestContext.request_id() was called outside an "
                    "input function; it only works while a UserProxyAgent is asking for input."
                ) from None

    @staticmethod
    @contextlib.contextmanager
    def given_answers(answers: Mapping[str, str]) -> Iterator[None]:
        """Inside the block, a request whose id is in ``answers`` is answered from it,
        without calling the input function.

        A team's [`answer`][flowlib.teams.BaseGroupChat.answer] uses it to hand a reply
        given in another process to the re-run turn that asks again: inside a team run the
        request id is derived from the turn's idempotency key, so the re-run of an
        interrupted turn asks with the same id (docs/state.md, "Human requests").
        """
        marker = _given.set(answers)
        try:
            yield
        finally:
            try:
                _given.reset(marker)
            except ValueError:  # left in another context (a generator closed elsewhere)
                _given.set(None)

    def __init__(
        self,
        name: str,
        *,
        description: str = "A human user",
        input_func: InputFuncType | None = None,
    ) -> None:
        super().__init__(name, description)
        self.input_func: InputFuncType = input_func if input_func is not None else input
        self._is_async = is_async_callable(self.input_func)
        # The built-in `input` in a thread would hold the standard input's buffer lock
        # while it waits; if the wait is cancelled, the interpreter cannot shut down
        # cleanly (issue 27.3). The console is read by `_CONSOLE` instead.
        self._is_console = self.input_func is builtins.input

    component_config_schema: ClassVar[type[BaseModel]] = UserProxyAgentConfig
    component_code_fields: ClassVar[Mapping[str, str]] = {
        "input_func": "the agent reads the console unless built in code with input_func="
    }

    def _to_config(self) -> UserProxyAgentConfig:
        if self.input_func is not builtins.input:
            refuse_field(
                "input_func",
                f"`{self.name}` reads the user's answers with the Python callable "
                f"{getattr(self.input_func, '__qualname__', self.input_func)!r}; a loaded "
                "agent would read the console instead. Build this agent in code (or pass "
                "input_func=None to dump a console agent).",
            )
        return UserProxyAgentConfig(name=self.name, description=self.description)

    @classmethod
    def _from_config(cls, config: UserProxyAgentConfig) -> Self:
        # Its other fields are options by name (input_func is refused: component_code_fields).
        return cls(**config.model_dump(exclude={"input_func"}))

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        """``TextMessage``, or ``HandoffMessage`` when answering a handoff."""
        return (TextMessage, HandoffMessage)

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        """Ask for the user's reply to ``messages``.

        Raises:
            RuntimeError: If the input function raises (the cause is chained).
            asyncio.CancelledError: If ``cancellation_token`` is cancelled while waiting.
        """
        return await self._drain(messages, cancellation_token)

    async def on_messages_stream(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Response, None]:
        """Yield a ``UserInputRequestedEvent``, wait for the input, then the Response."""
        handoff = self._handoff_to_me(messages)
        prompt = HANDOFF_PROMPT.format(source=handoff.source) if handoff else PROMPT
        request = UserInputRequestedEvent(request_id=_request_id(), source=self.name)
        yield request
        given = _given.get()
        answer = given.get(request.request_id) if given is not None else None
        if answer is None:
            answer = await self._ask(prompt, request.request_id, cancellation_token)
        reply: BaseChatMessage
        if handoff is not None:
            reply = HandoffMessage(content=answer, target=handoff.source, source=self.name)
        else:
            reply = TextMessage(content=answer, source=self.name)
        yield Response(chat_message=reply, inner_messages=[request])

    async def on_reset(self, cancellation_token: CancellationToken | None = None) -> None:
        """Nothing to reset: the agent keeps no state."""

    def _handoff_to_me(self, messages: Sequence[BaseChatMessage]) -> HandoffMessage | None:
        last = messages[-1] if messages else None
        if isinstance(last, HandoffMessage) and last.target == self.name:
            return last
        return None

    async def _ask(self, prompt: str, request_id: str, token: CancellationToken) -> str:
        """Call the input function with the request id in context; cancellable."""
        marker = _current_request_id.set(request_id)
        try:
            # The worker (task or thread) runs in a copy of the current context, which
            # holds the request id; resetting it here does not affect the copy.
            if self._is_console:
                waiter: asyncio.Future[str] = asyncio.ensure_future(_CONSOLE.input(prompt))
            elif self._is_async:
                func = cast(AsyncInputFunc, self.input_func)
                waiter = asyncio.ensure_future(_call_async(func, prompt, token))
            else:
                waiter = run_in_thread(cast(SyncInputFunc, self.input_func), prompt)
        finally:
            _current_request_id.reset(marker)
        token.link_future(waiter)
        try:
            answer = await waiter
        except asyncio.CancelledError:
            waiter.cancel()
            raise
        except Exception as exc:
            raise AgentError(
                f"UserProxyAgent `{self.name}` failed to get user input: "
                f"{type(exc).__name__}: {exc}",
                agent=self.name,
            ) from exc
        finally:
            token.remove_callback(waiter.cancel)
        if not isinstance(answer, str):
            raise AgentError(
                f"UserProxyAgent `{self.name}`'s input function returned "
                f"{type(answer).__name__}; it must return a str.",
                agent=self.name,
            )
        return answer


def _request_id() -> str:
    """The id of a request asked now: in a team run, derived from the turn's idempotency
    key (the re-run of an interrupted turn asks with the same id); else random."""
    try:
        key = call_key()
    except NoCallKeyError:
        return str(uuid.uuid4())
    return str(uuid.UUID(hashlib.sha256(f"{key}/user-input".encode()).hexdigest()[:32]))


async def _call_async(func: AsyncInputFunc, prompt: str, token: CancellationToken) -> str:
    return await func(prompt, token)


def is_async_callable(func: Any) -> bool:
    # A coroutine function, or an object whose __call__ is one.
    call = type(func).__call__ if not inspect.isroutine(func) else None
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(call)


def run_in_thread(func: SyncInputFunc, prompt: str) -> asyncio.Future[str]:
    """Run a blocking input function in a daemon thread and return a future of its answer.

    A daemon thread rather than the loop's executor: a person may never answer, and a
    cancelled wait must neither block the loop's shutdown nor keep the process alive.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: str | None, error: BaseException | None) -> None:
        if future.done():
            return  # cancelled meanwhile: the answer is dropped
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(cast(str, value))

    def work() -> None:
        value: str | None = None
        error: BaseException | None = None
        try:
            value = context.run(func, prompt)
        except BaseException as exc:  # handed to the awaiting coroutine, not lost
            error = exc
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name="flowlib-user-input", daemon=True).start()
    return future


class _ConsoleReader:
    """Reads the lines a person types (or a pipe sends) on the standard input.

    The built-in ``input`` reads through ``sys.stdin``, whose buffer holds a lock for as
    long as a read blocks. Called in a worker thread and abandoned by a cancelled
    prompt, it keeps that lock: the interpreter then cannot close ``sys.stdin`` at exit
    and dies with "could not acquire lock for <stdin> at interpreter shutdown". This
    reader takes bytes from the file descriptor itself: the event loop tells it when
    the descriptor is readable (no thread at all), or, where a loop cannot watch it
    (Windows' proactor loop), a daemon thread blocks in ``os.read``, which holds no
    Python lock. Bytes read past the end of a line are kept for the next prompt, so
    no answer is lost and a cancelled prompt leaves the unread input where it was.

    Lines are split on ``\\n`` and decoded with ``sys.stdin``'s encoding and error
    handler; a trailing ``\\r`` is dropped. At the end of the input a partial last line
    is returned, then ``EOFError`` is raised, as ``input`` does.
    """

    def __init__(self) -> None:
        self._pending = bytearray()
        self._eof = False
        # One prompt reads at a time; a lock per event loop, since an asyncio.Lock that
        # was ever waited on belongs to its loop (a process may call asyncio.run again).
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        self._inflight: concurrent.futures.Future[bytes] | None = None

    async def input(self, prompt: str) -> str:
        """Write ``prompt`` and return the next line, without its line ending."""
        stream = sys.stdin
        if stream is None:
            raise AgentError("There is no standard input to read the user's answer from.")
        try:
            fd = stream.fileno()
        except (AttributeError, OSError, ValueError):
            # No descriptor (an io.StringIO put in place by a test or an embedding app):
            # `input` reads it as before; such a stream holds no buffer lock of stdin.
            return await run_in_thread(builtins.input, prompt)
        if prompt:
            out = sys.stdout
            if out is not None:
                out.write(prompt)
                out.flush()
        lock = self._locks.setdefault(asyncio.get_running_loop(), asyncio.Lock())
        async with lock:
            while True:
                end = self._pending.find(b"\n")
                if end >= 0:
                    raw = bytes(self._pending[:end])
                    del self._pending[: end + 1]
                    return self._decode(raw, stream)
                if self._eof:
                    if not self._pending:
                        raise EOFError("The standard input ended before an answer was given.")
                    raw = bytes(self._pending)
                    self._pending.clear()
                    return self._decode(raw, stream)
                chunk = await self._read(fd)
                if chunk:
                    self._pending += chunk
                else:
                    self._eof = True

    @staticmethod
    def _decode(raw: bytes, stream: Any) -> str:
        encoding = getattr(stream, "encoding", None) or locale.getpreferredencoding(False)
        errors = getattr(stream, "errors", None) or "strict"
        decoder = codecs.getincrementaldecoder(encoding)(errors)
        return decoder.decode(raw, final=True).removesuffix("\r")

    async def _read(self, fd: int) -> bytes:
        """The next bytes on ``fd`` (``b""`` at its end); cancelling leaves them unread."""
        if self._inflight is not None:  # a thread's read from an earlier, cancelled prompt
            return await self._thread_read(fd)
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        try:
            loop.add_reader(fd, _settle, ready)
        except PermissionError:
            return os.read(fd, 65536)  # a regular file (or /dev/null): reads never block
        except (NotImplementedError, ValueError, OSError):
            return await self._thread_read(fd)  # a loop that cannot watch descriptors
        try:
            await ready
        finally:
            loop.remove_reader(fd)
        try:
            return os.read(fd, 65536)
        except BlockingIOError:  # someone else took the bytes meanwhile
            return await self._read(fd)

    async def _thread_read(self, fd: int) -> bytes:
        if self._inflight is None:
            inflight: concurrent.futures.Future[bytes] = concurrent.futures.Future()

            def work() -> None:
                try:
                    inflight.set_result(os.read(fd, 65536))
                except BaseException as exc:
                    inflight.set_exception(exc)

            self._inflight = inflight
            threading.Thread(target=work, name="flowlib-console-input", daemon=True).start()
        inflight = self._inflight
        # A cancelled wait leaves the read running; its bytes are for the next prompt.
        chunk = await asyncio.shield(asyncio.wrap_future(inflight))
        self._inflight = None
        return chunk


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


_CONSOLE = _ConsoleReader()
"""The one reader of the process's standard input."""


register_builtin(UserProxyAgent, autogen="autogen_agentchat.agents")
