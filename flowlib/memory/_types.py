"""Value types of agent memory: a memory item and its MIME types."""

from __future__ import annotations

import base64
from enum import Enum
from typing import Any

from pydantic import BaseModel, field_serializer, field_validator

from ..models import Image

__all__ = ["MemoryContent", "MemoryMimeType"]

# JSON has no bytes: binary content is dumped as {_BYTES_KEY: <base64>} and read back
# from that exact shape, so that a dump of bytes loads as bytes rather than as text.
_BYTES_KEY = "$bytes_base64"


class MemoryMimeType(str, Enum):
    """The MIME types a memory item commonly holds."""

    TEXT = "text/plain"
    JSON = "application/json"
    MARKDOWN = "text/markdown"
    IMAGE = "image/*"
    BINARY = "application/octet-stream"


class MemoryContent(BaseModel):
    """One item stored in (or retrieved from) a memory.

    Attributes:
        content: The item: text, bytes, a JSON-like dict or an [`Image`][flowlib.models.Image].
        mime_type: What the content is; a [`MemoryMimeType`][flowlib.memory.MemoryMimeType] or any
            MIME string.
        metadata: Free-form data about the item (source, score, ...).

    Examples:
        >>> item = MemoryContent(content="User likes pizza.", mime_type="text/plain")
        >>> item.mime_type == MemoryMimeType.TEXT
        True
    """

    content: str | bytes | dict[str, Any] | Image
    mime_type: MemoryMimeType | str
    metadata: dict[str, Any] | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _decode_bytes(cls, value: Any) -> Any:
        if isinstance(value, dict) and len(value) == 1 and _BYTES_KEY in value:
            encoded = value[_BYTES_KEY]
            if isinstance(encoded, str):
                return base64.b64decode(encoded)
        return value

    @field_serializer("content", when_used="json")
    def _encode_bytes(self, value: str | bytes | dict[str, Any] | Image) -> Any:
        if isinstance(value, bytes):
            return {_BYTES_KEY: base64.b64encode(value).decode("ascii")}
        if isinstance(value, Image):
            return {"data": value.to_base64(), "mime_type": value.mime_type}
        return value
