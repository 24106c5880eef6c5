"""The built-in agent events: tool calls, memory queries, input requests, streaming
chunks, thoughts, speaker selection, code generation and execution, retries and cache hits."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..code_executors import CodeBlock, CodeResult
from ..memory import MemoryContent
from ..models import (
    FunctionCall,
    FunctionExecutionResult,
)
from ._base import BaseAgentEvent


class ToolCallRequestEvent(BaseAgentEvent):
    """The model asked for tool calls.

    Attributes:
        content: The tool calls.
    """

    content: list[FunctionCall]
    """The tool calls."""
    type: Literal["ToolCallRequestEvent"] = "ToolCallRequestEvent"

    def to_text(self) -> str:
        """Return the list of calls as Python shows it."""
        return str(self.content)


class ToolCallExecutionEvent(BaseAgentEvent):
    """Tool calls were executed.

    Attributes:
        content: The results of the calls.
    """

    content: list[FunctionExecutionResult]
    """The tool call results."""
    type: Literal["ToolCallExecutionEvent"] = "ToolCallExecutionEvent"

    def to_text(self) -> str:
        """Return the list of results as Python shows it."""
        return str(self.content)


class MemoryQueryEvent(BaseAgentEvent):
    """Memory was queried before a model call.

    Attributes:
        content: The memory items found.
    """

    content: list[MemoryContent]
    """The memory query results."""
    type: Literal["MemoryQueryEvent"] = "MemoryQueryEvent"

    def to_text(self) -> str:
        """Return the list of memory items as Python shows it."""
        return str(self.content)


class UserInputRequestedEvent(BaseAgentEvent):
    """A user proxy asks for user input; emitted before its input callback runs.

    Attributes:
        request_id: Identifies the input request.
        content: Always empty; present for consumers that expect a ``content`` field.
    """

    request_id: str
    """Identifier for the user input request."""
    content: Literal[""] = ""
    """Empty content for compat with consumers expecting a content field."""
    type: Literal["UserInputRequestedEvent"] = "UserInputRequestedEvent"

    def to_text(self) -> str:
        """Return the (empty) content."""
        return self.content


class ModelClientStreamingChunkEvent(BaseAgentEvent):
    """A chunk of text streamed by a model client.

    Attributes:
        content: The text chunk.
        full_message_id: The id of the complete message the chunks add up to, when known.
    """

    content: str
    """A string chunk from the model client."""
    full_message_id: str | None = None
    """The id of the complete message that may come after the chunks."""
    type: Literal["ModelClientStreamingChunkEvent"] = "ModelClientStreamingChunkEvent"

    def to_text(self) -> str:
        """Return the chunk."""
        return self.content


class ThoughtEvent(BaseAgentEvent):
    """The model's reasoning, or text that came along with its tool calls.

    Attributes:
        content: The thought text.
    """

    content: str
    """The thought process of the model."""
    type: Literal["ThoughtEvent"] = "ThoughtEvent"

    def to_text(self) -> str:
        """Return the thought."""
        return self.content


class SelectSpeakerEvent(BaseAgentEvent):
    """A team selected the next speaker(s).

    Attributes:
        content: The names of the selected speakers.
    """

    content: list[str]
    """The names of the selected speakers."""
    type: Literal["SelectSpeakerEvent"] = "SelectSpeakerEvent"

    def to_text(self) -> str:
        """Return the list of names as Python shows it."""
        return str(self.content)


class SelectorEvent(BaseAgentEvent):
    """An event of a ``SelectorGroupChat``: the selector model's full answer, streamed after
    its chunks when the selector streams (``model_client_streaming=True``).

    Attributes:
        content: The content of the event.
    """

    content: str
    """The content of the event."""
    type: Literal["SelectorEvent"] = "SelectorEvent"

    def to_text(self) -> str:
        """Return the content."""
        return self.content


class CodeGenerationEvent(BaseAgentEvent):
    """A model generated code.

    Attributes:
        retry_attempt: 0 for the first generation, then 1, 2, ... for retries.
        content: The complete model answer.
        code_blocks: The code blocks found in the answer.
    """

    retry_attempt: int
    """Retry number; 0 means the first generation."""
    content: str
    """The complete content as a string."""
    code_blocks: list[CodeBlock]
    """The code blocks present in the content."""
    type: Literal["CodeGenerationEvent"] = "CodeGenerationEvent"

    def to_text(self) -> str:
        """Return the model answer."""
        return self.content


class CodeExecutionEvent(BaseAgentEvent):
    """Code was executed.

    Attributes:
        retry_attempt: 0 for the first execution, then 1, 2, ... for retries.
        result: The execution result.
    """

    retry_attempt: int
    """Retry number; 0 means the first execution."""
    result: CodeResult
    """The code execution result."""
    type: Literal["CodeExecutionEvent"] = "CodeExecutionEvent"

    def to_text(self) -> str:
        """Return the output of the execution."""
        return self.result.output


class NodeRetryEvent(BaseAgentEvent):
    """A graph node's turn failed with an error its retry policy retries; the node runs
    the turn again after ``delay`` seconds (``add_node(..., retry=RetryPolicy(...))``).

    Attributes:
        attempt: The attempt that failed, from 1.
        max_attempts: How many attempts the policy allows.
        error: The failure, as ``"<ErrorType>: <message>"``.
        delay: Seconds until the next attempt.
    """

    attempt: int
    """The attempt that failed, from 1."""
    max_attempts: int
    """How many attempts the node's retry policy allows."""
    error: str
    """The failure, as ``"<ErrorType>: <message>"``."""
    delay: float
    """Seconds until the next attempt."""
    type: Literal["NodeRetryEvent"] = "NodeRetryEvent"

    def to_text(self) -> str:
        """Say which attempt failed, why, and when the next one starts."""
        return (
            f"attempt {self.attempt} of {self.max_attempts} failed ({self.error}); "
            f"retrying in {self.delay:.3g} s"
        )


class NodeCacheHitEvent(BaseAgentEvent):
    """A graph node's turn was answered from its cache (``add_node(...,
    cache=CachePolicy(...))``): its model and tools were not called.

    Attributes:
        key: The cache key that matched.
    """

    key: str
    """The cache key that matched."""
    type: Literal["NodeCacheHitEvent"] = "NodeCacheHitEvent"

    def to_text(self) -> str:
        """Say that the turn came from the cache."""
        return f"cache hit ({self.key[:12]})"


AgentEvent = Annotated[
    ToolCallRequestEvent
    | ToolCallExecutionEvent
    | MemoryQueryEvent
    | UserInputRequestedEvent
    | ModelClientStreamingChunkEvent
    | ThoughtEvent
    | SelectSpeakerEvent
    | SelectorEvent
    | CodeGenerationEvent
    | CodeExecutionEvent
    | NodeRetryEvent
    | NodeCacheHitEvent,
    Field(discriminator="type"),
]
"""The built-in concrete agent events, told apart by ``type``."""
