"""Agent memory: memory items and (later) the memories that store and retrieve them."""

from ._types import MemoryContent, MemoryMimeType

__all__ = [
    "MemoryContent",
    "MemoryMimeType",
]
