"""The built-in chat messages: text, stop, handoff, tool-call summary, multimodal and
structured messages."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Generic, Literal, TypeVar

from pydantic import BaseModel, Field, computed_field

from ..models import (
    FunctionCall,
    FunctionExecutionResult,
    Image,
    LLMMessage,
    UserMessage,
)
from ._base import BaseChatMessage, BaseTextChatMessage


class TextMessage(BaseTextChatMessage):
    """A text message with string-only content."""

    type: Literal["TextMessage"] = "TextMessage"


class StopMessage(BaseTextChatMessage):
    """A message asking for the conversation to stop; termination conditions return one."""

    type: Literal["StopMessage"] = "StopMessage"


class HandoffMessage(BaseTextChatMessage):
    """A message handing the conversation over to another agent.

    Attributes:
        content: The handoff text.
        target: The name of the agent to hand off to.
        context: Model context passed on to the target agent.
    """

    target: str
    """The name of the target agent to handoff to."""
    context: list[LLMMessage] = Field(default_factory=list)
    """The model context to be passed to the target agent."""
    type: Literal["HandoffMessage"] = "HandoffMessage"


class ToolCallSummaryMessage(BaseTextChatMessage):
    """A summary of the results of an agent's tool calls.

    Attributes:
        content: The summary text.
        tool_calls: The tool calls that were made.
        results: Their results.
    """

    type: Literal["ToolCallSummaryMessage"] = "ToolCallSummaryMessage"
    tool_calls: list[FunctionCall]
    """The tool calls that were made."""
    results: list[FunctionExecutionResult]
    """The results of the tool calls."""


def _iterm_inline_image(image: Image) -> str:
    # iTerm2's inline image protocol: OSC 1337 ; File=inline=1 : <base64> BEL.
    return f"\x1b]1337;File=inline=1:{image.to_base64()}\x07"


class MultiModalMessage(BaseChatMessage):
    """A message mixing text and images.

    Attributes:
        content: Text and [`Image`][flowlib.models.Image] parts, in order.
    """

    content: list[str | Image]
    """The content of the message."""
    type: Literal["MultiModalMessage"] = "MultiModalMessage"

    def to_model_text(self, image_placeholder: str | None = "[image]") -> str:
        """Render the content as text for a model, one part per line.

        Args:
            image_placeholder: The text that stands for each image; None puts the
                image's base64 data there instead.

        Returns:
            The parts joined with newlines.
        """
        if image_placeholder is None:
            return self._joined(Image.to_base64)
        return self._joined(lambda _: image_placeholder)

    def to_text(self, iterm: bool = False) -> str:
        """Render the content for the console, one part per line.

        Args:
            iterm: Draw images inline with the iTerm2 escape sequence instead of
                writing ``<image>``.

        Returns:
            The parts joined with newlines.
        """
        return self._joined(_iterm_inline_image if iterm else lambda _: "<image>")

    def _joined(self, image_text: Callable[[Image], str]) -> str:
        """The parts, one per line, each image as ``image_text`` gives it."""
        return "\n".join(
            item if isinstance(item, str) else image_text(item) for item in self.content
        )

    def to_model_message(self) -> UserMessage:
        """Return a ``UserMessage`` with the same text and image parts."""
        return UserMessage(content=list(self.content), source=self.source)


StructuredContentType = TypeVar("StructuredContentType", bound=BaseModel, covariant=True)
"""Type variable for structured content types."""


class StructuredMessage(BaseChatMessage, Generic[StructuredContentType]):
    """A chat message whose content is a pydantic model.

    Parametrise it with the content model: ``StructuredMessage[MyContent]``. Its
    ``type`` is the parametrised class name (``"StructuredMessage[MyContent]"``);
    register that class on a [`MessageFactory`][flowlib.messages.MessageFactory] (or a team's
    ``custom_message_types``) to load dumps back.

    Attributes:
        content: The content model.
        format_string: (Experimental) A ``str.format`` template over the content's fields,
            used by [`to_text`][flowlib.messages.StructuredMessage.to_text], e.g.
            ``"Hello, {text} {number}!"``.

    Examples:
        >>> class Greeting(BaseModel):
        ...     text: str
        ...     number: int
        >>> msg = StructuredMessage[Greeting](
        ...     content=Greeting(text="Hello", number=42), source="agent"
        ... )
        >>> msg.to_text()
        '{"text": "Hello", "number": 42}'
        >>> msg.model_copy(update={"format_string": "{text}, {number}!"}).to_text()
        'Hello, 42!'
    """

    content: StructuredContentType
    """The content of the message. Must be a subclass of pydantic ``BaseModel``."""
    format_string: str | None = None
    """(Experimental) A template over the content fields that
    [`to_text`][flowlib.messages.StructuredMessage.to_text] renders."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def type(self) -> str:
        """The class name, e.g. ``"StructuredMessage[MyContent]"``."""
        return type(self).__name__

    def to_text(self) -> str:
        """Render the content: the format string filled with its fields, or else JSON."""
        if self.format_string is not None:
            return self.format_string.format(**self.content.model_dump())
        return json.dumps(self.content.model_dump(mode="json"), ensure_ascii=False)

    def to_model_text(self) -> str:
        """Render the content for a model; the same text as
        [`to_text`][flowlib.messages.StructuredMessage.to_text]."""
        return self.to_text()

    def to_model_message(self) -> UserMessage:
        """Return ``UserMessage(content=self.to_model_text(), source=self.source)``."""
        return UserMessage(content=self.to_model_text(), source=self.source)


ChatMessage = Annotated[
    TextMessage | MultiModalMessage | StopMessage | ToolCallSummaryMessage | HandoffMessage,
    Field(discriminator="type"),
]
"""The built-in concrete chat messages (not ``StructuredMessage``), told apart by ``type``."""
