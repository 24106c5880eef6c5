"""Agent memory: memory items, the ``Memory`` interface and ``ListMemory``."""

from ._base import Memory, MemoryQueryResult, UpdateContextResult
from ._list_memory import ListMemory
from ._types import MemoryContent, MemoryMimeType

__all__ = [
    "ListMemory",
    "Memory",
    "MemoryContent",
    "MemoryMimeType",
    "MemoryQueryResult",
    "UpdateContextResult",
]
