"""An agent that runs the code blocks it receives, or writes and runs its own with a model."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict
from typing_extensions import Self

from ..base import CancellationToken, Response
from ..code_executors import CodeBlock, CodeExecutor, CodeResult, extract_markdown_code_blocks
from ..component import ComponentModel, dump_field, load_field
from ..component.internal import active_policy, register_builtin
from ..errors import ArgumentTypeError, InvalidArgumentError
from ..messages import (
    BaseAgentEvent,
    BaseChatMessage,
    CodeExecutionEvent,
    CodeGenerationEvent,
    ModelClientStreamingChunkEvent,
    TextMessage,
    ThoughtEvent,
)
from ..model_context import ChatCompletionContext, UnboundedChatCompletionContext
from ..models import (
    AssistantMessage,
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelResponseError,
    SystemMessage,
    UserMessage,
)
from ._base_chat_agent import PartsStateAgent
from ._streaming import stream_events

__all__ = ["ApprovalFuncType", "ApprovalRequest", "ApprovalResponse", "CodeExecutorAgent"]

RETRY_PROMPT = (
    "The code above failed. Find the cause in its output, then reply with the complete "
    "corrected code in one markdown code block."
)
"""Appended to a failed execution's output when the model gets another attempt."""


class ApprovalRequest(BaseModel):
    """Asks an ``approval_func`` whether some code may run.

    Attributes:
        code: The code blocks about to run, each as a fenced markdown block
            (```` ```python ... ``` ````), separated by blank lines.
        context: The agent's model context: the conversation that led to the code.
    """

    code: str
    context: list[LLMMessage]


class ApprovalResponse(BaseModel):
    """An ``approval_func``'s decision.

    Attributes:
        approved: Whether the code may run.
        reason: Why; shown to the team (and the model) when the code is denied.
    """

    approved: bool
    reason: str


ApprovalFuncType = (
    Callable[[ApprovalRequest], ApprovalResponse]
    | Callable[[ApprovalRequest], Awaitable[ApprovalResponse]]
)
"""A sync or async function deciding on an [`ApprovalRequest`][flowlib.agents.ApprovalRequest]."""


