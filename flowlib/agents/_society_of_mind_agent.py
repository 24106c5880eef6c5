"""An agent whose thinking is a whole team, summed up by a model into one answer."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict
from typing_extensions import Self

from ..base import CancellationToken, Response, TaskResult, Team
from ..base.internal import task_messages
from ..component import ComponentModel, dump_field, load_field
from ..component.internal import register_builtin
from ..errors import ContractError, InvalidTypeError
from ..messages import (
    BaseAgentEvent,
    BaseChatMessage,
    HandoffMessage,
    ModelClientStreamingChunkEvent,
    TextMessage,
)
from ..model_context import ChatCompletionContext, UnboundedChatCompletionContext
from ..models import AssistantMessage, ChatCompletionClient, LLMMessage, SystemMessage, UserMessage
from ._base_chat_agent import PartsStateAgent

__all__ = ["SocietyOfMindAgent"]

NO_RESPONSE = "No response."
"""The reply when the inner team published no chat message (the model is not called)."""
PREVIOUS_MESSAGES = "relevant previous messages"
"""Content of the ``HandoffMessage`` that carries earlier context into the inner team."""


class SocietyOfMindAgent(PartsStateAgent):
    """Runs an inner team on the new messages, then has a model write one standalone answer.

    Each call:

    1. runs ``team`` with the new messages as its task, streaming the team's events and
       messages (a consumer of ``on_messages_stream``/``run_stream`` sees them; the
       ``Response`` does not carry them, as in AutoGen: they are the inner team's, not
       this agent's answer to the outer world). When the model context already holds
       earlier messages (preloaded, or from earlier calls), they go first, as the
       ``context`` of a ``HandoffMessage(content="relevant previous messages",
       target="")`` from this agent, so the freshly reset team knows the conversation;
    2. adds the new messages to the model context;
    3. asks the model with ``[SystemMessage(instruction), *model context,
       *the inner team's chat messages, SystemMessage(response_prompt)]``: the model
       context supplies the original request (and earlier turns, limited by the
       context's view, e.g. ``BufferedChatCompletionContext``); each inner chat message
       becomes a ``UserMessage`` from its sender. If the client's ``model_info`` says
       ``multiple_system_messages=False``, the response prompt is sent as a
       ``UserMessage`` instead. If the team published no chat message the reply is
       ``"No response."`` and the model is not called;
    4. replies with the model's text as a ``TextMessage`` and adds it to the context;
    5. resets the inner team (also when the call fails or is cancelled), so every call
       starts it afresh.

    Args:
        name: The agent's name.
        team: The inner team (any flowlib team, e.g. a ``GraphFlow``).
        model_client: Writes the final answer.
        description: Defaults to
            [`DEFAULT_DESCRIPTION`][flowlib.agents.SocietyOfMindAgent.DEFAULT_DESCRIPTION].
        instruction: System prompt before the transcript;
            [`DEFAULT_INSTRUCTION`][flowlib.agents.SocietyOfMindAgent.DEFAULT_INSTRUCTION].
        response_prompt: System prompt after the transcript;
            [`DEFAULT_RESPONSE_PROMPT`][flowlib.agents.SocietyOfMindAgent.DEFAULT_RESPONSE_PROMPT].
        model_context: Keeps the outer conversation; defaults to an unbounded one. It may
            be preloaded; [`on_reset`][flowlib.agents.SocietyOfMindAgent.on_reset] clears it.

    Raises:
        TypeError: If ``team`` is not a Team.

    Examples:
        >>> import asyncio
        >>> from flowlib.models import ReplayChatCompletionClient
        >>> from flowlib.teams import DiGraphBuilder, GraphFlow
        >>> def writer(messages): return "Once upon a time, the end."
        >>> def editor(messages): return "APPROVE"
        >>> builder = DiGraphBuilder().add_node(writer).add_node(editor)
        >>> graph = builder.add_edge("writer", "editor").build()
        >>> inner = GraphFlow(builder.get_participants(), graph)
        >>> model = ReplayChatCompletionClient(["A very short story."])
        >>> agent = SocietyOfMindAgent("society_of_mind", team=inner, model_client=model)
        >>> result = asyncio.run(agent.run(task="Write a story."))
        >>> [m.to_text() for m in result.messages]  # the task and the final response
        ['Write a story.', 'A very short story.']
    """

    DEFAULT_INSTRUCTION = (
        "Earlier you were asked to fulfill a request. You and your team worked diligently to "
        "address that request. Here is a transcript of that conversation:"
    )
    """The system prompt placed before the transcript."""
    DEFAULT_RESPONSE_PROMPT = (
        "Output a standalone response to the original request, without mentioning any of the "
        "intermediate discussion."
    )
    """The system prompt placed after the transcript."""
    DEFAULT_DESCRIPTION = "An agent that uses an inner team of agents to generate responses."
    """The default description."""

    def __init__(
        self,
        name: str,
        team: Team,
        model_client: ChatCompletionClient,
        *,
        description: str = DEFAULT_DESCRIPTION,
        instruction: str = DEFAULT_INSTRUCTION,
        response_prompt: str = DEFAULT_RESPONSE_PROMPT,
        model_context: ChatCompletionContext | None = None,
    ) -> None:
        super().__init__(name, description)
        if not isinstance(team, Team):
            raise InvalidTypeError(
                f"SocietyOfMindAgent `{name}` needs a Team (e.g. a GraphFlow) as its inner "
                f"team, not {type(team).__name__}."
            )
        self._team = team
        self._model_client = model_client
        self._instruction = instruction
        self._response_prompt = response_prompt
        self._model_context = model_context or UnboundedChatCompletionContext()

    @property
    def team(self) -> Team:
        """The inner team."""
        return self._team

    # --- the component protocol ---------------------------------------------------------

    component_config_schema: ClassVar[type[BaseModel]]  # set below the class

    def _to_config(self) -> SocietyOfMindAgentConfig:
        return SocietyOfMindAgentConfig(
            name=self.name,
            team=dump_field(self._team, "team"),
            model_client=dump_field(self._model_client, "model_client"),
            description=self.description,
            instruction=self._instruction,
            response_prompt=self._response_prompt,
            model_context=dump_field(self._model_context, "model_context"),
        )

    @classmethod
    def _from_config(cls, config: SocietyOfMindAgentConfig) -> Self:
        team = load_field(config.team, "team", Team)
        client = load_field(config.model_client, "model_client", ChatCompletionClient)
        context = load_field(config.model_context, "model_context", ChatCompletionContext)
        return cls(
            config.name,
            team,
            client,
            description=config.description,
            instruction=config.instruction,
            response_prompt=config.response_prompt,
            model_context=context,
        )

    async def on_messages_stream(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Response, None]:
        """Like [`on_messages`][flowlib.agents.SocietyOfMindAgent.on_messages], yielding the inner
        team's events and messages first."""
        task: list[BaseChatMessage] = list(messages)
        previous = await self._model_context.get_messages()
        if previous:
            task.insert(
                0,
                HandoffMessage(
                    content=PREVIOUS_MESSAGES, target="", context=previous, source=self.name
                ),
            )
        inner: list[BaseAgentEvent | BaseChatMessage] = []
        try:
            result: TaskResult | None = None
            stream = self._team.run_stream(
                task=task, cancellation_token=cancellation_token, output_task_messages=False
            )
            async with contextlib.aclosing(stream):
                async for item in stream:
                    if isinstance(item, TaskResult):
                        result = item
                        continue
                    if not isinstance(item, ModelClientStreamingChunkEvent):
                        inner.append(item)
                    yield item
            assert result is not None  # a team's stream always ends with a TaskResult
            await self._remember(messages)
            transcript = [m.to_model_message() for m in inner if isinstance(m, BaseChatMessage)]
            if not transcript:
                reply = TextMessage(content=NO_RESPONSE, source=self.name)
            else:
                completion = await self._model_client.create(
                    await self._request(transcript), cancellation_token=cancellation_token
                )
                if not isinstance(completion.content, str):
                    raise ContractError(
                        f"SocietyOfMindAgent `{self.name}`: the model answered with tool "
                        "calls; it must answer in text."
                    )
                reply = TextMessage(
                    content=completion.content, source=self.name, models_usage=completion.usage
                )
            await self._model_context.add_message(
                AssistantMessage(content=reply.content, source=self.name)
            )
        finally:
            await self._team.reset()
        # As AutoGen's: the inner team's messages were streamed, but the Response (what an
        # outer team's termination condition and run() see) holds only the answer.
        yield Response(chat_message=reply, inner_messages=[])

    async def run(
        self,
        *,
        task: str | BaseChatMessage | Sequence[BaseChatMessage] | None = None,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
    ) -> TaskResult:
        """Run one step on ``task``; return the task and the final response, as AutoGen's
        ``SocietyOfMindAgent.run()`` does (the inner team's messages are not included; use
        [`run_stream`][flowlib.agents.BaseChatAgent.run_stream] to see them).

        Args:
            task: A string, a chat message or a list of them.
            cancellation_token: Cancels the step; the await raises ``CancelledError``.
            output_task_messages: Whether the task messages start ``TaskResult.messages``.
        """
        incoming = task_messages(task)
        response = await self.on_messages(incoming, cancellation_token or CancellationToken())
        kept: list[BaseAgentEvent | BaseChatMessage] = (
            list(incoming) if output_task_messages else []
        )
        kept.extend(response.inner_messages or ())
        kept.append(response.chat_message)
        return TaskResult(messages=kept, stop_reason=None)

    async def _request(self, transcript: list[UserMessage]) -> list[LLMMessage]:
        """Build the final model request (see the class docstring)."""
        closing: LLMMessage = SystemMessage(content=self._response_prompt)
        if self._model_client.model_info.get("multiple_system_messages") is False:
            closing = UserMessage(content=self._response_prompt, source="user")
        return [
            SystemMessage(content=self._instruction),
            *await self._model_context.get_messages(),
            *transcript,
            closing,
        ]

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        """Reset the inner team and clear the model context (preloaded messages too)."""
        await self._team.reset()
        await self._model_context.clear()

    async def on_pause(self, cancellation_token: CancellationToken) -> None:
        """Pause the inner team."""
        await self._team.pause()

    async def on_resume(self, cancellation_token: CancellationToken) -> None:
        """Resume the inner team."""
        await self._team.resume()

    _state_type = "SocietyOfMindAgentState"

    def _parts(self) -> dict[str, Any]:
        # The inner team first: a state without it is not this agent's.
        return {"inner_team_state": self._team, "llm_context": self._model_context}


class SocietyOfMindAgentConfig(BaseModel):
    """The config of [`SocietyOfMindAgent`][flowlib.agents.SocietyOfMindAgent]."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    name: str
    team: ComponentModel
    model_client: ComponentModel
    description: str = SocietyOfMindAgent.DEFAULT_DESCRIPTION
    instruction: str = SocietyOfMindAgent.DEFAULT_INSTRUCTION
    response_prompt: str = SocietyOfMindAgent.DEFAULT_RESPONSE_PROMPT
    model_context: ComponentModel | None = None


SocietyOfMindAgent.component_config_schema = SocietyOfMindAgentConfig


register_builtin(SocietyOfMindAgent, autogen="autogen_agentchat.agents")
