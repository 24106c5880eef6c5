"""What flowlib knows about OpenAI's own models: abilities and context windows.

Dated variants (``gpt-4o-2024-08-06``) and suffixed names (``gpt-4.1-mini``) resolve to
the longest known name they start with, followed by ``-`` or nothing. Azure's spelling
``gpt-35-turbo`` is included. Any other model needs an explicit ``model_info``.
"""

from __future__ import annotations

from ._client import ModelFamily, ModelInfo

__all__ = ["KNOWN_MODELS", "lookup_context_window", "lookup_model_info"]


def _info(
    family: str,
    *,
    vision: bool = True,
    function_calling: bool = True,
    json_output: bool = True,
    structured_output: bool = True,
) -> ModelInfo:
    return ModelInfo(
        vision=vision,
        function_calling=function_calling,
        json_output=json_output,
        family=family,
        structured_output=structured_output,
        multiple_system_messages=True,
    )


_TEXT_ONLY_LEGACY = {"vision": False, "structured_output": False}

KNOWN_MODELS: dict[str, tuple[ModelInfo, int]] = {
    # name: (abilities, context window in tokens)
    "gpt-5": (_info(ModelFamily.GPT_5), 400_000),
    "gpt-5-mini": (_info(ModelFamily.GPT_5), 400_000),
    "gpt-5-nano": (_info(ModelFamily.GPT_5), 400_000),
    "gpt-5-chat-latest": (_info(ModelFamily.GPT_5), 128_000),
    "gpt-4.5-preview": (_info(ModelFamily.GPT_45), 128_000),
    "gpt-4.1": (_info(ModelFamily.GPT_41), 1_047_576),
    "gpt-4.1-mini": (_info(ModelFamily.GPT_41), 1_047_576),
    "gpt-4.1-nano": (_info(ModelFamily.GPT_41), 1_047_576),
    "gpt-4o": (_info(ModelFamily.GPT_4O), 128_000),
    "gpt-4o-mini": (_info(ModelFamily.GPT_4O), 128_000),
    "chatgpt-4o-latest": (_info(ModelFamily.GPT_4O, function_calling=False), 128_000),
    "o1": (_info(ModelFamily.O1, json_output=False), 200_000),
    "o1-preview": (
        _info(ModelFamily.O1, vision=False, function_calling=False, json_output=False),
        128_000,
    ),
    "o1-mini": (
        _info(ModelFamily.O1, vision=False, function_calling=False, json_output=False),
        128_000,
    ),
    "o3": (_info(ModelFamily.O3), 200_000),
    "o3-mini": (_info(ModelFamily.O3, vision=False), 200_000),
    "o4-mini": (_info(ModelFamily.O4), 200_000),
    "gpt-4-turbo": (_info(ModelFamily.GPT_4, structured_output=False), 128_000),
    "gpt-4-turbo-preview": (_info(ModelFamily.GPT_4, **_TEXT_ONLY_LEGACY), 128_000),
    "gpt-4-1106-preview": (_info(ModelFamily.GPT_4, **_TEXT_ONLY_LEGACY), 128_000),
    "gpt-4-0125-preview": (_info(ModelFamily.GPT_4, **_TEXT_ONLY_LEGACY), 128_000),
    "gpt-4": (_info(ModelFamily.GPT_4, json_output=False, **_TEXT_ONLY_LEGACY), 8_192),
    "gpt-4-32k": (_info(ModelFamily.GPT_4, json_output=False, **_TEXT_ONLY_LEGACY), 32_768),
    "gpt-3.5-turbo": (_info(ModelFamily.GPT_35, **_TEXT_ONLY_LEGACY), 16_385),
    "gpt-35-turbo": (_info(ModelFamily.GPT_35, **_TEXT_ONLY_LEGACY), 16_385),
}
"""Known OpenAI model names with their [`ModelInfo`][flowlib.models.ModelInfo] and context
window."""


def _resolve(model: str) -> str | None:
    """Return the longest known name that ``model`` is, or starts with followed by ``-``."""
    best: str | None = None
    for name in KNOWN_MODELS:
        if (model == name or model.startswith(name + "-")) and (
            best is None or len(name) > len(best)
        ):
            best = name
    return best


def lookup_model_info(model: str) -> ModelInfo | None:
    """Return the built-in [`ModelInfo`][flowlib.models.ModelInfo] of an OpenAI model name, or None
    if unknown.

    Args:
        model: A model name such as ``"gpt-4o"`` or ``"gpt-4o-2024-08-06"``.

    Returns:
        A fresh copy of the model's info, or None.
    """
    name = _resolve(model)
    return None if name is None else ModelInfo(**KNOWN_MODELS[name][0])


def lookup_context_window(model: str) -> int | None:
    """Return the context window of an OpenAI model name in tokens, or None if unknown."""
    name = _resolve(model)
    return None if name is None else KNOWN_MODELS[name][1]
