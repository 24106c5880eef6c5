"""Translation between flowlib's model types and the Chat Completions wire format.

Pure functions with no SDK import: messages, tools, ``tool_choice`` and ``json_output`` go
out as plain dicts; finish reasons and logprobs come back as flowlib values. Token counts
come from ``tiktoken`` (a dependency of flowlib) with the model's encoding; when that
encoding cannot be loaded (tiktoken downloads it on first use, so an offline machine
without a cached copy cannot) they are estimated at four characters per token, and a
warning says so once.
"""

from __future__ import annotations

import functools
import importlib
import json
import logging
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import BaseModel

from ..errors import InvalidTypeError, InvalidValueError
from ..tools.internal import Tool, ToolSchema
from ._client import ToolChoice, ToolLike
from ._types import (
    AssistantMessage,
    ChatCompletionTokenLogprob,
    FinishReasons,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    TopLogprob,
    UserMessage,
)
from .image import Image

__all__ = [
    "count_tokens",
    "finish_reason",
    "has_images",
    "response_format_for",
    "strict_json_schema",
    "to_logprobs",
    "tool_schema",
    "wire_messages",
    "wire_tool_choice",
    "wire_tools",
]

# OpenAI accepts a message `name` of letters, digits, `_` and `-`, at most 64 long.
_VALID_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


# -- messages ---------------------------------------------------------------------------


def _user_content(content: str | list[str | Image]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, Image):
            parts.append(part.to_openai_format())
        else:
            parts.append({"type": "text", "text": part})
    return parts


def _named(wire: dict[str, Any], source: str, include_name: bool) -> dict[str, Any]:
    if include_name and _VALID_NAME.match(source):
        wire["name"] = source
    return wire


def wire_messages(
    messages: Sequence[LLMMessage], *, system_role: str = "system", include_name: bool = True
) -> list[dict[str, Any]]:
    """Render LLM messages as Chat Completions messages.

    A [`FunctionExecutionResultMessage`][flowlib.models.FunctionExecutionResultMessage] becomes one
    ``tool`` message per result. An assistant message's ``thought`` is never sent.

    Args:
        messages: The conversation.
        system_role: ``"system"``, or ``"developer"`` for models that want it.
        include_name: Send ``source`` as ``name`` on user and assistant messages when it is
            a valid OpenAI name.

    Returns:
        The wire messages.
    """
    wire: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            wire.append({"role": system_role, "content": message.content})
        elif isinstance(message, UserMessage):
            item = {"role": "user", "content": _user_content(message.content)}
            wire.append(_named(item, message.source, include_name))
        elif isinstance(message, AssistantMessage):
            if isinstance(message.content, str):
                item = {"role": "assistant", "content": message.content}
            else:
                item = {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": call.arguments},
                        }
                        for call in message.content
                    ],
                }
            wire.append(_named(item, message.source, include_name))
        elif isinstance(message, FunctionExecutionResultMessage):
            wire.extend(
                {"role": "tool", "tool_call_id": result.call_id, "content": result.content}
                for result in message.content
            )
        else:
            raise InvalidTypeError(f"Not an LLM message: {type(message).__name__}.")
    return wire


def has_images(messages: Iterable[LLMMessage]) -> bool:
    """Whether any user message carries an [`Image`][flowlib.models.Image]."""
    return any(
        isinstance(message, UserMessage)
        and not isinstance(message.content, str)
        and any(isinstance(part, Image) for part in message.content)
        for message in messages
    )


# -- tools ------------------------------------------------------------------------------


def tool_schema(tool: ToolLike) -> ToolSchema:
    """Return the schema of a [`Tool`][flowlib.tools.Tool] or a
    [`ToolSchema`][flowlib.tools.ToolSchema] dict."""
    if isinstance(tool, Tool):
        return tool.schema
    if isinstance(tool, dict) and "name" in tool:
        return tool
    raise InvalidTypeError(f"Expected a Tool or a ToolSchema dict, got {type(tool).__name__}.")


