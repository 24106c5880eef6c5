"""Shared helpers for the examples: one switch between scripted and real models.

Every example builds its agents on ``model_client(script)``. Offline (the default) that
is a ``ReplayChatCompletionClient`` playing ``script`` in order, so the example runs the
same way every time. With ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` set it is an
``OpenAIChatCompletionClient`` instead and the script is ignored:

    OPENAI_API_KEY=sk-... python examples/sequential.py
    OPENAI_BASE_URL=http://localhost:11434/v1 FLOWLIB_MODEL=llama3.2 python examples/...

``FLOWLIB_MODEL`` picks the model (default ``gpt-4o-mini``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence

from flowlib.models import (
    ChatCompletionClient,
    CreateResult,
    ModelInfo,
    OpenAIChatCompletionClient,
    ReplayChatCompletionClient,
)

__all__ = ["model_client", "uses_real_model"]


def uses_real_model() -> bool:
    """Whether the environment points at a real model (``OPENAI_API_KEY``/``_BASE_URL``)."""
    return bool(os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"))


@functools.cache
def _real_client() -> ChatCompletionClient:
    # One client for the whole process: agents share its connection pool.
    base_url = os.environ.get("OPENAI_BASE_URL") or None
    info = None
    if base_url is not None:
        # A local server's model names are unknown to flowlib, so say what it can do.
        # Ollama (>= 0.5) and vLLM accept JSON-schema response formats, which
        # structured_output.py needs.
        info = ModelInfo(
            vision=False,
            function_calling=True,
            json_output=True,
            family="unknown",
            structured_output=True,
        )
    model = os.environ.get("FLOWLIB_MODEL", "gpt-4o-mini")
    return OpenAIChatCompletionClient(model, base_url=base_url, model_info=info)


def model_client(
    script: Sequence[str | CreateResult], *, latency: float = 0.0
) -> ChatCompletionClient:
    """A model client: scripted offline, real when the environment says so.

    Args:
        script: The answers a scripted model gives, in order (strings, or
            ``flowlib.testing.tool_calls(...)`` replies).
        latency: Seconds the scripted model takes per answer (to show concurrency).

    Returns:
        A ``ReplayChatCompletionClient``, or the shared ``OpenAIChatCompletionClient``
        when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set.
    """
    if uses_real_model():
        return _real_client()
    return ReplayChatCompletionClient(script, latency=latency)
