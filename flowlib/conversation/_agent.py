"""``Agent``: the conversation API (``ask`` / ``run``) over flowlib's agents and teams."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..base import ChatAgent, Team
from ..base.internal import task_messages
from ..errors import InvalidTypeError
from ..memory import Memory
from ..messages import BaseChatMessage
from ..models import ChatCompletionClient
from ..tools import Tool, as_tool
from ._backends import AssistantBackend, Backend, WrappedBackend
from ._run import AgentReply, AgentRun
from ._stream import MemoryStream
from ._turn import HumanInputHandler

__all__ = ["DEFAULT_SYSTEM_MESSAGE", "Agent"]

DEFAULT_SYSTEM_MESSAGE = "You are a helpful assistant."

_Message = str | BaseChatMessage | Sequence[BaseChatMessage]


class Agent:
    """An agent you talk to: ``ask`` starts a conversation, ``reply.ask`` continues it.

    ``Agent(name, model_client, ...)`` is backed by flowlib's ``AssistantAgent``: it
    calls tools until the model answers in text (after ``max_tool_iterations`` rounds of
    tool calls, one more model call without tools makes it answer). Wrap an agent or a
    team you already have with [`from_chat_agent`][flowlib.conversation.Agent.from_chat_agent] /
    [`from_team`][flowlib.conversation.Agent.from_team].

    Every ``ask`` / ``run`` on the agent starts a *new* conversation; the reply's
    ``ask`` / ``run`` continue that one (see [`AgentReply`][flowlib.conversation.AgentReply]).

    Args:
        name: The agent's name (a Python identifier).
        model_client: The model to call.
        system_message: Sent first at each model call; ``None`` sends none.
        tools: ``@tool``-decorated functions, other flowlib tools, or plain (sync or
            async) functions. Inside a tool, ``ask_human`` asks the human.
        streaming: Stream the model's answer as ``ModelMessageChunk`` events.
        human_input: Answers ``HumanInputRequest`` events; a sync or async function
            taking the request and returning the answer. Without it, asking a human
            fails the turn with ``HumanInputRequiredError``.
        description: What the agent does.
        max_tool_iterations: How many rounds of tool calls one turn may make (>= 1).
        memory: flowlib memories applied to the model context before each model call.

    Raises:
        ValueError: As ``AssistantAgent`` does for invalid options (a bad name, tools for
            a model without function calling, ``max_tool_iterations < 1``, ...).

    Examples:
        >>> import asyncio
        >>> from flowlib.models import ReplayChatCompletionClient
        >>> client = ReplayChatCompletionClient(["Paris.", "About 2.1 million."])
        >>> agent = Agent("assistant", client)
        >>> async def main():
        ...     reply = await agent.ask("What is the capital of France?")
        ...     follow_up = await reply.ask("How many people live there?")
        ...     return reply.body, follow_up.body
        >>> asyncio.run(main())
        ('Paris.', 'About 2.1 million.')
    """

    _backend: Backend
    _human_input: HumanInputHandler | None

    def __init__(
        self,
        name: str,
        model_client: ChatCompletionClient,
        *,
        system_message: str | None = DEFAULT_SYSTEM_MESSAGE,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        streaming: bool = False,
        human_input: HumanInputHandler | None = None,
        description: str = "A conversational agent.",
        max_tool_iterations: int = 10,
        memory: Sequence[Memory] | None = None,
    ) -> None:
        backend = AssistantBackend(
            name,
            model_client,
            system_message=system_message,
            tools=[as_tool(item) for item in tools],
            streaming=streaming,
            description=description,
            max_tool_iterations=max_tool_iterations,
            memory=memory,
        )
        self._setup(backend, human_input)

    def _setup(self, backend: Backend, human_input: HumanInputHandler | None) -> None:
        if human_input is not None and not callable(human_input):
            raise InvalidTypeError(
                f"Agent `{backend.name}`: human_input must be a function taking a "
                f"HumanInputRequest and returning the answer, not {type(human_input).__name__}."
            )
        self._backend = backend
        self._human_input = human_input

    @classmethod
    def from_chat_agent(
        cls, agent: ChatAgent, *, human_input: HumanInputHandler | None = None
    ) -> Agent:
        """Talk to an existing flowlib agent (``AssistantAgent``, ``UserProxyAgent``, ...).

        The agent object is shared by all conversations, so their turns run one at a
        time; each turn loads its conversation's state into it first (a new
        conversation: the agent's state from before its first turn) and saves it after.
        A message enqueued while such a turn runs waits for the next turn: flowlib has
        no hook into another agent's model calls.

        Args:
            agent: The agent; it should not be used elsewhere meanwhile.
            human_input: As for [`Agent`][flowlib.conversation.Agent]. Tools of the agent can call
                ``ask_human``.

        Raises:
            TypeError: If ``agent`` is not a flowlib ``ChatAgent``.
        """
        if not isinstance(agent, ChatAgent):
            raise InvalidTypeError(
                f"Agent.from_chat_agent() takes a flowlib ChatAgent, not "
                f"{type(agent).__name__}; for a team use Agent.from_team()."
            )
        wrapper = cls.__new__(cls)
        cls._setup(wrapper, WrappedBackend(agent), human_input)
        return wrapper

    @classmethod
    def from_team(cls, team: Team, *, human_input: HumanInputHandler | None = None) -> Agent:
        """Talk to a flowlib team: each turn is one ``team.run(task=...)``.

        As with [`from_chat_agent`][flowlib.conversation.Agent.from_chat_agent], turns run one at a
        time, each from its conversation's saved team state. The reply's ``response`` is the team's
        last message. ``UserProxyAgent(input_func=ask_human)`` inside the team asks the
        human through ``human_input``.

        Raises:
            TypeError: If ``team`` is not a flowlib ``Team``.
        """
        if not isinstance(team, Team):
            raise InvalidTypeError(
                f"Agent.from_team() takes a flowlib Team, not {type(team).__name__}; for "
                "an agent use Agent.from_chat_agent()."
            )
        wrapper = cls.__new__(cls)
        cls._setup(wrapper, WrappedBackend(team), human_input)
        return wrapper

    @property
    def name(self) -> str:
        """The agent's (or wrapped team's) name."""
        return self._backend.name

    @property
    def description(self) -> str:
        """What the agent does."""
        return self._backend.description

    @property
    def wrapped(self) -> ChatAgent | Team | None:
        """The agent or team given to ``from_chat_agent`` / ``from_team``, else ``None``."""
        return self._backend.target if isinstance(self._backend, WrappedBackend) else None

    async def ask(self, message: _Message, *, stream: MemoryStream | None = None) -> AgentReply:
        """Start a new conversation: run its first turn and return the reply.

        Exactly ``run(message, stream=stream)`` + ``await result()``.

        Args:
            message: A string (a user ``TextMessage``), a chat message or a list of them.
            stream: The conversation's event stream; a new
                [`MemoryStream`][flowlib.conversation.MemoryStream] if ``None``. Its subscribers see
                every event of the conversation.

        Raises:
            Exception: Whatever made the turn fail.
        """
        async with self.run(message, stream=stream) as run:
            return await run.result()

    def run(self, message: _Message, *, stream: MemoryStream | None = None) -> AgentRun:
        """Open the first turn of a new conversation, to watch and drive.

        Args:
            message: As for [`ask`][flowlib.conversation.Agent.ask].
            stream: As for [`ask`][flowlib.conversation.Agent.ask].

        Returns:
            An [`AgentRun`][flowlib.conversation.AgentRun]; use it as
            ``async with agent.run(...) as run:``.
        """
        return self._open_run(message, state=None, stream=stream)

    def _open_run(
        self,
        message: _Message,
        *,
        state: Mapping[str, Any] | None,
        stream: MemoryStream | None,
    ) -> AgentRun:
        if message is None:
            raise InvalidTypeError(
                "A turn needs a message: a str, a chat message or a list of them."
            )
        messages = task_messages(message)
        return AgentRun(
            self,
            messages,
            state=state,
            stream=stream if stream is not None else MemoryStream(),
            backend=self._backend,
            human_input=self._human_input,
            open_run=self._next_run,
        )

    def _next_run(
        self, message: _Message, state: Mapping[str, Any] | None, stream: MemoryStream | None
    ) -> AgentRun:
        return self._open_run(message, state=state, stream=stream)

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r})"
