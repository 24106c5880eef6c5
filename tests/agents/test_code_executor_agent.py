"""CodeExecutorAgent: terminal mode (Appendix B 26, with and without approval), sources
and languages, model mode with code generation, retries, reflection and streaming.
Code runs in real subprocesses; models are scripted."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from _agents import Fake, texts

from flowlib.agents import ApprovalRequest, ApprovalResponse, CodeExecutorAgent
from flowlib.agents._code_executor_agent import RETRY_PROMPT
from flowlib.base import CancellationToken, Response
from flowlib.code_executors import CodeBlock, LocalCommandLineCodeExecutor
from flowlib.messages import (
    CodeExecutionEvent,
    CodeGenerationEvent,
    ModelClientStreamingChunkEvent,
    TextMessage,
)
from flowlib.model_context import BufferedChatCompletionContext
from flowlib.models import (
    AssistantMessage,
    CreateResult,
    ReplayChatCompletionClient,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from flowlib.teams import DiGraphBuilder, GraphFlow

HELLO = "Here is some code\n```python\nprint('Hello world')\n```\n"
GUARD = 30


@pytest.fixture
async def executor(tmp_path: Path) -> AsyncIterator[LocalCommandLineCodeExecutor]:
    async with LocalCommandLineCodeExecutor(work_dir=tmp_path, timeout=20) as code_executor:
        yield code_executor


def task(content: str, source: str = "user") -> list[TextMessage]:
    return [TextMessage(content=content, source=source)]


async def reply_to(agent: CodeExecutorAgent, content: str, source: str = "user") -> str:
    response = await asyncio.wait_for(
        agent.on_messages(task(content, source), CancellationToken()), GUARD
    )
    assert isinstance(response.chat_message, TextMessage)
    assert response.chat_message.source == agent.name
    return response.chat_message.content


# --- terminal mode (no model) -----------------------------------------------------------


async def test_runs_python_block(executor: LocalCommandLineCodeExecutor) -> None:
    """Appendix B 26, without approval_func."""
    agent = CodeExecutorAgent("code_executor", code_executor=executor)
    result = await agent.run(task=HELLO)
    assert texts(result.messages) == [f"user:{HELLO}", "code_executor:Hello world\n"]
    assert [type(m).__name__ for m in result.messages] == ["TextMessage", "TextMessage"]


async def test_sync_approval_approves(executor: LocalCommandLineCodeExecutor) -> None:
    """Appendix B 26, with an approving approval_func."""
    requests: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> ApprovalResponse:
        requests.append(request)
        return ApprovalResponse(approved=True, reason="Approved by user")

    agent = CodeExecutorAgent("code_executor", code_executor=executor, approval_func=approve)
    assert await reply_to(agent, HELLO) == "Hello world\n"
    [request] = requests
    assert request.code == "```python\nprint('Hello world')\n```"
    assert request.context == [UserMessage(content=HELLO, source="user")]


async def test_async_approval_approves(executor: LocalCommandLineCodeExecutor) -> None:
    async def approve(request: ApprovalRequest) -> ApprovalResponse:
        await asyncio.sleep(0)
        return ApprovalResponse(approved="print(" in request.code, reason="Safe Python operation")

    agent = CodeExecutorAgent("code_executor", code_executor=executor, approval_func=approve)
    assert await reply_to(agent, HELLO) == "Hello world\n"


async def test_denied_code_is_not_run(executor: LocalCommandLineCodeExecutor) -> None:
    """Appendix B 26, approval denied: nothing executes, the reply says why."""
    calls = 0

    def deny(request: ApprovalRequest) -> ApprovalResponse:
        nonlocal calls
        calls += 1
        return ApprovalResponse(approved=False, reason="Denied by user")

    agent = CodeExecutorAgent("code_executor", code_executor=executor, approval_func=deny)
    code = "```python\nopen('ran.txt', 'w').write('x')\nprint('ran')\n```"
    reply = await reply_to(agent, code)
    assert reply == "Code execution was not approved. Reason: Denied by user"
    assert calls == 1
    assert not (executor.work_dir / "ran.txt").exists()


async def test_approval_with_several_blocks_and_bad_return(
    executor: LocalCommandLineCodeExecutor,
) -> None:
    seen: list[str] = []

    def approve(request: ApprovalRequest) -> ApprovalResponse:
        seen.append(request.code)
        return ApprovalResponse(approved=True, reason="ok")

    agent = CodeExecutorAgent("ce", code_executor=executor, approval_func=approve)
    text = "```python\nprint(1)\n```\nthen\n```sh\necho 2\n```"
    assert await reply_to(agent, text) == "1\n2\n"
    assert seen == ["```python\nprint(1)\n```\n\n```sh\necho 2\n```"]

    bad = CodeExecutorAgent(
        "ce",
        code_executor=executor,
        approval_func=lambda request: True,  # type: ignore[arg-type]
    )
    with pytest.raises(TypeError, match="must return an ApprovalResponse"):
        await reply_to(bad, HELLO)


async def test_no_code_blocks(executor: LocalCommandLineCodeExecutor) -> None:
    agent = CodeExecutorAgent("ce", code_executor=executor)
    assert await reply_to(agent, "no code here") == CodeExecutorAgent.NO_CODE_BLOCKS_FOUND_MESSAGE
    # Blocks in unsupported languages are ignored, not reported as errors.
    js = "```javascript\nconsole.log(1)\n```"
    assert await reply_to(agent, js) == CodeExecutorAgent.NO_CODE_BLOCKS_FOUND_MESSAGE
    assert CodeExecutorAgent.NO_CODE_BLOCKS_FOUND_MESSAGE.startswith(
        "No code blocks found in the thread."
    )


async def test_sh_block_and_supported_languages(executor: LocalCommandLineCodeExecutor) -> None:
    agent = CodeExecutorAgent("ce", code_executor=executor)
    assert await reply_to(agent, '```sh\necho "$((6 * 7))"\n```') == "42\n"
    # bash is not a default language, so the block is ignored ...
    bash = "```bash\necho bash\n```"
    assert await reply_to(agent, bash) == CodeExecutorAgent.NO_CODE_BLOCKS_FOUND_MESSAGE
    # ... unless listed (case-insensitively); the python block is then ignored.
    only_bash = CodeExecutorAgent("ce", code_executor=executor, supported_languages=["BASH"])
    mixed = "```python\nprint('py')\n```\n" + bash
    assert await reply_to(only_bash, mixed) == "bash\n"


async def test_sources_limit_where_code_is_taken_from(
    executor: LocalCommandLineCodeExecutor,
) -> None:
    agent = CodeExecutorAgent("ce", code_executor=executor, sources=["coder"])
    messages = [
        TextMessage(content="```python\nprint('from user')\n```", source="user"),
        TextMessage(content="```python\nprint('from coder')\n```", source="coder"),
    ]
    response = await agent.on_messages(messages, CancellationToken())
    assert response.chat_message.to_text() == "from coder\n"
    assert await reply_to(agent, HELLO, source="user") == (
        CodeExecutorAgent.NO_CODE_BLOCKS_FOUND_MESSAGE
    )


async def test_failure_empty_output_and_timeout_replies(tmp_path: Path) -> None:
    # The scripts that end get a generous timeout (a busy machine once took over 0.5 s
    # to start one); only the script that sleeps meets a short one.
    async with LocalCommandLineCodeExecutor(work_dir=tmp_path, timeout=60) as executor:
        agent = CodeExecutorAgent("ce", code_executor=executor)
        failed = await reply_to(agent, "```python\n1 / 0\n```")
        assert failed.startswith("The script ran, then exited with an error (exit code 1).\n")
        assert "ZeroDivisionError" in failed
        silent = await reply_to(agent, "```python\nx = 1\n```")
        assert silent.startswith("The script ran but printed nothing (exit code 0).")
    async with LocalCommandLineCodeExecutor(work_dir=tmp_path, timeout=1) as executor:
        agent = CodeExecutorAgent("ce", code_executor=executor)
        slow = await reply_to(agent, "```python\nimport time\ntime.sleep(30)\n```")
        assert "(exit code 124)" in slow and "Timeout" in slow


async def test_cancellation_stops_the_code(executor: LocalCommandLineCodeExecutor) -> None:
    agent = CodeExecutorAgent("ce", code_executor=executor)
    token = CancellationToken()
    code = "```python\nimport time\nopen('started', 'w').close()\ntime.sleep(30)\n```"
    call = asyncio.ensure_future(agent.on_messages(task(code), token))
    while not (executor.work_dir / "started").exists():
        await asyncio.sleep(0.02)
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, GUARD)


async def test_public_helpers(executor: LocalCommandLineCodeExecutor) -> None:
    agent = CodeExecutorAgent("ce", code_executor=executor, sources=["coder"])
    messages = [
        TextMessage(content="```python\nprint(1)\n```\n```r\nx\n```", source="coder"),
        TextMessage(content="```python\nprint(2)\n```", source="other"),
    ]
    blocks = await agent.extract_code_blocks_from_messages(messages)
    assert blocks == [CodeBlock(code="print(1)", language="python")]
    result = await agent.execute_code_block(blocks, CancellationToken())
    assert (result.exit_code, result.output) == (0, "1\n")


async def test_terminal_in_a_graph_flow(executor: LocalCommandLineCodeExecutor) -> None:
    """The documented group chat: a coder writes code, the executor agent runs it."""
    coder = Fake("coder_agent", ['Certainly!\n```python\nprint("Hello World!")\n```\nRun it.'])
    terminal = CodeExecutorAgent("code_executor_agent", code_executor=executor)
    builder = DiGraphBuilder().add_node(coder).add_node(terminal)
    builder.add_edge(coder, terminal)
    team = GraphFlow(builder.get_participants(), builder.build())
    result = await asyncio.wait_for(team.run(task="Write python code to print Hello World!"), GUARD)
    assert texts(result.messages)[-1] == "code_executor_agent:Hello World!\n"


def test_defaults_and_validation(executor: LocalCommandLineCodeExecutor) -> None:
    terminal = CodeExecutorAgent("ce", code_executor=executor)
    assert terminal.description == CodeExecutorAgent.DEFAULT_TERMINAL_DESCRIPTION
    assert terminal.code_executor is executor
    model = ReplayChatCompletionClient([])
    writer = CodeExecutorAgent("ce", code_executor=executor, model_client=model)
    assert writer.description == CodeExecutorAgent.DEFAULT_AGENT_DESCRIPTION
    assert CodeExecutorAgent.DEFAULT_SUPPORTED_LANGUAGES == ["python", "sh"]
    assert list(writer.produced_message_types) == [TextMessage]
    with pytest.raises(ValueError, match="needs a model_client"):
        CodeExecutorAgent("ce", code_executor=executor, max_retries_on_error=2)
    with pytest.raises(ValueError, match="non-negative"):
        CodeExecutorAgent("ce", code_executor=executor, model_client=model, max_retries_on_error=-1)
    with pytest.raises(TypeError, match="`code_executor` must be a CodeExecutor"):
        CodeExecutorAgent("ce", code_executor=object())  # type: ignore[arg-type]


# --- model mode -------------------------------------------------------------------------

FAILING = "Let me compute it.\n```python\nprint(1 / 0)\n```"
FIXED = "Fixed.\n```python\nprint(6 * 7)\n```"


async def test_model_writes_runs_and_reflects(executor: LocalCommandLineCodeExecutor) -> None:
    model = ReplayChatCompletionClient(
        ["Sure.\n```python\nprint('Hello World!')\n```", "It printed Hello World!"]
    )
    agent = CodeExecutorAgent("code_executor_agent", code_executor=executor, model_client=model)
    result = await asyncio.wait_for(
        agent.run(task="Write python code to print Hello World!"), GUARD
    )
    kinds = [type(m).__name__ for m in result.messages]
    assert kinds == ["TextMessage", "CodeGenerationEvent", "CodeExecutionEvent", "TextMessage"]
    generation, execution = result.messages[1], result.messages[2]
    assert isinstance(generation, CodeGenerationEvent) and isinstance(execution, CodeExecutionEvent)
    assert generation.retry_attempt == 0 and execution.retry_attempt == 0
    assert generation.code_blocks == [CodeBlock(code="print('Hello World!')", language="python")]
    assert (execution.result.exit_code, execution.result.output) == (0, "Hello World!\n")
    assert result.messages[-1].to_text() == "It printed Hello World!"
    system = SystemMessage(content=CodeExecutorAgent.DEFAULT_SYSTEM_MESSAGE)
    request = UserMessage(content="Write python code to print Hello World!", source="user")
    assert model.requests == [
        [system, request],
        [
            system,
            request,
            AssistantMessage(content=generation.content, source="code_executor_agent"),
            UserMessage(content="Hello World!\n", source="code_executor_agent"),
        ],
    ]


async def test_model_retries_after_a_failing_block(executor: LocalCommandLineCodeExecutor) -> None:
    model = ReplayChatCompletionClient([FAILING, FIXED, "The answer is 42."])
    agent = CodeExecutorAgent(
        "coder", code_executor=executor, model_client=model, max_retries_on_error=2
    )
    stream = [item async for item in agent.on_messages_stream(task("6 * 7?"), CancellationToken())]
    events = [i for i in stream if isinstance(i, (CodeGenerationEvent, CodeExecutionEvent))]
    assert [(type(e).__name__, e.retry_attempt) for e in events] == [
        ("CodeGenerationEvent", 0),
        ("CodeExecutionEvent", 0),
        ("CodeGenerationEvent", 1),
        ("CodeExecutionEvent", 1),
    ]
    first_run, second_run = events[1], events[3]
    assert isinstance(first_run, CodeExecutionEvent) and isinstance(second_run, CodeExecutionEvent)
    assert first_run.result.exit_code == 1 and "ZeroDivisionError" in first_run.result.output
    assert (second_run.result.exit_code, second_run.result.output) == (0, "42\n")
    response = stream[-1]
    assert isinstance(response, Response)
    assert response.chat_message.to_text() == "The answer is 42."
    assert list(response.inner_messages or []) == events
    # The retry request holds the failure output and the request to fix it.
    feedback = model.requests[1][-1]
    assert isinstance(feedback, UserMessage) and isinstance(feedback.content, str)
    assert feedback.content.startswith("The script ran, then exited with an error (exit code 1)")
    assert "ZeroDivisionError" in feedback.content and feedback.content.endswith(RETRY_PROMPT)
    assert model.requests[2][-2:] == [
        AssistantMessage(content=FIXED, source="coder"),
        UserMessage(content="42\n", source="coder"),
    ]
    assert model.remaining == 0


async def test_retries_stop_when_exhausted(executor: LocalCommandLineCodeExecutor) -> None:
    model = ReplayChatCompletionClient([FAILING, FAILING, "It keeps failing."])
    agent = CodeExecutorAgent(
        "coder", code_executor=executor, model_client=model, max_retries_on_error=1
    )
    result = await asyncio.wait_for(agent.run(task="6 * 7?"), GUARD)
    attempts = [m.retry_attempt for m in result.messages if isinstance(m, CodeExecutionEvent)]
    assert attempts == [0, 1]
    assert result.messages[-1].to_text() == "It keeps failing."
    last_feedback = model.requests[2][-1]
    assert isinstance(last_feedback, UserMessage) and isinstance(last_feedback.content, str)
    assert not last_feedback.content.endswith(RETRY_PROMPT)  # no retry was offered


async def test_no_retries_reflects_on_the_failure(executor: LocalCommandLineCodeExecutor) -> None:
    model = ReplayChatCompletionClient([FAILING, "Division by zero."])
    agent = CodeExecutorAgent("coder", code_executor=executor, model_client=model)
    result = await asyncio.wait_for(agent.run(task="6 * 7?"), GUARD)
    assert result.messages[-1].to_text() == "Division by zero."
    assert len(model.requests) == 2


async def test_answer_without_code_is_the_reply(executor: LocalCommandLineCodeExecutor) -> None:
    usage = RequestUsage(prompt_tokens=5, completion_tokens=3)
    answer = CreateResult(
        finish_reason="stop", content="No code needed: 42.", usage=usage, cached=False
    )
    model = ReplayChatCompletionClient([answer])
    agent = CodeExecutorAgent(
        "coder", code_executor=executor, model_client=model, system_message=None
    )
    result = await agent.run(task="6 * 7?")
    assert texts(result.messages) == ["user:6 * 7?", "coder:No code needed: 42."]
    assert result.messages[-1].models_usage == usage
    assert model.requests == [[UserMessage(content="6 * 7?", source="user")]]


async def test_denied_model_code_is_not_retried(executor: LocalCommandLineCodeExecutor) -> None:
    model = ReplayChatCompletionClient([FIXED, "I was not allowed to run it."])
    contexts: list[int] = []

    def deny(request: ApprovalRequest) -> ApprovalResponse:
        contexts.append(len(request.context))
        return ApprovalResponse(approved=False, reason="No code today")

    agent = CodeExecutorAgent(
        "coder",
        code_executor=executor,
        model_client=model,
        max_retries_on_error=3,
        approval_func=deny,
    )
    result = await asyncio.wait_for(agent.run(task="6 * 7?"), GUARD)
    [execution] = [m for m in result.messages if isinstance(m, CodeExecutionEvent)]
    assert execution.result.exit_code == 1
    assert execution.result.output == "Code execution was not approved. Reason: No code today"
    assert result.messages[-1].to_text() == "I was not allowed to run it."
    assert contexts == [2]  # the request and the model's answer with the code
    assert model.requests[1][-1] == UserMessage(content=execution.result.output, source="coder")


async def test_model_streaming(executor: LocalCommandLineCodeExecutor) -> None:
    model = ReplayChatCompletionClient(["```python\nprint(7)\n```", "Seven it is."])
    agent = CodeExecutorAgent(
        "coder", code_executor=executor, model_client=model, model_client_stream=True
    )
    streamed = [item async for item in agent.run_stream(task="7?")]
    chunks = [i for i in streamed if isinstance(i, ModelClientStreamingChunkEvent)]
    generation = next(i for i in streamed if isinstance(i, CodeGenerationEvent))
    final = [i for i in streamed if isinstance(i, TextMessage)][-1]
    by_message: dict[str | None, str] = {}
    for chunk in chunks:
        by_message[chunk.full_message_id] = (
            by_message.get(chunk.full_message_id, "") + chunk.content
        )
    assert by_message == {generation.id: generation.content, final.id: "Seven it is."}
    result = streamed[-1]
    assert not any(isinstance(m, ModelClientStreamingChunkEvent) for m in result.messages)  # type: ignore[union-attr]


class _TokenDeafModel(ReplayChatCompletionClient):
    """Streams its script without looking at the cancellation token."""

    async def create_stream(  # type: ignore[override]
        self, messages: Any, *, cancellation_token: CancellationToken | None = None, **kwargs: Any
    ) -> AsyncIterator[str | CreateResult]:
        async for chunk in super().create_stream(messages, **kwargs):
            yield chunk


async def test_a_cancelled_token_stops_the_model_stream(
    executor: LocalCommandLineCodeExecutor,
) -> None:
    # The agent stops between two chunks itself, even when the client does not check.
    model = _TokenDeafModel(["```python\nprint('never run')\n```"])
    agent = CodeExecutorAgent(
        "coder", code_executor=executor, model_client=model, model_client_stream=True
    )
    token = CancellationToken()
    seen: list[object] = []
    with pytest.raises(asyncio.CancelledError):
        async for item in agent.run_stream(task="go", cancellation_token=token):
            seen.append(item)
            if isinstance(item, ModelClientStreamingChunkEvent):
                token.cancel()
    assert sum(isinstance(item, ModelClientStreamingChunkEvent) for item in seen) == 1
    assert not any(isinstance(item, CodeGenerationEvent) for item in seen)


async def test_state_and_reset(executor: LocalCommandLineCodeExecutor) -> None:
    model = ReplayChatCompletionClient(["Just text.", "More text."])
    context = BufferedChatCompletionContext(buffer_size=10)
    agent = CodeExecutorAgent(
        "coder", code_executor=executor, model_client=model, model_context=context
    )
    assert agent.model_context is context
    await agent.run(task="hi")
    state = await agent.save_state()
    assert state["type"] == "CodeExecutorAgentState"
    fresh = CodeExecutorAgent(
        "coder", code_executor=executor, model_client=model, model_context=None
    )
    await fresh.load_state(state)
    assert await fresh.model_context.get_messages() == await context.get_messages()
    assert len(await context.get_messages()) == 2
    await agent.on_reset(CancellationToken())
    assert await context.get_messages() == []
    with pytest.raises(ValueError, match="cannot load a state"):
        await fresh.load_state({"type": "Other"})


async def test_closing_fence_on_the_last_code_line_runs(
    executor: LocalCommandLineCodeExecutor,
) -> None:
    # Issue 16.2: ```` print(1)``` ```` is extracted, announced and run.
    model = ReplayChatCompletionClient(["Sure.\n```python\nprint('glued')```", "Done."])
    agent = CodeExecutorAgent("coder", code_executor=executor, model_client=model)
    result = await asyncio.wait_for(agent.run(task="print glued"), GUARD)
    generation, execution = result.messages[1], result.messages[2]
    assert isinstance(generation, CodeGenerationEvent)
    assert generation.code_blocks == [CodeBlock(code="print('glued')", language="python")]
    assert isinstance(execution, CodeExecutionEvent)
    assert execution.result.output == "glued\n"
    assert (
        await reply_to(
            CodeExecutorAgent("terminal", code_executor=executor), "```sh\necho terminal```"
        )
        == "terminal\n"
    )
