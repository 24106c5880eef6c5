"""A model client's token stream, as the events an agent yields."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing

from ..base import CancellationToken
from ..messages import ModelClientStreamingChunkEvent
from ..models import CreateResult

__all__ = ["stream_events"]


async def stream_events(
    chunks: AsyncGenerator[str | CreateResult, None],
    *,
    message_id: str,
    source: str,
    token: CancellationToken,
    missing: Exception,
) -> AsyncGenerator[ModelClientStreamingChunkEvent | CreateResult, None]:
    """Yield the text chunks of ``chunks`` (a ``create_stream`` call) as
    ``ModelClientStreamingChunkEvent``\\ s of ``message_id``, then its ``CreateResult``.

    The stream is closed when this ends, early or not.

    Raises:
        asyncio.CancelledError: ``token`` was cancelled between two chunks.
        Exception: ``missing``, if the stream ends without a ``CreateResult``.
    """
    final: CreateResult | None = None
    async with aclosing(chunks):
        async for chunk in chunks:
            if token.is_cancelled():
                raise asyncio.CancelledError()
            if isinstance(chunk, CreateResult):
                final = chunk
            else:
                yield ModelClientStreamingChunkEvent(
                    content=chunk, full_message_id=message_id, source=source
                )
    if final is None:
        raise missing
    yield final
