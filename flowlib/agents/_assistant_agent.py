"""AssistantAgent: a model-backed agent that can call tools and hand off."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError
from typing_extensions import Self

from .._english import a
from ..base import CancellationToken, Handoff, Response
from ..base.internal import check_state_argument, parsed_state
from ..checkpoint import Journal, StateChange, diff_state, json_state, patch_of, state_change
from ..component import (
    ComponentModel,
    dump_field,
    dump_fields,
    load_error,
    load_field,
    load_fields,
    loading_at,
    refuse_field,
    skip_field,
)
from ..component.internal import register_builtin
from ..errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    InvalidValueError,
    StateError,
)
from ..memory import Memory, UpdateContextResult
from ..messages import (
    BaseAgentEvent,
    BaseChatMessage,
    HandoffMessage,
    MemoryQueryEvent,
    ModelClientStreamingChunkEvent,
    StructuredMessage,
    TextMessage,
    ThoughtEvent,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    ToolCallSummaryMessage,
)
from ..model_context import (
    BufferedChatCompletionContext,
    ChatCompletionContext,
    ChatCompletionContextState,
    HeadAndTailChatCompletionContext,
    TokenLimitedChatCompletionContext,
    UnboundedChatCompletionContext,
)
from ..model_context.internal import RollbackPoint
from ..models import (
    AssistantMessage,
    ChatCompletionClient,
    CreateResult,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from ..tools import BaseTool, Tool, Workbench
from ..tools.internal import as_workbenches, workbench_tools
from ._base_chat_agent import ModelBackedAgent
from ._streaming import stream_events
from ._tool_calls import (
    DEFAULT_MAX_TOOL_CALLS,
    SummaryFormatter,
    ToolInput,
    build_handoffs,
    build_tools,
    handoff_context,
    run_linked,
    run_tool_calls,
    summarize,
)

__all__ = ["AssistantAgent", "AssistantAgentState"]

DEFAULT_DESCRIPTION = "An agent that provides assistance with ability to use tools."
DEFAULT_SYSTEM_MESSAGE = (
    "You are a helpful AI assistant. Solve tasks using your tools. Reply with TERMINATE "
    "when the task has been completed."
)
_IMAGE_PLACEHOLDER = "[image]"

_Item = BaseAgentEvent | BaseChatMessage


class AssistantAgentState(BaseModel):
    """What [`AssistantAgent.save_state`][flowlib.agents.AssistantAgent.save_state] returns: the
    model context's state."""

    type: Literal["AssistantAgentState"] = "AssistantAgentState"
    version: str = "1.0.0"
    llm_context: dict[str, Any]


_EMPTY_STATE = AssistantAgentState(llm_context={}).model_dump(mode="json")


@dataclass
class _Inference:
    """A finished model call and the id given to the message it produces."""

    result: CreateResult
    message_id: str


# AutoGen wraps an agent's tools in a StaticWorkbench; flowlib reads its tools back.
_STATIC_WORKBENCH = frozenset({"autogen_core.tools.StaticWorkbench", "StaticWorkbench"})