def wire_tools(tools: Sequence[ToolLike]) -> list[dict[str, Any]]:
    """Render tools as ``{"type": "function", "function": {...}}`` entries.

    Args:
        tools: Tools or tool schemas.

    Returns:
        The wire tools; ``parameters`` defaults to an empty object schema and ``strict``
        to False.
    """
    wire: list[dict[str, Any]] = []
    for tool in tools:
        schema = tool_schema(tool)
        function: dict[str, Any] = {"name": schema["name"]}
        if "description" in schema:
            function["description"] = schema["description"]
        function["parameters"] = dict(
            schema.get("parameters") or {"type": "object", "properties": {}}
        )
        function["strict"] = bool(schema.get("strict", False))
        wire.append({"type": "function", "function": function})
    return wire


def wire_tool_choice(tool_choice: ToolChoice, tools: Sequence[ToolLike]) -> str | dict[str, Any]:
    """Render ``tool_choice``: a mode string, or a named function for a forced tool.

    Raises:
        ValueError: The forced tool is not among ``tools``, or the mode is unknown.
    """
    if isinstance(tool_choice, str):
        if tool_choice not in ("auto", "required", "none"):
            raise InvalidValueError(
                f"tool_choice must be 'auto', 'required', 'none' or a Tool, not {tool_choice!r}."
            )
        return tool_choice
    name = tool_schema(tool_choice)["name"]
    if name not in {tool_schema(tool)["name"] for tool in tools}:
        raise InvalidValueError(
            f"tool_choice names the tool `{name}`, which is not in `tools`; pass it in tools too."
        )
    return {"type": "function", "function": {"name": name}}


# -- JSON output ------------------------------------------------------------------------

_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")
_SCHEMA_VALUES = ("items", "not", "additionalProperties", "contains")


