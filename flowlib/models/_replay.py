"""A scripted model client for tests, examples and the offline demo."""

from __future__ import annotations

import asyncio
import re
from array import array
from collections.abc import AsyncGenerator, Iterator, Sequence
from typing import Any, ClassVar, TypeVar, cast, overload

from pydantic import BaseModel, ConfigDict
from typing_extensions import Self

from .._cancellation import CancellationToken
from ..component.internal import register_builtin
from ..errors import FlowlibError
from ._client import (
    CreateRequest,
    ModelInfo,
    RequestClient,
    ToolLike,
    validate_model_info,
)
from ._types import CreateResult, LLMMessage, RequestUsage

__all__ = ["ReplayChatCompletionClient", "ReplayExhaustedError"]

_TOKEN = re.compile(r"\S+\s*|\s+")


def _tokens(text: str) -> list[str]:
    """Split text into word-ish chunks that join back to the original text."""
    return _TOKEN.findall(text)


def _message_text(message: LLMMessage) -> str:
    content: Any = message.content
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif hasattr(part, "arguments"):
            parts.append(f"{part.name}({part.arguments})")
        elif hasattr(part, "call_id"):
            parts.append(str(part.content))
    return " ".join(parts)


def _word_count(message: LLMMessage) -> int:
    return len(_message_text(message).split())


_Item = TypeVar("_Item")


class _ListView(Sequence[_Item]):
    """A read-only sequence built when read, that compares equal to a list of the same
    items (and shows as one)."""

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(list(self))


class _Trunk:
    """One conversation as the client saw it: its messages (a private list, only ever
    appended to) and the running word count after each of them."""

    __slots__ = ("counts", "messages")

    def __init__(self) -> None:
        self.messages: list[LLMMessage] = []
        self.counts = array("q")

    def extend(self, messages: Sequence[LLMMessage]) -> None:
        total = self.counts[-1] if self.counts else 0
        for message in messages:
            total += _word_count(message)
            self.messages.append(message)
            self.counts.append(total)

    def holds_prefix(self, messages: Sequence[LLMMessage], length: int) -> bool:
        """Whether ``messages[:length]`` are this trunk's first ``length`` messages
        (``length`` is the shorter of the two lengths)."""
        if length == 0:
            return True
        mine = self.messages
        # The last message first: cheap, and it rejects most candidates.
        if mine[length - 1] is not messages[length - 1]:
            return False
        theirs = messages if isinstance(messages, list) else list(messages)
        # list == list compares item by item in C, identity first: no Python loop. Neither
        # list is sliced when the request extends the trunk (every turn of an agent): the
        # trunk is extended by the new messages for the comparison and cut back after, so
        # the work does not copy (and touch) the whole conversation.
        if length < len(mine):
            return mine[:length] == theirs
        if length == len(theirs):
            return mine == theirs
        mine.extend(theirs[length:])
        try:
            return mine == theirs
        finally:
            del mine[length:]


class _RequestLog(_ListView[list[LLMMessage]]):
    """The messages of every request, kept in memory linear in the conversation.

    A request that repeats an earlier request and adds messages at the end (every turn
    of an agent does) is stored as a length into a shared trunk, not as a copy: a
    conversation of n turns costs O(n) memory instead of O(n^2), and the word count of
    a request only counts its new messages. Requests are materialised when read.
    """

    _RECENT = 8  # trunks tried before a new one is started

    def __init__(self) -> None:
        self._recent: list[_Trunk] = []
        self._entries: list[tuple[_Trunk, int]] = []

    def _find(self, messages: Sequence[LLMMessage]) -> tuple[_Trunk | None, int]:
        """A recent trunk that ``messages`` extends or is a prefix of, and the length
        they share."""
        size = len(messages)
        for trunk in reversed(self._recent):
            shared = min(size, len(trunk.messages))
            if shared and trunk.holds_prefix(messages, shared):
                return trunk, shared
        return None, 0

    def record(self, messages: Sequence[LLMMessage]) -> int:
        """Record a request; return its word count."""
        trunk, shared = self._find(messages)
        if trunk is None:
            trunk = _Trunk()
        elif self._recent[-1] is trunk:
            self._recent.pop()
        else:
            self._recent.remove(trunk)
        self._recent.append(trunk)
        del self._recent[: -self._RECENT]
        if shared < len(messages):
            trunk.extend(messages[shared:])
        self._entries.append((trunk, len(messages)))
        return trunk.counts[len(messages) - 1] if messages else 0

    def count(self, messages: Sequence[LLMMessage]) -> int:
        """The word count of ``messages``, reusing what recorded requests counted."""
        trunk, shared = self._find(messages)
        known = trunk.counts[shared - 1] if trunk is not None and shared else 0
        return known + sum(_word_count(message) for message in messages[shared:])

    def clear(self) -> None:
        self._recent.clear()
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    @overload
    def __getitem__(self, index: int) -> list[LLMMessage]: ...

    @overload
    def __getitem__(self, index: slice) -> list[list[LLMMessage]]: ...

    def __getitem__(self, index: int | slice) -> list[LLMMessage] | list[list[LLMMessage]]:
        if isinstance(index, slice):
            return [trunk.messages[:length] for trunk, length in self._entries[index]]
        trunk, length = self._entries[index]
        return trunk.messages[:length]

    def __iter__(self) -> Iterator[list[LLMMessage]]:
        for trunk, length in self._entries:
            yield trunk.messages[:length]


