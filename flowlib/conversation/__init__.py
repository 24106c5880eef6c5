"""The conversation API of seed 000 (AG2's "Agents" page), over flowlib's agents and teams.

``await agent.ask(...)`` starts a conversation and returns an
[`AgentReply`][flowlib.conversation.AgentReply]; ``await reply.ask(...)`` continues it.
``agent.run(...)`` / ``reply.run(...)`` return an [`AgentRun`][flowlib.conversation.AgentRun] to
watch a turn live (``run.start()``, ``run.stream.join()``, ``await run.result()``) and steer it
(``run.enqueue(...)``). A [`MemoryStream`][flowlib.conversation.MemoryStream] keeps a conversation's
events for subscribers; tools ask a human with [`ask_human`][flowlib.conversation.ask_human],
answered by the agent's ``human_input`` handler.

Examples:
    >>> import asyncio
    >>> from flowlib.models import ReplayChatCompletionClient
    >>> agent = Agent("assistant", ReplayChatCompletionClient(["Hello!"]))
    >>> asyncio.run(agent.ask("Hi")).body
    'Hello!'
"""

from ._agent import DEFAULT_SYSTEM_MESSAGE, Agent
from ._errors import ConversationError, HumanInputRequiredError, TurnCancelledError
from ._events import (
    CONVERSATION_EVENT_TYPES,
    Event,
    HumanInputRequest,
    HumanInputResponse,
    ModelMessageChunk,
    ReplyEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from ._human import ask_human, ask_human_sync
from ._run import AgentReply, AgentRun
from ._stream import EventIterator, MemoryStream, RunStream, Subscriber
from ._turn import HumanInputHandler

__all__ = [  # noqa: RUF022  (plain sorted order, checked by tests)
    "Agent",
    "AgentReply",
    "AgentRun",
    "CONVERSATION_EVENT_TYPES",
    "ConversationError",
    "DEFAULT_SYSTEM_MESSAGE",
    "Event",
    "EventIterator",
    "HumanInputHandler",
    "HumanInputRequest",
    "HumanInputRequiredError",
    "HumanInputResponse",
    "MemoryStream",
    "ModelMessageChunk",
    "ReplyEvent",
    "RunStream",
    "Subscriber",
    "ToolCallEvent",
    "ToolResultEvent",
    "TurnCancelledError",
    "ask_human",
    "ask_human_sync",
]