class CodeExecutorAgentConfig(BaseModel):
    """The config of [`CodeExecutorAgent`][flowlib.agents.CodeExecutorAgent]."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    name: str
    code_executor: ComponentModel
    model_client: ComponentModel | None = None
    model_context: ComponentModel | None = None
    model_client_stream: bool = False
    max_retries_on_error: int = 0
    description: str | None = None
    system_message: str | None = None
    sources: list[str] | None = None
    supported_languages: list[str] | None = None


class CodeExecutorAgent(PartsStateAgent):
    """(Experimental) Runs code from markdown code blocks; with a model, writes it first.

    **Without** ``model_client`` the agent is a terminal: it runs the fenced code blocks
    (```` ```python ```` / ```` ```sh ````) of the new ``TextMessage``\\ s (only those
    from ``sources``, if given) and replies with their output. With no block to run it
    replies ``NO_CODE_BLOCKS_FOUND_MESSAGE``.

    **With** ``model_client`` it writes code for the request: the model's answer is
    emitted as a [`CodeGenerationEvent`][flowlib.messages.CodeGenerationEvent], its code blocks run
    and give a [`CodeExecutionEvent`][flowlib.messages.CodeExecutionEvent], and a last model call
    reflects on the result; that reflection is the reply. An answer without code blocks is the
    reply as it is. When the code fails (non-zero exit code) and retries are left
    (``max_retries_on_error``), the failure output goes back to the model with a request
    to fix it, and the fixed code runs as retry 1, 2, ... The retry decision is only the
    exit code (no extra model call), so any model works.

    Blocks whose language is not in ``supported_languages`` are ignored. Before any code
    runs, ``approval_func`` (if given) is asked; denied code is not run, the reply (or,
    with a model, the execution result) says it was not approved and why, and a denial
    is not retried.

    Args:
        name: The agent's name.
        code_executor: Runs the code, e.g.
            [`LocalCommandLineCodeExecutor`][flowlib.code_executors.LocalCommandLineCodeExecutor].
        model_client: Writes and reflects on code; ``None`` for a plain terminal.
        model_context: The model's history; defaults to an unbounded one. It may be
            preloaded; [`on_reset`][flowlib.agents.CodeExecutorAgent.on_reset] clears it.
        model_client_stream: Stream model tokens as ``ModelClientStreamingChunkEvent``\\ s.
        max_retries_on_error: Extra attempts after failing code (needs a model).
        description: Defaults to ``DEFAULT_TERMINAL_DESCRIPTION`` without a model and
            ``DEFAULT_AGENT_DESCRIPTION`` with one.
        system_message: The model's system message; ``None`` for none.
        sources: Only run code from messages of these senders (terminal mode only).
        supported_languages: Languages to run; defaults to
            ``DEFAULT_SUPPORTED_LANGUAGES``.
        approval_func: ``(ApprovalRequest) -> ApprovalResponse``, sync or async, asked
            before every execution; ``None`` approves everything. A sync function runs on
            the event loop, so a slow one (``input()``) holds up other agents meanwhile.

    Raises:
        ValueError: If ``max_retries_on_error`` is negative, or positive without a model.

    Examples:
        >>> import asyncio
        >>> from flowlib.code_executors import LocalCommandLineCodeExecutor
        >>> async def main() -> str:
        ...     async with LocalCommandLineCodeExecutor() as executor:
        ...         agent = CodeExecutorAgent("code_executor", code_executor=executor)
        ...         task = "Here is some code\\n```python\\nprint('Hello world')\\n```\\n"
        ...         result = await agent.run(task=task)
        ...     return result.messages[-1].to_text()
        >>> asyncio.run(main())
        'Hello world\\n'
    """

    DEFAULT_TERMINAL_DESCRIPTION = (
        "A computer terminal that performs no other action than running Python scripts "
        "(provided to it quoted in ```python code blocks), or sh shell scripts (provided to "
        "it quoted in ```sh code blocks)."
    )
    DEFAULT_AGENT_DESCRIPTION = (
        "A Code Execution Agent that generates and executes Python and shell scripts based "
        "on user instructions. It ensures correctness, efficiency, and minimal errors while "
        "gracefully handling edge cases."
    )
    DEFAULT_SYSTEM_MESSAGE = (
        "You are a Code Execution Agent. Your role is to generate and execute Python code and "
        "shell scripts based on user instructions, ensuring correctness, efficiency, and "
        "minimal errors. Handle edge cases gracefully. Python code should be provided in "
        "```python code blocks, and sh shell scripts should be provided in ```sh code blocks "
        "for execution."
    )
    NO_CODE_BLOCKS_FOUND_MESSAGE = (
        "No code blocks found in the thread. Please provide at least one markdown-encoded "
        "code block to execute (i.e., quoting code in ```python or ```sh code blocks)."
    )
    DEFAULT_SUPPORTED_LANGUAGES: ClassVar[list[str]] = ["python", "sh"]

    def __init__(
        self,
        name: str,
        code_executor: CodeExecutor,
        *,
        model_client: ChatCompletionClient | None = None,
        model_context: ChatCompletionContext | None = None,
        model_client_stream: bool = False,
        max_retries_on_error: int = 0,
        description: str | None = None,
        system_message: str | None = DEFAULT_SYSTEM_MESSAGE,
        sources: Sequence[str] | None = None,
        supported_languages: list[str] | None = None,
        approval_func: ApprovalFuncType | None = None,
    ) -> None:
        if description is None:
            description = (
                self.DEFAULT_TERMINAL_DESCRIPTION
                if model_client is None
                else self.DEFAULT_AGENT_DESCRIPTION
            )
        super().__init__(name, description)
        if not hasattr(code_executor, "execute_code_blocks"):
            raise ArgumentTypeError(
                f"CodeExecutorAgent `{name}`: `code_executor` must be a CodeExecutor (e.g. "
                f"LocalCommandLineCodeExecutor()), not {type(code_executor).__name__}.",
                argument="code_executor",
            )
        if not isinstance(max_retries_on_error, int) or max_retries_on_error < 0:
            raise InvalidArgumentError(
                f"CodeExecutorAgent `{name}`: `max_retries_on_error` must be a non-negative "
                f"integer, not {max_retries_on_error!r}.",
                argument="max_retries_on_error",
            )
        if max_retries_on_error > 0 and model_client is None:
            raise InvalidArgumentError(
                f"CodeExecutorAgent `{name}`: max_retries_on_error={max_retries_on_error} needs "
                "a model_client to rewrite the failing code; pass one, or leave retries at 0.",
                argument="max_retries_on_error",
            )
        self._code_executor = code_executor
        self._model_client = model_client
        self._model_context = model_context or UnboundedChatCompletionContext()
        self._model_client_stream = model_client_stream
        self._max_retries_on_error = max_retries_on_error
        self._system_messages = [SystemMessage(content=system_message)] if system_message else []
        self._sources = list(sources) if sources is not None else None
        languages = supported_languages or self.DEFAULT_SUPPORTED_LANGUAGES
        self._supported_languages = [language.lower() for language in languages]
        self._approval_func = approval_func

    # --- properties ---------------------------------------------------------------------

    @property
    def code_executor(self) -> CodeExecutor:
        """The executor that runs the code."""
        return self._code_executor

    # --- the component protocol ---------------------------------------------------------

    component_config_schema: ClassVar[type[BaseModel]] = CodeExecutorAgentConfig

    def _to_config(self) -> CodeExecutorAgentConfig:
        # The approval_func (a callable) is not written: loading a CodeExecutorAgent needs
        # `load_component(..., approval_func=...)` anyway, so a loaded agent never runs
        # code unapproved (flowlib/component/_policy.py).
        system = self._system_messages[0].content if self._system_messages else None
        return CodeExecutorAgentConfig(
            name=self.name,
            code_executor=dump_field(self._code_executor, "code_executor"),
            model_client=(
                None
                if self._model_client is None
                else dump_field(self._model_client, "model_client")
            ),
            model_context=dump_field(self._model_context, "model_context"),
            model_client_stream=self._model_client_stream,
            max_retries_on_error=self._max_retries_on_error,
            description=self.description,
            system_message=system if isinstance(system, str) else None,
            sources=None if self._sources is None else list(self._sources),
            supported_languages=list(self._supported_languages),
        )

    @classmethod
    def _from_config(cls, config: CodeExecutorAgentConfig) -> Self:
        executor = load_field(config.code_executor, "code_executor", CodeExecutor)
        client = load_field(config.model_client, "model_client", ChatCompletionClient)
        context = load_field(config.model_context, "model_context", ChatCompletionContext)
        # The other fields are the constructor's plain options, under the same names.
        options = config.model_dump(
            exclude={"name", "code_executor", "model_client", "model_context"}
        )
        return cls(
            config.name,
            executor,
            model_client=client,
            model_context=context,
            approval_func=active_policy().approval_func,
            **options,
        )

    # --- calls --------------------------------------------------------------------------

    async def on_messages_stream(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Response, None]:
        """Like [`on_messages`][flowlib.agents.CodeExecutorAgent.on_messages], yielding code
        generation and execution events first."""
        await self._remember(messages)
        if self._model_client is None:
            yield await self._run_as_terminal(messages, cancellation_token)
            return
        async for item in self._write_and_run(self._model_client, cancellation_token):
            yield item

    async def _run_as_terminal(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        code_blocks = await self.extract_code_blocks_from_messages(messages)
        if not code_blocks:
            reply = self.NO_CODE_BLOCKS_FOUND_MESSAGE
        else:
            result, approval = await self._approve_and_run(code_blocks, cancellation_token)
            reply = result.output if approval is not None else _describe(result)
        return Response(chat_message=TextMessage(content=reply, source=self.name))

    async def _write_and_run(
        self, model_client: ChatCompletionClient, cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Response, None]:
        inner: list[BaseAgentEvent | BaseChatMessage] = []
        attempt = 0
        reflecting = False
        while True:
            message_id = str(uuid.uuid4())
            completion: CreateResult | None = None
            async for item in self._infer(model_client, message_id, cancellation_token):
                if isinstance(item, CreateResult):
                    completion = item
                else:
                    yield item
            assert completion is not None
            text = self._text_of(completion)
            if completion.thought:
                thought = ThoughtEvent(content=completion.thought, source=self.name)
                inner.append(thought)
                yield thought
            await self._model_context.add_message(
                AssistantMessage(content=text, source=self.name, thought=completion.thought)
            )
            # The reflection on the outcome, or an answer without code, is the reply.
            code_blocks = [] if reflecting else self._supported(extract_markdown_code_blocks(text))
            if not code_blocks:
                reply = TextMessage(
                    id=message_id, content=text, source=self.name, models_usage=completion.usage
                )
                yield Response(chat_message=reply, inner_messages=inner)
                return
            generation = CodeGenerationEvent(
                id=message_id,
                retry_attempt=attempt,
                content=text,
                code_blocks=code_blocks,
                source=self.name,
                models_usage=completion.usage,
            )
            inner.append(generation)
            yield generation
            result, approval = await self._approve_and_run(code_blocks, cancellation_token)
            execution = CodeExecutionEvent(retry_attempt=attempt, result=result, source=self.name)
            inner.append(execution)
            yield execution
            retry = (
                approval is None and result.exit_code != 0 and attempt < self._max_retries_on_error
            )
            feedback = result.output if approval is not None else _describe(result)
            if retry:
                feedback = f"{feedback}\n\n{RETRY_PROMPT}"
            await self._model_context.add_message(UserMessage(content=feedback, source=self.name))
            # Without a retry, the next model call turns the execution result into the reply.
            reflecting = not retry
            attempt += 1

    async def _infer(
        self, model_client: ChatCompletionClient, message_id: str, token: CancellationToken
    ) -> AsyncGenerator[ModelClientStreamingChunkEvent | CreateResult, None]:
        """One model call on the system message and context; chunks first when streaming."""
        llm_messages = [*self._system_messages, *await self._model_context.get_messages()]
        if not self._model_client_stream:
            yield await model_client.create(llm_messages, cancellation_token=token)
            return
        missing = ModelResponseError(
            f"CodeExecutorAgent `{self.name}`: the model stream ended without a final result."
        )
        chunks = model_client.create_stream(llm_messages, cancellation_token=token)
        async for item in stream_events(
            chunks, message_id=message_id, source=self.name, token=token, missing=missing
        ):
            yield item

    def _text_of(self, completion: CreateResult) -> str:
        if not isinstance(completion.content, str):
            raise ModelResponseError(
                f"CodeExecutorAgent `{self.name}` offers the model no tools, yet the model "
                "answered with tool calls; use a model that answers in text."
            )
        return completion.content

    # --- code ---------------------------------------------------------------------------

    def _supported(self, code_blocks: Sequence[CodeBlock]) -> list[CodeBlock]:
        return [b for b in code_blocks if b.language.lower() in self._supported_languages]

    async def extract_code_blocks_from_messages(
        self, messages: Sequence[BaseChatMessage]
    ) -> list[CodeBlock]:
        """Return the runnable code blocks of ``messages``.

        Only ``TextMessage``\\ s count, only those from ``sources`` when it was given, and
        only blocks in a supported language.
        """
        code_blocks: list[CodeBlock] = []
        for message in messages:
            if not isinstance(message, TextMessage):
                continue
            if self._sources is not None and message.source not in self._sources:
                continue
            code_blocks.extend(self._supported(extract_markdown_code_blocks(message.content)))
        return code_blocks

    async def execute_code_block(
        self, code_blocks: list[CodeBlock], cancellation_token: CancellationToken
    ) -> CodeResult:
        """Ask ``approval_func`` (if any), then run ``code_blocks``.

        Returns:
            The executor's result; for denied code, exit code 1 and an output saying the
            code was not approved and why.
        """
        result, _ = await self._approve_and_run(code_blocks, cancellation_token)
        return result

    async def _approve_and_run(
        self, code_blocks: list[CodeBlock], cancellation_token: CancellationToken
    ) -> tuple[CodeResult, ApprovalResponse | None]:
        """Run the blocks unless denied; the ApprovalResponse is returned only on denial."""
        if self._approval_func is not None:
            request = ApprovalRequest(
                code="\n\n".join(f"```{b.language}\n{b.code}\n```" for b in code_blocks),
                context=await self._model_context.get_messages(),
            )
            decision: Any = self._approval_func(request)
            if inspect.isawaitable(decision):
                decision = await decision
            if not isinstance(decision, ApprovalResponse):
                raise ArgumentTypeError(
                    f"CodeExecutorAgent `{self.name}`: approval_func returned "
                    f"{type(decision).__name__}; it must return an ApprovalResponse.",
                    argument="approval_func",
                )
            if not decision.approved:
                denied = f"Code execution was not approved. Reason: {decision.reason}"
                return CodeResult(exit_code=1, output=denied), decision
        result = await self._code_executor.execute_code_blocks(code_blocks, cancellation_token)
        return result, None

    # --- lifecycle ----------------------------------------------------------------------

    _state_type = "CodeExecutorAgentState"  # its state is its model context's

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        """Clear the model context (the agent keeps no other state)."""
        await self._model_context.clear()


def _describe(result: CodeResult) -> str:
    """Say what a run produced, in words a model or a person can act on."""
    if result.exit_code != 0:
        return (
            f"The script ran, then exited with an error (exit code {result.exit_code}).\n"
            f"Its output was:\n{result.output}"
        )
    if not result.output.strip():
        return (
            "The script ran but printed nothing (exit code 0). If you expected output, "
            "print it to stdout."
        )
    return result.output


register_builtin(CodeExecutorAgent, autogen="autogen_agentchat.agents")