class _CreateCalls(_ListView[dict[str, Any]]):
    """``create_calls``: the arguments of every call, built when read."""

    def __init__(
        self, client: ReplayChatCompletionClient, tokens: list[CancellationToken | None]
    ) -> None:
        self._client = client
        self._tokens = tokens  # the client's own list, shared

    def __len__(self) -> int:
        return len(self._client.request_args)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[position] for position in range(len(self))[index]]
        client = self._client
        position = range(len(self))[index]
        return {
            "messages": client.requests[position],
            **client.request_args[position],
            "cancellation_token": self._tokens[position],
        }


class ReplayExhaustedError(FlowlibError, ValueError):
    """The replay client was asked for more responses than it was scripted with."""


class ReplayConfig(BaseModel):
    """The config of [`ReplayChatCompletionClient`][flowlib.models.ReplayChatCompletionClient]:
    its script (a config is a blueprint: the position in the script is not kept)."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    chat_completions: list[str | CreateResult]
    model_info: dict[str, Any] | None = None
    latency: float | None = None


class ReplayChatCompletionClient(RequestClient):
    """Plays scripted responses in order: strings become ``stop`` completions, and
    [`CreateResult`][flowlib.models.CreateResult] objects (tool calls included) are returned as
    given.

    Every request is recorded in `requests` (the messages the model was sent) and
    `create_calls` (all the arguments of each call, as in AutoGen), so tests can
    assert what each model call saw. Usage counts whitespace-separated words.

    The client is cheap on long conversations: a request that extends an earlier one (as
    every turn of an agent does) is kept as a length into the earlier one's messages, not
    as a copy, and only its new messages are counted; so memory stays linear in the
    turns and a call does not re-read the whole history.

    Args:
        chat_completions: The responses, in order.
        model_info: What the fake model claims to support; defaults to everything.
        latency: Seconds to wait per response (and per streamed chunk is not delayed).

    ``create`` returns the next scripted response; ``create_stream`` yields it in
    word-sized chunks (a scripted result with tool calls whole), then the result.

    Raises:
        ValueError: If ``model_info`` is incomplete.
        ReplayExhaustedError: From ``create`` and ``create_stream`` once the script has run
            out (a ``ValueError``).

    Examples:
        >>> import asyncio
        >>> from flowlib.models import UserMessage
        >>> client = ReplayChatCompletionClient(["Hello!", "Bye."])
        >>> result = asyncio.run(client.create([UserMessage(content="hi", source="user")]))
        >>> result.content, result.finish_reason
        ('Hello!', 'stop')
    """

    otel_provider_name = "replay"  # a scripted model: no registered provider

    def __init__(
        self,
        chat_completions: Sequence[str | CreateResult],
        *,
        model_info: ModelInfo | None = None,
        latency: float = 0.0,
    ) -> None:
        super().__init__()
        self._script = list(chat_completions)
        self._position = 0
        self._latency = latency
        if model_info is None:
            model_info = ModelInfo(
                vision=True,
                function_calling=True,
                json_output=True,
                family="unknown",
                structured_output=True,
            )
        validate_model_info(model_info)
        self._model_info = model_info
        self._requests = _RequestLog()
        self.request_args: list[dict[str, Any]] = []
        """The keyword arguments (tools, tool_choice, json_output, ...) of every request."""
        self._tokens: list[CancellationToken | None] = []

    @property
    def requests(self) -> Sequence[list[LLMMessage]]:
        """The messages of every request (create and create_stream), in order.

        A read-only sequence (it compares equal to a list of the same lists); each item
        is a new list of the messages that request was sent.
        """
        return self._requests

    @property
    def create_calls(self) -> Sequence[dict[str, Any]]:
        """The arguments of every call (create and create_stream), in order: dicts with
        ``messages``, ``tools``, ``tool_choice``, ``json_output``, ``extra_create_args``
        and ``cancellation_token``, as AutoGen's replay client records them."""
        return _CreateCalls(self, self._tokens)

    @property
    def remaining(self) -> int:
        """How many scripted responses are left."""
        return len(self._script) - self._position

    def reset(self) -> None:
        """Start the script from the beginning and forget recorded requests and usage."""
        self._position = 0
        self._requests.clear()
        self.request_args.clear()
        self._tokens.clear()
        self._actual = RequestUsage(prompt_tokens=0, completion_tokens=0)
        self._total = RequestUsage(prompt_tokens=0, completion_tokens=0)

    def _next(
        self,
        messages: Sequence[LLMMessage],
        args: dict[str, Any],
        token: CancellationToken | None,
    ) -> CreateResult:
        if self._position >= len(self._script):
            raise ReplayExhaustedError(
                f"No more mock responses available: the ReplayChatCompletionClient was "
                f"scripted with {len(self._script)} response(s) and all were used. Add "
                "responses to its list, or call reset() to replay the script."
            )
        item = self._script[self._position]
        self._position += 1
        prompt = self._requests.record(messages)
        self.request_args.append(args)
        self._tokens.append(token)
        if isinstance(item, str):
            result = CreateResult(
                finish_reason="stop",
                content=item,
                usage=RequestUsage(prompt_tokens=prompt, completion_tokens=len(item.split())),
                cached=False,
            )
        else:
            # A copy, so a caller changing its result cannot change the script (or what
            # a later reset() replays).
            result = item.model_copy(deep=True)
        self._record_usage(result.usage)
        return result

    async def _play(
        self, request: CreateRequest, cancellation_token: CancellationToken | None
    ) -> CreateResult:
        """Wait out the latency, record the call and return the next scripted response."""
        if cancellation_token is not None and cancellation_token.is_cancelled():
            raise asyncio.CancelledError()
        if self._latency:
            sleeper = asyncio.ensure_future(asyncio.sleep(self._latency))
            if cancellation_token is not None:
                cancellation_token.link_future(sleeper)
            await sleeper
        args = {
            **request.options(),
            "tools": list(request.tools),
            "extra_create_args": dict(request.extra_create_args or {}),
        }
        return self._next(request.messages, args, cancellation_token)

    async def _create(
        self, request: CreateRequest, cancellation_token: CancellationToken | None
    ) -> CreateResult:
        return await self._play(request, cancellation_token)

    async def _create_stream(
        self, request: CreateRequest, cancellation_token: CancellationToken | None
    ) -> AsyncGenerator[str | CreateResult, None]:
        # A scripted result with text content is yielded in word-sized chunks; one with
        # tool calls whole.
        result = await self._play(request, cancellation_token)
        if isinstance(result.content, str):
            for chunk in _tokens(result.content):
                if cancellation_token is not None and cancellation_token.is_cancelled():
                    raise asyncio.CancelledError()
                yield chunk
                await asyncio.sleep(0)
        yield result

    async def close(self) -> None:
        """Nothing to release."""

    def count_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[ToolLike] = ()
    ) -> int:
        """Count whitespace-separated words of the messages (a stand-in for tokens).

        Messages a recorded request already counted are not counted again.
        """
        return self._requests.count(messages)

    def remaining_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[ToolLike] = ()
    ) -> int:
        """A nominal 10,000-token window minus
        [`count_tokens`][flowlib.models.ReplayChatCompletionClient.count_tokens]."""
        return max(0, 10_000 - self.count_tokens(messages, tools=tools))

    @property
    def model_info(self) -> ModelInfo:
        """What the fake model claims to support."""
        return self._model_info

    # -- the component protocol ------------------------------------------------------------

    component_config_schema: ClassVar[type[BaseModel]] = ReplayConfig

    def _to_config(self) -> ReplayConfig:
        return ReplayConfig(
            chat_completions=list(self._script),
            model_info=dict(self._model_info),
            latency=self._latency or None,
        )

    @classmethod
    def _from_config(cls, config: ReplayConfig) -> Self:
        info = None if config.model_info is None else cast(ModelInfo, config.model_info)
        return cls(config.chat_completions, model_info=info, latency=config.latency or 0.0)


register_builtin(ReplayChatCompletionClient, autogen="autogen_ext.models.replay", shared_state=True)
