"""ModelInfo, validate_model_info, ModelFamily and the deprecated capabilities."""

from __future__ import annotations

import typing

import pytest

from flowlib.models import (
    ModelCapabilities,
    ModelFamily,
    ModelInfo,
    ReplayChatCompletionClient,
    validate_model_info,
)

REQUIRED = ["vision", "function_calling", "json_output", "family", "structured_output"]
FULL = ModelInfo(
    vision=True, function_calling=True, json_output=True, family="unknown", structured_output=True
)


def test_model_info_is_a_typed_dict() -> None:
    assert FULL == {
        "vision": True,
        "function_calling": True,
        "json_output": True,
        "family": "unknown",
        "structured_output": True,
    }
    assert set(typing.get_type_hints(ModelInfo)) == {*REQUIRED, "multiple_system_messages"}
    assert set(typing.get_type_hints(ModelCapabilities)) == {
        "vision",
        "function_calling",
        "json_output",
    }


def test_validate_accepts_complete_info() -> None:
    validate_model_info(FULL)
    validate_model_info(ModelInfo(**FULL, multiple_system_messages=False))
    validate_model_info(ModelInfo(**{**FULL, "family": "any custom family"}))


def test_missing_structured_output_warns_and_counts_as_false() -> None:
    # The older documents' model_info examples have no structured_output field.
    info = {key: value for key, value in FULL.items() if key != "structured_output"}
    with pytest.warns(UserWarning, match="structured_output"):
        validate_model_info(info)  # type: ignore[arg-type]


def test_model_info_required_keys_are_visible_at_runtime() -> None:
    assert ModelInfo.__required_keys__ >= {"vision", "function_calling", "json_output", "family"}


@pytest.mark.parametrize("missing", [k for k in REQUIRED if k != "structured_output"])
def test_validate_names_each_missing_field(missing: str) -> None:
    info = {key: value for key, value in FULL.items() if key != missing}
    with pytest.raises(ValueError, match=missing) as caught:
        validate_model_info(info)  # type: ignore[arg-type]
    assert "'structured_output': True" in str(caught.value)  # shows a complete example


def test_validate_lists_all_missing_fields() -> None:
    with pytest.raises(ValueError, match="vision, function_calling, json_output, family"):
        validate_model_info({})  # type: ignore[typeddict-item]


def test_family_constants_match_the_any_literal() -> None:
    constants = {
        value
        for name, value in vars(ModelFamily).items()
        if name.isupper() and name != "ANY" and isinstance(value, str)
    }
    assert set(typing.get_args(ModelFamily.ANY)) == constants
    assert len(constants) == 33
    assert ModelFamily.GPT_4O == "gpt-4o"
    assert ModelFamily.R1 == "r1"
    assert ModelFamily.UNKNOWN == "unknown"
    assert ModelFamily.CODESRAL == "codestral"
    assert ModelFamily.CLAUDE_3_5_SONNET == "claude-3-5-sonnet"
    assert ModelFamily.GEMINI_2_5_FLASH == "gemini-2.5-flash"
    assert ModelFamily.LLAMA_4_SCOUT == "llama-4-scout"


def test_model_family_is_not_instantiable() -> None:
    with pytest.raises(TypeError, match="namespace"):
        ModelFamily()


@pytest.mark.parametrize(
    ("family", "expected"),
    [
        (ModelFamily.GPT_5, "openai"),
        (ModelFamily.GPT_41, "openai"),
        (ModelFamily.GPT_45, "openai"),
        (ModelFamily.GPT_4O, "openai"),
        (ModelFamily.O1, "openai"),
        (ModelFamily.O3, "openai"),
        (ModelFamily.O4, "openai"),
        (ModelFamily.GPT_4, "openai"),
        (ModelFamily.GPT_35, "openai"),
        (ModelFamily.CLAUDE_3_HAIKU, "claude"),
        (ModelFamily.CLAUDE_4_SONNET, "claude"),
        (ModelFamily.GEMINI_1_5_PRO, "gemini"),
        (ModelFamily.GEMINI_2_0_FLASH, "gemini"),
        (ModelFamily.LLAMA_3_3_70B, "llama"),
        (ModelFamily.LLAMA_4_MAVERICK, "llama"),
        (ModelFamily.MISTRAL, "mistral"),
        (ModelFamily.CODESRAL, "mistral"),
        (ModelFamily.OPEN_CODESRAL_MAMBA, "mistral"),
        (ModelFamily.MINISTRAL, "mistral"),
        (ModelFamily.PIXTRAL, "mistral"),
        (ModelFamily.R1, None),
        (ModelFamily.UNKNOWN, None),
        ("some-new-model", None),
    ],
)
def test_family_helpers(family: str, expected: str | None) -> None:
    answers = {
        "openai": ModelFamily.is_openai(family),
        "claude": ModelFamily.is_claude(family),
        "gemini": ModelFamily.is_gemini(family),
        "llama": ModelFamily.is_llama(family),
        "mistral": ModelFamily.is_mistral(family),
    }
    assert [name for name, answer in answers.items() if answer] == ([expected] if expected else [])


def test_capabilities_is_deprecated() -> None:
    info = ModelInfo(
        vision=False, function_calling=True, json_output=False, family="x", structured_output=True
    )
    client = ReplayChatCompletionClient([], model_info=info)
    with pytest.warns(DeprecationWarning, match="model_info"):
        capabilities = client.capabilities
    assert capabilities == {"vision": False, "function_calling": True, "json_output": False}
