"""The ``Memory`` interface: a store an agent queries to enrich its model context before
each inference, and the results it returns."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pydantic import BaseModel

from .._cancellation import CancellationToken
from ..model_context import ChatCompletionContext
from ._types import MemoryContent

__all__ = ["Memory", "MemoryQueryResult", "UpdateContextResult"]


class MemoryQueryResult(BaseModel):
    """What a memory query found.

    Attributes:
        results: The memory items, most relevant (or, for a list memory, oldest) first.
    """

    results: list[MemoryContent]


class UpdateContextResult(BaseModel):
    """What [`Memory.update_context`][flowlib.memory.Memory.update_context] added to a model
    context.

    Attributes:
        memories: The memory items that were added.
    """

    memories: MemoryQueryResult


class Memory(ABC):
    """A store of memory items that can enrich a model context.

    Before each inference an agent calls [`update_context`][flowlib.memory.Memory.update_context] on
    each of its memories and reports the items added in a ``MemoryQueryEvent``.
    """

    component_type: ClassVar[str] = "memory"

    @abstractmethod
    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Add relevant memories to ``model_context`` and return what was added.

        An implementation that returns ``None`` is read as "nothing added" (no
        ``MemoryQueryEvent``), as AutoGen reads it.
        """

    @abstractmethod
    async def query(
        self,
        query: str | MemoryContent,
        cancellation_token: CancellationToken | None = None,
        **kwargs: Any,
    ) -> MemoryQueryResult:
        """Return the memory items relevant to ``query``."""

    @abstractmethod
    async def add(
        self, content: MemoryContent, cancellation_token: CancellationToken | None = None
    ) -> None:
        """Store a memory item."""

    @abstractmethod
    async def clear(self) -> None:
        """Forget every memory item."""

    @abstractmethod
    async def close(self) -> None:
        """Release the resources the memory holds."""
