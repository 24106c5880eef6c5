"""What flowlib knows about model names: abilities and context windows.

The rows live in the data file ``known_models.json`` beside this module (installed with
the package); its ``source`` field names where they come from: AutoGen 0.7.5's model
tables for OpenAI-compatible endpoints (OpenAI, Gemini, Anthropic, Llama API) and for
Ollama, plus a few names of flowlib's own.

OpenAI-compatible names resolve in three steps: the name itself; an alias
(``gpt-4o`` -> ``gpt-4o-2024-08-06``, as AutoGen's pointers); else the longest known
name or alias the model starts with, followed by ``-`` (``gpt-4o-2024-12-01`` ->
``gpt-4o``, ``claude-3-7-sonnet-latest`` -> ``claude-3-7-sonnet``). Ollama names resolve
by the name before their ``:tag`` (``llama3.2:3b`` -> ``llama3.2``); a tag with its own
context window (``qwen2.5-coder:3b``) has it. Any other model needs an explicit
``model_info``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, cast

from ._client import ModelInfo

__all__ = [
    "KnownModel",
    "known_models",
    "lookup_context_window",
    "lookup_model_info",
    "lookup_ollama_context_window",
    "lookup_ollama_model_info",
    "table_source",
]

DATA_FILE = "known_models.json"

_INFO_FIELDS = (
    "vision",
    "function_calling",
    "json_output",
    "family",
    "structured_output",
    "multiple_system_messages",
)


@dataclass(frozen=True)
class KnownModel:
    """One row of the table: a model's abilities and context window."""

    info: ModelInfo
    context_window: int | None


@dataclass(frozen=True)
class _Table:
    source: str
    models: Mapping[str, KnownModel]
    aliases: Mapping[str, str]
    ollama: Mapping[str, KnownModel]
    ollama_windows: Mapping[str, int]


def _row(data: Mapping[str, Any]) -> KnownModel:
    info: dict[str, Any] = {name: data[name] for name in _INFO_FIELDS if name in data}
    window = data.get("context_window")
    return KnownModel(info=cast(ModelInfo, info), context_window=window)


@functools.cache
def _table() -> _Table:
    raw = resources.files(__package__).joinpath(DATA_FILE).read_text(encoding="utf-8")
    data = json.loads(raw)
    openai, ollama = data["openai"], data["ollama"]
    return _Table(
        source=data["source"],
        models={name: _row(row) for name, row in openai["models"].items()},
        aliases={**openai["aliases"], **openai["flowlib_aliases"]},
        ollama={name: _row(row) for name, row in ollama["models"].items()},
        ollama_windows=dict(ollama["tag_context_windows"]),
    )


def table_source() -> str:
    """Where the table's rows come from (the data file's ``source``)."""
    return _table().source


def known_models() -> dict[str, KnownModel]:
    """Every OpenAI-compatible name the table knows, aliases included, with its row."""
    table = _table()
    rows = dict(table.models)
    for alias in table.aliases:
        name = _follow(alias)
        if name is not None:
            rows[alias] = table.models[name]
    return rows


def _follow(name: str) -> str | None:
    """The table row a known name or alias stands for."""
    table = _table()
    seen: set[str] = set()
    while name not in table.models:
        if name in seen or name not in table.aliases:
            return None
        seen.add(name)
        name = table.aliases[name]
    return name


def _resolve(model: str) -> str | None:
    direct = _follow(model)
    if direct is not None:
        return direct
    table = _table()
    best: str | None = None
    for name in (*table.models, *table.aliases):
        if model.startswith(name + "-") and (best is None or len(name) > len(best)):
            best = name
    return None if best is None else _follow(best)


def lookup_model_info(model: str) -> ModelInfo | None:
    """Return the built-in [`ModelInfo`][flowlib.models.ModelInfo] of a model name an
    OpenAI-compatible endpoint serves (OpenAI, Gemini, Anthropic, Llama API), or None.

    Args:
        model: A model name such as ``"gpt-4o"``, ``"gpt-4o-2024-08-06"`` or
            ``"gemini-1.5-flash-8b"``.

    Returns:
        A fresh copy of the model's info, or None if the name is unknown.
    """
    name = _resolve(model)
    return None if name is None else ModelInfo(**_table().models[name].info)


def lookup_context_window(model: str) -> int | None:
    """Return the context window of an OpenAI-compatible model name in tokens, or None."""
    name = _resolve(model)
    return None if name is None else _table().models[name].context_window


def lookup_ollama_model_info(model: str) -> ModelInfo | None:
    """Return the built-in [`ModelInfo`][flowlib.models.ModelInfo] of an Ollama model
    name (``llama3.2``, ``deepseek-r1:8b``), or None if unknown."""
    row = _table().ollama.get(model.split(":", 1)[0])
    return None if row is None else ModelInfo(**row.info)


def lookup_ollama_context_window(model: str) -> int | None:
    """Return the context window of an Ollama model name in tokens, or None."""
    table = _table()
    if model in table.ollama_windows:
        return table.ollama_windows[model]
    row = table.ollama.get(model.split(":", 1)[0])
    return None if row is None else row.context_window