class AssistantAgentConfig(BaseModel):
    """The config of [`AssistantAgent`][flowlib.agents.AssistantAgent] (AutoGen's shape)."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    name: str
    model_client: ComponentModel
    tools: list[ComponentModel] | None = None
    workbench: list[ComponentModel] | None = None
    handoffs: list[Handoff | str] | None = None
    model_context: ComponentModel | None = None
    memory: list[ComponentModel] | None = None
    description: str = DEFAULT_DESCRIPTION
    system_message: str | None = None
    model_client_stream: bool = False
    reflect_on_tool_use: bool = False
    tool_call_summary_format: str = "{result}"
    max_tool_iterations: int = 1
    max_tool_calls: int | None = None
    metadata: dict[str, str] | None = None
    output_content_type_format: str | None = None
    structured_message_factory: ComponentModel | None = None


# The fields of an AssistantAgentConfig that `_from_config` builds or converts itself.
_BUILT_FROM_CONFIG = {
    "name",
    "model_client",
    "tools",
    "workbench",
    "handoffs",
    "model_context",
    "memory",
    "max_tool_calls",
    "structured_message_factory",
}


class AssistantAgent(ModelBackedAgent):
    """An agent that answers with a model and can call tools and hand off.

    Each call adds the new messages to the model context, applies the memories, then
    calls the model (with the system message prepended). A text answer is returned at
    once, as a ``TextMessage`` (or ``StructuredMessage`` with ``output_content_type``).
    Tool calls are run concurrently and their results added to the context; the model is
    called again, up to ``max_tool_iterations`` times, while it keeps calling tools. Then
    the agent either reflects (one more model call, without tools) or returns a
    ``ToolCallSummaryMessage``. A handoff call ends the turn with a ``HandoffMessage``
    once the other calls of the same answer have run.

    Memories write into the model context, as the documents say (``ListMemory`` appends
    a system message on every call, and it stays in the history). A handoff's ``context``
    holds every non-handoff tool call of the call that hands off, with its result.

    A failing tool never raises out of the agent: its result is marked ``is_error=True``
    and says what went wrong. If the turn itself fails (the model raises, the turn is
    cancelled), the model context is restored to what it was before the call, so the
    agent can simply be called again. The agent is stateful (pass only new messages) and
    not safe to call concurrently.

    Args:
        name: The agent's name.
        model_client: The model to call.
        tools: Tools, or plain sync / async functions (wrapped in ``FunctionTool``:
            named after the function, described by its docstring).
        workbench: A [`Workbench`][flowlib.tools.Workbench] (``StaticWorkbench``,
            ``McpWorkbench``, ...) or a list of them, instead of ``tools``: their tools are
            listed at the start of every turn and each call goes to the workbench that
            listed the tool. The agent does not start or stop them (a workbench that needs
            a connection opens it on first use).
        handoffs: ``Handoff`` objects or target names; each becomes a tool
            ``transfer_to_<target>``.
        model_context: Stores the conversation; an ``UnboundedChatCompletionContext`` by
            default. It may be preloaded; [`on_reset`][flowlib.agents.AssistantAgent.on_reset]
            clears it.
        description: What the agent does, for teams choosing speakers.
        system_message: Prepended to the context at each model call; ``None`` disables it.
        model_client_stream: Stream the model's tokens as
            ``ModelClientStreamingChunkEvent``s (not kept in ``inner_messages``).
        reflect_on_tool_use: Make one more model call on the tool results instead of
            returning a summary. Defaults to ``True`` iff ``output_content_type`` is set.
        max_tool_iterations: How many model calls may request tools in one turn (>= 1).
        max_tool_calls: How many tool calls of one model reply are run
            ([`DEFAULT_MAX_TOOL_CALLS`][flowlib.agents.DEFAULT_MAX_TOOL_CALLS], 100); the
            calls past it are not run and get an error result naming the limit, so a
            reply of 20,000 calls costs no more than 100.
        tool_call_summary_format: Template per tool result, joined with newlines; fields
            ``{tool_name}``, ``{arguments}``, ``{result}``, ``{is_error}``.
        tool_call_summary_formatter: ``(call, result) -> str`` per tool call; overrides
            ``tool_call_summary_format``.
        output_content_type: A pydantic model: the model is asked for it (structured
            output) and the final answer is a ``StructuredMessage`` of it.
        output_content_type_format: (Experimental) ``format_string`` of that message.
        memory: Memories whose ``update_context`` runs on the context before inference.
        metadata: Attached to every chat message the agent produces.

    Raises:
        ValueError: If tool names or handoff names repeat, a handoff is named like a tool,
            ``max_tool_iterations < 1``, tools or handoffs are given to a model without
            function calling, or both ``tools`` and ``workbench`` are given.
        TypeError: If a tool or handoff has the wrong type, or ``output_content_type``
            is not a pydantic model class.

    Examples:
        >>> import asyncio
        >>> from flowlib.models import ReplayChatCompletionClient
        >>> client = ReplayChatCompletionClient(["Paris."])
        >>> agent = AssistantAgent("assistant", model_client=client)
        >>> result = asyncio.run(agent.run(task="What is the capital of France?"))
        >>> [message.to_text() for message in result.messages]
        ['What is the capital of France?', 'Paris.']
    """

    def __init__(
        self,
        name: str,
        model_client: ChatCompletionClient,
        *,
        tools: Sequence[ToolInput] | None = None,
        workbench: Workbench | Sequence[Workbench] | None = None,
        handoffs: Sequence[Handoff | str] | None = None,
        model_context: ChatCompletionContext | None = None,
        description: str = DEFAULT_DESCRIPTION,
        system_message: str | None = DEFAULT_SYSTEM_MESSAGE,
        model_client_stream: bool = False,
        reflect_on_tool_use: bool | None = None,
        max_tool_iterations: int = 1,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        tool_call_summary_format: str = "{result}",
        tool_call_summary_formatter: SummaryFormatter | None = None,
        output_content_type: type[BaseModel] | None = None,
        output_content_type_format: str | None = None,
        memory: Sequence[Memory] | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(name, description)
        self._workbenches = as_workbenches(name, workbench, tools)
        memories = _memories(name, memory)
        if max_tool_iterations < 1:
            raise InvalidArgumentError(
                f"Agent `{name}`: max_tool_iterations must be at least 1, got "
                f"{max_tool_iterations}.",
                argument="max_tool_iterations",
            )
        if isinstance(max_tool_calls, bool) or not isinstance(max_tool_calls, int):
            raise ArgumentTypeError(
                f"Agent `{name}`: max_tool_calls must be an int, not {max_tool_calls!r}.",
                argument="max_tool_calls",
            )
        if max_tool_calls < 1:
            raise InvalidArgumentError(
                f"Agent `{name}`: max_tool_calls must be at least 1, got {max_tool_calls}.",
                argument="max_tool_calls",
            )
        if output_content_type is not None and not (
            isinstance(output_content_type, type) and issubclass(output_content_type, BaseModel)
        ):
            raise ArgumentTypeError(
                f"Agent `{name}`: output_content_type must be a pydantic BaseModel subclass, "
                f"not {output_content_type!r}.",
                argument="output_content_type",
            )
        self._tools = build_tools(name, tools or ())
        self._handoffs = build_handoffs(name, handoffs or (), {tool.name for tool in self._tools})
        if (self._tools or self._handoffs or self._workbenches) and not model_client.model_info.get(
            "function_calling", False
        ):
            given = "handoffs" if self._handoffs and not self._tools else "tools"
            raise InvalidArgumentError(
                f"Agent `{name}`: the model does not support function calling "
                f"(model_info['function_calling'] is False), so it cannot use {given}. "
                "Use a model that supports function calling, or remove them.",
                argument=given,
            )
        handoff_tools: list[Tool] = [handoff.handoff_tool for handoff in self._handoffs.values()]
        self._model_tools: list[Tool] = [*self._tools, *handoff_tools]
        self._tools_by_name: dict[str, Tool] = {tool.name: tool for tool in self._model_tools}
        self._model_client = model_client
        self._model_context = (
            model_context if model_context is not None else UnboundedChatCompletionContext()
        )
        self._system_messages: list[LLMMessage] = (
            [] if system_message is None else [SystemMessage(content=system_message)]
        )
        self._model_client_stream = model_client_stream
        self._reflect_on_tool_use = (
            output_content_type is not None if reflect_on_tool_use is None else reflect_on_tool_use
        )
        self._max_tool_iterations = max_tool_iterations
        self._max_tool_calls = max_tool_calls
        self._tool_call_summary_format = tool_call_summary_format
        self._tool_call_summary_formatter = tool_call_summary_formatter
        self._output_content_type = output_content_type
        self._output_content_type_format = output_content_type_format
        self._memory = memories
        self._metadata = dict(metadata or {})
        # Where the context stood before a turn that has not finished yet, and a turn
        # counter: together they make each turn all-or-nothing (see on_messages_stream).
        self._open_turn: RollbackPoint | Mapping[str, Any] | None = None
        self._turns_started = 0
        self._journal = Journal()  # what save_state_since returned last

    # --- properties ---------------------------------------------------------------------

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        """The final answer type, plus the summary and handoff messages when they can occur."""
        types: list[type[BaseChatMessage]] = [
            TextMessage
            if self._output_content_type is None
            else StructuredMessage[self._output_content_type]  # type: ignore[name-defined]
        ]
        if self._tools or self._workbenches:
            types.append(ToolCallSummaryMessage)
        if self._handoffs:
            types.append(HandoffMessage)
        return tuple(types)

    @property
    def model_client(self) -> ChatCompletionClient:
        """The model client the agent calls."""
        return self._model_client

    @property
    def tools(self) -> list[Tool]:
        """The tools given to the agent (handoff tools excluded)."""
        return list(self._tools)

    @property
    def handoffs(self) -> dict[str, Handoff]:
        """The agent's handoffs, by tool name."""
        return dict(self._handoffs)

    @property
    def system_message(self) -> str | None:
        """The system message, or ``None``."""
        if not self._system_messages:
            return None
        content = self._system_messages[0].content
        assert isinstance(content, str)
        return content

    # --- the component protocol ---------------------------------------------------------

    component_config_schema: ClassVar[type[BaseModel]] = AssistantAgentConfig
    component_code_fields: ClassVar[Mapping[str, str]] = {
        "structured_message_factory": "give structured output (`output_content_type`) in code"
    }

    def _to_config(self) -> AssistantAgentConfig:
        if self._output_content_type is not None:
            refuse_field(
                "output_content_type",
                f"`{self.name}` answers with the pydantic class "
                f"{self._output_content_type.__qualname__}, which a config cannot hold "
                "(AutoGen blocks this dump too). Build this agent in code.",
            )
        if self._tool_call_summary_formatter is not None:
            skip_field(
                "tool_call_summary_formatter",
                "it is a Python callable (documented as ignored by configs); the loaded agent "
                "formats summaries with tool_call_summary_format.",
            )
        return AssistantAgentConfig(
            name=self.name,
            model_client=dump_field(self._model_client, "model_client"),
            tools=dump_fields(list(self._tools), "tools") or None,
            handoffs=list(self._handoffs.values()) or None,
            model_context=dump_field(self._model_context, "model_context"),
            memory=dump_fields(list(self._memory), "memory") or None,
            description=self.description,
            system_message=self.system_message,
            model_client_stream=self._model_client_stream,
            reflect_on_tool_use=self._reflect_on_tool_use,
            tool_call_summary_format=self._tool_call_summary_format,
            max_tool_iterations=self._max_tool_iterations,
            max_tool_calls=(
                None if self._max_tool_calls == DEFAULT_MAX_TOOL_CALLS else self._max_tool_calls
            ),
            metadata=dict(self._metadata) or None,
            output_content_type_format=self._output_content_type_format,
        )

    @classmethod
    def _from_config(cls, config: AssistantAgentConfig) -> Self:
        client = load_field(config.model_client, "model_client", ChatCompletionClient)
        tools = load_fields(config.tools or [], "tools", BaseTool)
        for index, workbench in enumerate(config.workbench or ()):
            if workbench.provider not in _STATIC_WORKBENCH:
                raise load_error(
                    f"workbench `{workbench.provider}` is not supported; flowlib agents take "
                    "tools directly (`tools=[...]`).",
                    f"workbench[{index}]",
                )
            with loading_at(f"workbench[{index}]"):
                tools += load_fields(workbench.config.get("tools") or [], "tools", BaseTool)
        context = load_field(config.model_context, "model_context", ChatCompletionContext)
        memory = load_fields(config.memory or [], "memory", Memory)
        # The other fields are the constructor's plain options, under the same names.
        options = config.model_dump(exclude=_BUILT_FROM_CONFIG)
        return cls(
            config.name,
            client,
            tools=tools or None,
            handoffs=config.handoffs,
            model_context=context,
            max_tool_calls=(
                DEFAULT_MAX_TOOL_CALLS if config.max_tool_calls is None else config.max_tool_calls
            ),
            memory=memory or None,
            **options,
        )

    # --- the turn -----------------------------------------------------------------------

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        """Handle the new messages and return the final response.

        Raises:
            asyncio.CancelledError: If ``cancellation_token`` is cancelled.
            Exception: What the model client raises (the context is left unchanged).
        """
        return await self._drain(messages, cancellation_token)

    async def on_messages_stream(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Response, None]:
        """Handle the new messages, yielding events (and chunks) as they happen, then the
        Response.

        The turn is all-or-nothing for the model context: if it raises, is cancelled, or
        its stream is abandoned before the Response, the context is restored to its state
        before the call (an abandoned stream is undone at the latest when the next call
        starts, since Python may close it only later).
        """
        if self._open_turn is not None:
            await self._restore(self._open_turn)
        # A rollback point, not save_state(): the turn must not cost a copy (let alone a
        # serialisation) of the whole history, or turns grow with the conversation.
        snapshot = await self._mark()
        self._open_turn = snapshot
        self._turns_started += 1
        turn = self._turns_started
        try:
            async with aclosing(self._turn(messages, cancellation_token)) as items:
                async for item in items:
                    if isinstance(item, Response) and turn == self._turns_started:
                        self._open_turn = None
                    yield item
        finally:
            # A stale turn (a later call, reset or load_state came first) must not undo
            # what happened since.
            if turn == self._turns_started and self._open_turn is not None:
                self._open_turn = None
                await self._restore(snapshot)

    async def _mark(self) -> RollbackPoint | Mapping[str, Any]:
        """A point the context can be restored to: O(1) for a ``ChatCompletionContext``,
        its saved state for any other object used as one."""
        context = self._model_context
        if isinstance(context, ChatCompletionContext):
            return context._rollback_point()
        return await context.save_state()

    async def _restore(self, point: RollbackPoint | Mapping[str, Any]) -> None:
        if isinstance(point, RollbackPoint):
            self._model_context._roll_back(point)
        else:
            await self._model_context.load_state(point)

    async def _turn(
        self, messages: Sequence[BaseChatMessage], token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Response, None]:
        await self._remember(messages)

        inner: list[_Item] = []
        for memory in self._memory:
            update: UpdateContextResult | None = await memory.update_context(self._model_context)
            # None (a custom memory that returns nothing) means nothing was added, as in
            # AutoGen, which only reads the result when there is one.
            if update is not None and update.memories.results:
                event = MemoryQueryEvent(content=list(update.memories.results), source=self.name)
                inner.append(event)
                yield event

        steps: list[tuple[AssistantMessage, list[FunctionExecutionResult]]] = []
        tools, tools_by_name = await self._current_tools()
        # With reflect_on_tool_use, one more model call, made without tools, answers.
        reflections = 1 if self._reflect_on_tool_use else 0
        for iteration in range(self._max_tool_iterations + reflections):
            reflecting = iteration == self._max_tool_iterations
            inference: _Inference | None = None
            async with aclosing(self._infer([] if reflecting else tools, token)) as stream:
                async for streamed in stream:
                    if isinstance(streamed, _Inference):
                        inference = streamed
                    else:
                        yield streamed
            assert inference is not None
            result = inference.result
            calls = result.content if isinstance(result.content, list) else []
            if reflecting and calls:
                raise InvalidValueError(
                    f"Agent `{self.name}`: the model answered the reflection call (made "
                    "without tools) with tool calls; expected a text answer."
                )
            if result.thought:
                # Streamed text that came with tool calls is the thought: its chunks name it.
                thought = (
                    ThoughtEvent(id=inference.message_id, content=result.thought, source=self.name)
                    if calls
                    else ThoughtEvent(content=result.thought, source=self.name)
                )
                inner.append(thought)
                yield thought
            if not calls:
                yield await self._answer(inference, inner)
                return

            request = ToolCallRequestEvent(
                content=list(calls), source=self.name, models_usage=result.usage
            )
            inner.append(request)
            yield request
            results = await self._run_calls(calls, token, tools_by_name)
            execution = ToolCallExecutionEvent(content=results, source=self.name)
            inner.append(execution)
            yield execution
            request_message = AssistantMessage(
                content=list(calls), thought=result.thought, source=self.name
            )
            await self._model_context.add_message(request_message)
            await self._model_context.add_message(FunctionExecutionResultMessage(content=results))
            steps.append((request_message, results))

            handoff = next((call for call in calls if call.name in self._handoffs), None)
            if handoff is not None:
                yield Response(
                    chat_message=self._handoff_message(handoff, steps), inner_messages=inner
                )
                return

        all_calls = [call for request_message, _ in steps for call in _calls_of(request_message)]
        all_results = [result for _, results in steps for result in results]
        summary = ToolCallSummaryMessage(
            content=summarize(
                all_calls,
                all_results,
                self._tool_call_summary_format,
                self._tool_call_summary_formatter,
            ),
            tool_calls=all_calls,
            results=all_results,
            source=self.name,
            metadata=self._metadata,  # validation copies it
        )
        yield Response(chat_message=summary, inner_messages=inner)

    async def _current_tools(self) -> tuple[list[Tool], dict[str, Tool]]:
        """The tools of this turn: the agent's own, or those its workbenches list now."""
        if not self._workbenches:
            return self._model_tools, self._tools_by_name
        listed = await workbench_tools(self.name, self._workbenches)
        tools = [*listed, *(handoff.handoff_tool for handoff in self._handoffs.values())]
        return tools, {tool.name: tool for tool in tools}

    async def _infer(
        self, tools: Sequence[Tool], token: CancellationToken
    ) -> AsyncGenerator[ModelClientStreamingChunkEvent | _Inference, None]:
        """Call the model on the system message and the context; yield chunks when
        streaming, then the finished call."""
        if token.is_cancelled():
            raise asyncio.CancelledError()
        context = await self._model_context.get_messages()
        fresh = type(self._model_context).get_messages in _FRESH_VIEWS
        if not self._model_client.model_info.get("vision", False):
            context = [_without_images(message) for message in context]
            fresh = True
        if fresh and type(context) is list:
            # A list made for this call: prepend in place rather than copy the whole
            # history a second time (the copy would grow with the conversation).
            context[0:0] = self._system_messages
            request = context
        else:
            request = [*self._system_messages, *context]
        message_id = str(uuid.uuid4())
        if not self._model_client_stream:
            result = await run_linked(
                self._model_client.create(
                    request,
                    tools=tools,
                    json_output=self._output_content_type,
                    cancellation_token=token,
                ),
                token,
            )
            yield _Inference(result, message_id)
            return
        chunks = self._model_client.create_stream(
            request, tools=tools, json_output=self._output_content_type, cancellation_token=token
        )
        missing = InvalidValueError(
            f"Agent `{self.name}`: the model client's stream ended without a "
            "CreateResult; create_stream must yield the final result last."
        )
        streamed = stream_events(
            chunks, message_id=message_id, source=self.name, token=token, missing=missing
        )
        async for item in streamed:
            yield _Inference(item, message_id) if isinstance(item, CreateResult) else item

    async def _answer(self, inference: _Inference, inner: list[_Item]) -> Response:
        """Record a text answer in the context and wrap it as the final Response."""
        result = inference.result
        content = result.content if isinstance(result.content, str) else ""
        message = self._final_message(content, result.usage, inference.message_id)
        await self._model_context.add_message(
            AssistantMessage(content=content, thought=result.thought, source=self.name)
        )
        return Response(chat_message=message, inner_messages=inner)

    def _final_message(self, content: str, usage: RequestUsage, message_id: str) -> BaseChatMessage:
        if self._output_content_type is None:
            return TextMessage(
                id=message_id,
                content=content,
                source=self.name,
                models_usage=usage,
                metadata=self._metadata,  # validation copies it
            )
        try:
            parsed = self._output_content_type.model_validate_json(content)
        except ValidationError as exc:
            raise InvalidValueError(
                f"Agent `{self.name}`: the model's answer is not a valid "
                f"`{self._output_content_type.__name__}` ({_problems(exc)}). "
                f"Answer: {content[:200]!r}"
            ) from exc
        message_type = StructuredMessage[self._output_content_type]  # type: ignore[name-defined]
        structured: BaseChatMessage = message_type(
            id=message_id,
            content=parsed,
            format_string=self._output_content_type_format,
            source=self.name,
            models_usage=usage,
            metadata=self._metadata,  # validation copies it
        )
        return structured

    async def _run_calls(
        self,
        calls: Sequence[FunctionCall],
        token: CancellationToken,
        tools_by_name: Mapping[str, Tool],
    ) -> list[FunctionExecutionResult]:
        """Run the calls concurrently; only the first handoff of an answer is performed."""
        handoffs = [index for index, call in enumerate(calls) if call.name in self._handoffs]
        skipped = set(handoffs[1:])
        if not skipped:
            return await run_tool_calls(calls, tools_by_name, token, limit=self._max_tool_calls)
        kept = [call for index, call in enumerate(calls) if index not in skipped]
        ran = iter(await run_tool_calls(kept, tools_by_name, token, limit=self._max_tool_calls))
        first = self._handoffs[calls[handoffs[0]].name].target
        results: list[FunctionExecutionResult] = []
        for index, call in enumerate(calls):
            if index in skipped:
                results.append(
                    FunctionExecutionResult(
                        content=(
                            f"Error: handoff to `{self._handoffs[call.name].target}` was not "
                            f"performed; only the first handoff of a response is (to `{first}`)."
                        ),
                        name=call.name,
                        call_id=call.id,
                        is_error=True,
                    )
                )
            else:
                results.append(next(ran))
        return results

    def _handoff_message(
        self,
        call: FunctionCall,
        steps: Sequence[tuple[AssistantMessage, list[FunctionExecutionResult]]],
    ) -> HandoffMessage:
        handoff = self._handoffs[call.name]
        return HandoffMessage(
            content=handoff.message,
            target=handoff.target,
            context=handoff_context(self.name, steps, set(self._handoffs)),
            source=self.name,
            metadata=self._metadata,  # validation copies it
        )

    # --- lifecycle ----------------------------------------------------------------------

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        """Clear the model context, preloaded messages included."""
        self._forget_open_turn()
        await self._model_context.clear()

    async def save_state(self) -> Mapping[str, Any]:
        """Return ``{"type": "AssistantAgentState", "version": "1.0.0", "llm_context":
        ...}``: the model context, JSON-serialisable.

        While a turn is unfinished, this is the context from before that turn.
        """
        point = self._open_turn
        if isinstance(point, RollbackPoint):
            context_state = dict(await self._model_context.save_state())
            context_state["messages"] = ChatCompletionContextState(
                messages=self._model_context._messages_at(point)
            ).model_dump(mode="json")["messages"]
        elif point is not None:
            context_state = dict(point)
        else:
            context_state = dict(await self._model_context.save_state())
        return AssistantAgentState(llm_context=context_state).model_dump(mode="json")

    async def save_state_since(self, base: Any) -> StateChange:
        """The state now (as `save_state()` gives it) and the patch from ``base``.

        When ``base`` is the state this method returned last, only the model context's
        new messages are dumped (see
        [`IncrementalState`][flowlib.checkpoint.IncrementalState]): this is how a
        checkpointed team snapshots the agent after each turn, at a cost that does not
        grow with the conversation. Otherwise (and while a turn is unfinished) the whole
        state is saved and compared.
        """
        if self._open_turn is not None or type(self).save_state is not AssistantAgent.save_state:
            state = json_state(await self.save_state())
            return StateChange(state, diff_state(base, state))
        mine = self._journal.fits(base, [])
        context = await state_change(self._model_context, base["llm_context"] if mine else None)
        if mine:
            if not context.patch:
                return StateChange(base, {})
            state = {**base, "llm_context": context.state}
            patch = patch_of(base, state, {"llm_context": context.patch})
        else:
            state = {**_EMPTY_STATE, "llm_context": context.state}
            patch = diff_state(base, state)
        self._journal.keep(state, [])
        return StateChange(state, patch)

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore a state from [`save_state`][flowlib.agents.AssistantAgent.save_state]; the
        conversation reverts to it.

        Raises:
            StateError: If ``state`` is not an AssistantAgent state.
        """
        check_state_argument(state, f"Agent `{self.name}`")
        parsed = parsed_state(
            AssistantAgentState,
            state,
            f"Agent `{self.name}`",
            saved_by="AssistantAgent.save_state()",
        )
        if parsed.version.split(".")[0] != "1":
            raise StateError(
                f"Agent `{self.name}`: AssistantAgentState version {parsed.version!r} is not "
                "supported; this flowlib reads version 1.x."
            )
        self._forget_open_turn()
        await self._model_context.load_state(parsed.llm_context)

    def _forget_open_turn(self) -> None:
        """Make an unfinished (abandoned) turn stale, so it will not be undone later."""
        self._open_turn = None
        self._turns_started += 1


def _problems(exc: ValidationError) -> str:
    """How many problems a validation found, and where and what the first one is."""
    first = exc.errors()[0]
    return f"{exc.error_count()} error(s): {first['loc']} {first['msg']}"


# flowlib's own context views, which return a new list on every call: the agent may
# extend that list instead of copying it.
_FRESH_VIEWS = frozenset(
    {
        UnboundedChatCompletionContext.get_messages,
        BufferedChatCompletionContext.get_messages,
        HeadAndTailChatCompletionContext.get_messages,
        TokenLimitedChatCompletionContext.get_messages,
    }
)


def _memories(agent: str, memory: Sequence[Memory] | None) -> list[Memory]:
    """Check ``memory=``: a list of ``Memory`` objects (as AutoGen, one bare ``Memory`` is refused).

    Raises:
        ArgumentTypeError: If it is not a list, or an entry is not a ``Memory``.
    """
    if memory is None:
        return []
    if isinstance(memory, Memory):
        raise ArgumentTypeError(
            f"Agent `{agent}`: memory takes a list of memories: memory=[...].",
            argument="memory",
        )
    if isinstance(memory, (str, bytes)) or not isinstance(memory, Sequence):
        raise ArgumentTypeError(
            f"Agent `{agent}`: memory must be a list of Memory objects (e.g. "
            f"[ListMemory()]), not {type(memory).__name__}.",
            argument="memory",
        )
    for index, entry in enumerate(memory):
        if not isinstance(entry, Memory):
            raise ArgumentTypeError(
                f"Agent `{agent}`: memory[{index}] is {a(type(entry).__name__)}, not a "
                "Memory; pass Memory objects such as ListMemory().",
                argument=f"memory[{index}]",
            )
    return list(memory)


def _calls_of(message: AssistantMessage) -> list[FunctionCall]:
    return message.content if isinstance(message.content, list) else []


def _without_images(message: LLMMessage) -> LLMMessage:
    """Replace images by a placeholder for a model without vision."""
    if not isinstance(message, UserMessage) or isinstance(message.content, str):
        return message
    parts = [part if isinstance(part, str) else _IMAGE_PLACEHOLDER for part in message.content]
    return UserMessage(content="\n".join(parts), source=message.source)


register_builtin(AssistantAgent, autogen="autogen_agentchat.agents")