def _strict(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _strict(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_strict(sub) for sub in value]
        elif key in _SCHEMA_VALUES:
            out[key] = _strict(value)
        elif key != "default":  # strict mode rejects defaults; every field is required
            out[key] = value
    if out.get("type") == "object":
        out["additionalProperties"] = False
        out["required"] = list(out.get("properties", {}))
    return out


def strict_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a pydantic model in the form OpenAI's strict mode accepts.

    Every object gets ``additionalProperties: false`` and lists all its properties as
    required; defaults are dropped (the model still applies them when validating).
    """
    result: dict[str, Any] = _strict(model.model_json_schema())
    return result


def response_format_for(output: bool | type[BaseModel]) -> dict[str, Any]:
    """The ``response_format`` for JSON mode (``True``) or a pydantic model (structured)."""
    if output is True:
        return {"type": "json_object"}
    if isinstance(output, type) and issubclass(output, BaseModel):
        name = re.sub(r"[^A-Za-z0-9_-]", "_", output.__name__)[:64]
        schema: dict[str, Any] = {"name": name, "schema": strict_json_schema(output)}
        if output.__doc__:
            schema["description"] = output.__doc__.strip()
        schema["strict"] = True
        return {"type": "json_schema", "json_schema": schema}
    raise InvalidTypeError(f"Expected True or a pydantic model class, got {output!r}.")


# -- results ----------------------------------------------------------------------------

_FINISH_REASONS: dict[str | None, FinishReasons] = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content_filter",
    "tool_calls": "function_calls",
    "function_call": "function_calls",
    "function_calls": "function_calls",
}


def finish_reason(reason: str | None, *, has_tool_calls: bool) -> FinishReasons:
    """Normalise a wire finish reason to one of the five flowlib literals.

    Tool calls with a ``stop`` or missing reason (as some compatible servers send) count
    as ``function_calls``; anything unrecognised is ``unknown``.
    """
    normalised = _FINISH_REASONS.get(reason, "unknown")
    if has_tool_calls and normalised in ("stop", "unknown"):
        return "function_calls"
    return normalised


def to_logprobs(entries: Sequence[Any] | None) -> list[ChatCompletionTokenLogprob] | None:
    """Convert the SDK's token logprobs (objects with token/logprob/bytes/top_logprobs)."""
    if entries is None:
        return None
    return [
        ChatCompletionTokenLogprob(
            token=entry.token,
            logprob=entry.logprob,
            bytes=entry.bytes,
            top_logprobs=[TopLogprob(top.logprob, top.bytes) for top in entry.top_logprobs or []]
            or None,
        )
        for entry in entries
    ]


# -- token counting ---------------------------------------------------------------------

# Per-message framing of the chat format, and a rough price of one image: 85 tokens at
# low detail, and the cost of a 1024x1024 image (4 tiles of 170 + 85) otherwise, as the
# real size is unknown without decoding the image.
_PER_MESSAGE = 3
_REPLY_PRIMER = 3
_IMAGE_LOW = 85
_IMAGE_OTHER = 765


_logger = logging.getLogger(__name__)
_estimate_logged = False


def _approximate(text: str) -> int:
    return math.ceil(len(text) / 4)


def _log_estimate(model: str, why: str) -> None:
    """Say once per process that token counts are estimates, and why."""
    global _estimate_logged
    if _estimate_logged:
        return
    _estimate_logged = True
    _logger.warning(
        "Token counts for `%s` are estimated at 4 characters per token: %s. "
        "count_tokens, remaining_tokens and TokenLimitedChatCompletionContext use the "
        "estimate.",
        model,
        why,
    )


@functools.lru_cache(maxsize=8)
def _encoding(name: str) -> Any:
    """The tiktoken encoding ``name``, or the exception loading it raised: tried once, so
    an offline machine does not try to download it again for every model."""
    tiktoken: Any = importlib.import_module("tiktoken")
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # a download that failed, a corrupt cache: estimate instead
        return exc


@functools.lru_cache(maxsize=32)
def _encoder(model: str) -> Callable[[str], int]:
    """Count tokens with the model's tiktoken encoding, else estimate (and log that once).

    Models tiktoken does not know (local models behind Ollama or vLLM, newer OpenAI names)
    are counted with ``o200k_base``, the encoding of the current OpenAI models.
    """
    try:
        tiktoken: Any = importlib.import_module("tiktoken")
    except ImportError:
        _log_estimate(model, "tiktoken is not installed (`pip install tiktoken`)")
        return _approximate
    try:
        name = tiktoken.encoding_name_for_model(model)
    except KeyError:
        name = "o200k_base"
    encoding = _encoding(name)
    if isinstance(encoding, Exception):
        exc = encoding
        _log_estimate(
            model,
            f"tiktoken could not load its `{name}` encoding ({type(exc).__name__}: {exc}); "
            "it downloads encodings on first use, so offline, set TIKTOKEN_CACHE_DIR to a "
            "directory holding a downloaded copy",
        )
        return _approximate

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return count


def count_tokens(
    messages: Sequence[LLMMessage], *, tools: Sequence[ToolLike] = (), model: str
) -> int:
    """Count the prompt tokens of ``messages`` and ``tools`` for ``model``.

    Texts are counted with the model's ``tiktoken`` encoding (``o200k_base`` for models
    tiktoken does not know); when the encoding cannot be loaded, ``ceil(len(text) / 4)``
    per text, with a warning logged once. Each message adds 3 tokens of framing; an image
    counts 85 tokens (low detail) or 765.
    """
    encode = _encoder(model)
    total = _REPLY_PRIMER if messages else 0
    for wire in wire_messages(messages):
        total += _PER_MESSAGE
        if "name" in wire:
            total += encode(wire["name"]) + 1
        content = wire.get("content")
        if isinstance(content, str):
            total += encode(content)
        elif isinstance(content, list):
            for part in content:
                if part.get("type") == "text":
                    total += encode(part["text"])
                else:
                    detail = part.get("image_url", {}).get("detail")
                    total += _IMAGE_LOW if detail == "low" else _IMAGE_OTHER
        for call in wire.get("tool_calls", []):
            total += encode(call["function"]["name"]) + encode(call["function"]["arguments"])
    for tool in wire_tools(tools):
        total += encode(json.dumps(tool["function"], sort_keys=True))
    return total
