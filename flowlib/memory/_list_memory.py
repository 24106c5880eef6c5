"""``ListMemory``: memory items kept in a list and all recalled, oldest first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict
from typing_extensions import Self

from .._cancellation import CancellationToken
from ..component.internal import register_builtin
from ..model_context import ChatCompletionContext
from ..models import SystemMessage
from ._base import Memory, MemoryQueryResult, UpdateContextResult
from ._types import MemoryContent

__all__ = ["ListMemory"]


class ListMemoryConfig(BaseModel):
    """The config of [`ListMemory`][flowlib.memory.ListMemory]: its name and items."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    memory_contents: list[MemoryContent] = []


class ListMemory(Memory):
    """Keeps memory items in order and recalls all of them, whatever the query.

    [`update_context`][flowlib.memory.ListMemory.update_context] appends one ``SystemMessage``
    listing every item to the model
    context:

        \\nRelevant memory content (in chronological order):\\n1. <item>\\n2. <item>\\n

    and adds nothing when the memory is empty.

    Args:
        name: An identifier for this memory; defaults to ``"default_list_memory"``.
        memory_contents: Items to start with (copied).

    Examples:
        >>> import asyncio
        >>> from flowlib.model_context import UnboundedChatCompletionContext
        >>> memory = ListMemory()
        >>> item = MemoryContent(content="User likes pizza.", mime_type="text/plain")
        >>> asyncio.run(memory.add(item))
        >>> context = UnboundedChatCompletionContext()
        >>> _ = asyncio.run(memory.update_context(context))
        >>> print(asyncio.run(context.get_messages())[0].content.strip())
        Relevant memory content (in chronological order):
        1. User likes pizza.
    """

    def __init__(
        self, name: str | None = None, memory_contents: Sequence[MemoryContent] | None = None
    ) -> None:
        self._name = name or "default_list_memory"
        self._contents: list[MemoryContent] = list(memory_contents or [])

    @property
    def name(self) -> str:
        """The memory's identifier."""
        return self._name

    @property
    def content(self) -> list[MemoryContent]:
        """The stored items, oldest first; the list itself, so it can be edited in place."""
        return self._contents

    @content.setter
    def content(self, value: Sequence[MemoryContent]) -> None:
        self._contents = list(value)

    component_config_schema: ClassVar[type[BaseModel]] = ListMemoryConfig

    def _to_config(self) -> ListMemoryConfig:
        return ListMemoryConfig(name=self._name, memory_contents=list(self._contents))

    @classmethod
    def _from_config(cls, config: ListMemoryConfig) -> Self:
        return cls(config.name, config.memory_contents)

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Append every item to ``model_context`` as one system message.

        Returns:
            The items added (none when the memory is empty; then nothing is appended).
        """
        if not self._contents:
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        # str() as AutoGen does: bytes show as b'...', dicts as Python reprs.
        lines = [f"{index}. " + str(item.content) for index, item in enumerate(self._contents, 1)]
        text = "\nRelevant memory content (in chronological order):\n" + "\n".join(lines) + "\n"
        await model_context.add_message(SystemMessage(content=text))
        return UpdateContextResult(memories=MemoryQueryResult(results=list(self._contents)))

    async def query(
        self,
        query: str | MemoryContent = "",
        cancellation_token: CancellationToken | None = None,
        **kwargs: Any,
    ) -> MemoryQueryResult:
        """Return every item, oldest first; the query is ignored."""
        return MemoryQueryResult(results=list(self._contents))

    async def add(
        self, content: MemoryContent, cancellation_token: CancellationToken | None = None
    ) -> None:
        """Append an item."""
        self._contents.append(content)

    async def clear(self) -> None:
        """Forget every item."""
        self._contents = []

    async def close(self) -> None:
        """Nothing to release."""

    def __repr__(self) -> str:
        return f"ListMemory(name={self._name!r}, items={len(self._contents)})"


register_builtin(ListMemory, autogen="autogen_core.memory", shared_state=True)
