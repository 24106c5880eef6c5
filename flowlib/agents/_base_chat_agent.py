"""The base class custom agents subclass."""

from __future__ import annotations

from abc import ABC
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, ClassVar, Protocol

from .._named import Named
from .._telemetry import trace_agent_turn
from ..base import CancellationToken, ChatAgent, Response, TaskResult
from ..base.internal import check_state_argument, last_item, state_entry, task_messages
from ..checkpoint import Journal, StateChange, diff_state, json_state, patch_of, state_change
from ..errors import InvalidArgumentError
from ..messages import (
    BaseAgentEvent,
    BaseChatMessage,
    HandoffMessage,
    ModelClientStreamingChunkEvent,
    TextMessage,
)
from ..model_context import ChatCompletionContext

__all__ = ["BaseChatAgent"]


class BaseChatAgent(Named, ChatAgent, ABC):
    """Base class for chat agents: implement ``on_messages`` and ``on_reset``; override
    ``on_messages_stream`` to stream, and ``produced_message_types`` for an agent that
    replies with more than ``TextMessage``.

    The agent is stateful: callers pass only the messages that are new since its last
    call, never the whole history.

    Args:
        name: The agent's name; a valid Python identifier, unique within its team.
        description: What the agent does; teams use it to choose speakers.

    Raises:
        ValueError: If ``name`` is not a valid identifier.

    Examples:
        >>> from flowlib.messages import TextMessage
        >>> class Echo(BaseChatAgent):
        ...     async def on_messages(self, messages, cancellation_token):
        ...         text = messages[-1].to_text() if messages else ""
        ...         return Response(chat_message=TextMessage(content=text, source=self.name))
        ...     async def on_reset(self, cancellation_token):
        ...         pass
    """

    component_type: ClassVar[str] = "agent"

    def __init__(self, name: str, description: str) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise InvalidArgumentError(
                f"Agent name `{name}` is not a valid Python identifier; use letters, digits "
                "and underscores, not starting with a digit (e.g. `writer_1`).",
                argument="name",
            )
        self._name = name
        self._description = description

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        """The chat message types the agent may reply with: ``TextMessage``, unless the
        agent says otherwise."""
        return (TextMessage,)

    async def on_messages_stream(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Response, None]:
        """Yield the inner messages of [`on_messages`][flowlib.base.ChatAgent.on_messages],
        then its Response."""
        response = await self.on_messages(messages, cancellation_token)
        for inner in response.inner_messages or ():
            yield inner
        yield response

    async def run_stream(
        self,
        *,
        task: str | BaseChatMessage | Sequence[BaseChatMessage] | None = None,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | TaskResult, None]:
        """Like [`run`][flowlib.base.ChatAgent.run], yielding the task, events and chunks, then
        the TaskResult.

        Streaming chunks are yielded but not kept in ``TaskResult.messages``.
        """
        token = cancellation_token or CancellationToken()
        incoming = task_messages(task)
        kept: list[BaseAgentEvent | BaseChatMessage] = []
        if output_task_messages:
            for message in incoming:
                kept.append(message)
                yield message
        # Telemetry (flowlib/_telemetry.py): an invoke_agent span; as is when off.
        async for item in trace_agent_turn(self, self.on_messages_stream(incoming, token)):
            if isinstance(item, Response):
                kept.append(item.chat_message)
                yield item.chat_message
            else:
                if not isinstance(item, ModelClientStreamingChunkEvent):
                    kept.append(item)
                yield item
        yield TaskResult(messages=kept, stop_reason=None)

    async def _drain(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        """Run [`on_messages_stream`][flowlib.agents.BaseChatAgent.on_messages_stream] to its end
        and return its Response.

        For agents that implement streaming and answer ``on_messages`` from it.

        Raises:
            RuntimeError: If the stream ends without a Response.
        """
        stream = self.on_messages_stream(messages, cancellation_token)
        return await last_item(stream, Response, self.name, "on_messages_stream")

    async def on_pause(self, cancellation_token: CancellationToken) -> None:
        """Called when the team pauses; does nothing by default."""

    async def on_resume(self, cancellation_token: CancellationToken) -> None:
        """Called when the team resumes; does nothing by default."""

    async def save_state(self) -> Mapping[str, Any]:
        """Return the state of a stateless agent (its type only)."""
        return {"type": "BaseState", "version": "1.0.0"}

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Load state; a stateless agent has nothing to restore.

        Raises:
            StateError: ``state`` is not a mapping.
        """
        check_state_argument(state, f"Agent `{self.name}`")

    async def close(self) -> None:
        """Release resources; does nothing by default."""


class ModelBackedAgent(BaseChatAgent):
    """An agent that talks to a model: its read-only ``model_context``, which its
    constructor stores in ``_model_context``, and how new messages enter it."""

    _model_context: ChatCompletionContext

    @property
    def model_context(self) -> ChatCompletionContext:
        """The context holding the agent's conversation with its model."""
        return self._model_context

    async def _remember(self, messages: Sequence[BaseChatMessage]) -> None:
        """Add the new messages to the model context as the model sees them, each
        handoff's carried context first."""
        context = self._model_context
        for message in messages:
            if isinstance(message, HandoffMessage):
                for carried in message.context:
                    await context.add_message(carried)
            await context.add_message(message.to_model_message())


class _Stateful(Protocol):
    async def save_state(self) -> Mapping[str, Any]: ...

    async def load_state(self, state: Mapping[str, Any]) -> None: ...


class PartsStateAgent(ModelBackedAgent):
    """A model-backed agent that streams its turns and whose state is made of its parts'
    states: ``{"type": _state_type, "version": 1, key: the part's state, ...}`` for the
    parts ``_parts()`` names. A state to load must have the first part (it says the state
    is this agent's); the others are loaded when it has them."""

    _state_type: ClassVar[str]

    def __init__(self, name: str, description: str) -> None:
        super().__init__(name, description)
        self._journal = Journal()  # what save_state_since returned last

    def _parts(self) -> dict[str, _Stateful]:
        """The objects whose states make up the agent's, by key, in order."""
        return {"llm_context": self._model_context}

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        """Handle the new messages and return the Response that
        [`on_messages_stream`][flowlib.agents.BaseChatAgent.on_messages_stream] ends with."""
        return await self._drain(messages, cancellation_token)

    async def save_state(self) -> Mapping[str, Any]:
        """Return the agent's state: the model context's (and, for an agent with an inner
        team, the team's), JSON-serialisable."""
        state: dict[str, Any] = {"type": self._state_type, "version": 1}
        for key, part in self._parts().items():
            state[key] = dict(await part.save_state())
        return state

    async def save_state_since(self, base: Any) -> StateChange:
        """The state now (as `save_state()` gives it, in JSON) and the patch from ``base``:
        when ``base`` is the state this returned last, each part (the model context, an
        inner team) reports only its change (see
        [`IncrementalState`][flowlib.checkpoint.IncrementalState])."""
        if type(self).save_state is not PartsStateAgent.save_state:
            plain = json_state(await self.save_state())
            return StateChange(plain, diff_state(base, plain))
        journal = self._journal
        mine = journal.fits(base, [])
        state: dict[str, Any] = {"type": self._state_type, "version": 1}
        known: dict[str, Any] = {}
        for key, part in self._parts().items():
            change = await state_change(part, base[key] if mine else None)
            state[key] = change.state
            known[key] = change.patch
        if not mine:
            return journal.whole(base, state, [])
        return journal.grown(base, state, patch_of(base, state, known), [])

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore a state returned by ``save_state``.

        Raises:
            StateError: If the state is not this kind of agent's state.
        """
        owner = f"{self._state_type.removesuffix('State')} `{self.name}`"
        first, *others = parts = self._parts()
        await parts[first].load_state(state_entry(state, owner, self._state_type, first))
        for key in others:
            entry = state.get(key)
            if isinstance(entry, Mapping):
                await parts[key].load_state(entry)
