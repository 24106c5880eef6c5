"""Tests of the model-side value types, Image, and the memory / code-execution value types."""

from __future__ import annotations

import base64
import json
import struct
import sys
import types
import zlib
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

import flowlib.code_executors
import flowlib.memory
import flowlib.models
from flowlib.code_executors import CodeBlock, CodeResult
from flowlib.memory import MemoryContent, MemoryMimeType
from flowlib.models import (
    AssistantMessage,
    ChatCompletionTokenLogprob,
    CreateResult,
    FinishReasons,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    Image,
    LLMMessage,
    RequestUsage,
    SystemMessage,
    TopLogprob,
    UserMessage,
)


def make_png(width: int = 1, height: int = 1) -> bytes:
    """Build a valid, tiny RGB PNG without Pillow."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        body = kind + payload
        return struct.pack(">I", len(payload)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


PNG = make_png()
JPEG = b"\xff\xd8\xff\xe0" + bytes(16)
GIF = b"GIF89a" + bytes(16)
WEBP = b"RIFF" + bytes(4) + b"WEBPVP8 " + bytes(8)


# -- public surface --------------------------------------------------------------------


@pytest.mark.parametrize(
    "module", [flowlib.models, flowlib.memory, flowlib.code_executors], ids=lambda m: m.__name__
)
def test_all_matches_public_names(module: types.ModuleType) -> None:
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert set(module.__all__) == public
    assert sorted(module.__all__) == list(module.__all__)


# -- function calls, results, usage ----------------------------------------------------


def test_function_call_fields_and_repr() -> None:
    call = FunctionCall(id="call_1", arguments='{"query":"AutoGen"}', name="web_search")
    assert (call.id, call.arguments, call.name) == ("call_1", '{"query":"AutoGen"}', "web_search")
    assert repr(call) == (
        "FunctionCall(id='call_1', arguments='{\"query\":\"AutoGen\"}', name='web_search')"
    )


def test_dataclass_like_types_accept_positional_arguments() -> None:
    assert FunctionCall("c", "{}", "f") == FunctionCall(id="c", arguments="{}", name="f")
    assert RequestUsage(15, 7) == RequestUsage(prompt_tokens=15, completion_tokens=7)
    assert TopLogprob(-0.5, [104]) == TopLogprob(logprob=-0.5, bytes=[104])


def test_positional_arguments_behave_like_a_dataclass() -> None:
    with pytest.raises(TypeError, match="at most 3 positional arguments"):
        FunctionCall("c", "{}", "f", "extra")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'id'"):
        FunctionCall("c", id="d", arguments="{}", name="f")  # type: ignore[misc]
    with pytest.raises(ValidationError):
        RequestUsage(1)  # type: ignore[call-arg]


def test_function_call_validates_from_dict() -> None:
    call = FunctionCall.model_validate({"id": "c", "arguments": "{}", "name": "f"})
    assert call == FunctionCall("c", "{}", "f")
    with pytest.raises(ValidationError):
        FunctionCall.model_validate({"id": "c", "name": "f"})


def test_function_execution_result_defaults_and_repr() -> None:
    result = FunctionExecutionResult(content="None", name="approve", call_id="call_Q")
    assert result.is_error is None
    errored = FunctionExecutionResult(content="boom", name="f", call_id="", is_error=True)
    assert errored.is_error is True
    assert repr(result.model_copy(update={"is_error": False})) == (
        "FunctionExecutionResult(content='None', name='approve', call_id='call_Q', is_error=False)"
    )


def test_request_usage_repr_and_validation() -> None:
    usage = RequestUsage(prompt_tokens=15, completion_tokens=7)
    assert repr(usage) == "RequestUsage(prompt_tokens=15, completion_tokens=7)"
    assert RequestUsage.model_validate({"prompt_tokens": 1, "completion_tokens": 2}) == (
        RequestUsage(1, 2)
    )
    with pytest.raises(ValidationError):
        RequestUsage.model_validate({"prompt_tokens": "many", "completion_tokens": 2})


# -- LLM messages ----------------------------------------------------------------------


def test_system_message() -> None:
    msg = SystemMessage(content="Be brief.")
    assert msg.type == "SystemMessage"
    assert msg.model_dump() == {"content": "Be brief.", "type": "SystemMessage"}


def test_user_message_text_and_multimodal() -> None:
    text = UserMessage(content="What is the capital of France?", source="user")
    assert text.type == "UserMessage"
    assert text.content == "What is the capital of France?"
    image = Image(PNG)
    multi = UserMessage(content=["Describe this:", image], source="user")
    assert multi.content == ["Describe this:", image]
    assert isinstance(multi.content, list) and isinstance(multi.content[1], Image)


def test_user_message_requires_source() -> None:
    with pytest.raises(ValidationError):
        UserMessage.model_validate({"content": "hi"})


def test_assistant_message_text_calls_and_thought() -> None:
    text = AssistantMessage(content="Paris.", source="assistant")
    assert text.thought is None
    assert text.type == "AssistantMessage"
    calls = AssistantMessage(
        content=[FunctionCall("c1", "{}", "f")], source="assistant", thought="Let me check."
    )
    assert calls.content == [FunctionCall("c1", "{}", "f")]
    assert calls.thought == "Let me check."


def test_function_execution_result_message() -> None:
    msg = FunctionExecutionResultMessage(
        content=[FunctionExecutionResult(content="6", name="add", call_id="c1")]
    )
    assert msg.type == "FunctionExecutionResultMessage"
    assert msg.content[0].content == "6"


def test_llm_message_union_is_discriminated_on_type() -> None:
    adapter: TypeAdapter[list[LLMMessage]] = TypeAdapter(list[LLMMessage])
    messages: list[LLMMessage] = [
        SystemMessage(content="sys"),
        UserMessage(content=["look", Image(PNG)], source="user"),
        AssistantMessage(content=[FunctionCall("c", "{}", "f")], source="a", thought="t"),
        FunctionExecutionResultMessage(
            content=[FunctionExecutionResult(content="1", name="f", call_id="c", is_error=False)]
        ),
    ]
    dumped = adapter.dump_python(messages, mode="json")
    json.dumps(dumped)  # JSON-safe
    assert adapter.validate_python(dumped) == messages
    assert adapter.validate_json(adapter.dump_json(messages)) == messages
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        adapter.validate_python([{"type": "ToolMessage", "content": "x"}])
    with pytest.raises(ValidationError):
        adapter.validate_python([{"content": "no type"}])


# -- results and logprobs --------------------------------------------------------------


def test_create_result_repr_matches_documents() -> None:
    result = CreateResult(
        finish_reason="stop",
        content="The capital of France is Paris.",
        usage=RequestUsage(prompt_tokens=15, completion_tokens=7),
        cached=False,
    )
    assert repr(result) == (
        "CreateResult(finish_reason='stop', content='The capital of France is Paris.', "
        "usage=RequestUsage(prompt_tokens=15, completion_tokens=7), cached=False, "
        "logprobs=None, thought=None)"
    )
    assert str(result) == (
        "finish_reason='stop' content='The capital of France is Paris.' "
        "usage=RequestUsage(prompt_tokens=15, completion_tokens=7) cached=False "
        "logprobs=None thought=None"
    )


@pytest.mark.parametrize(
    "reason", ["stop", "length", "function_calls", "content_filter", "unknown"]
)
def test_create_result_accepts_every_finish_reason(reason: FinishReasons) -> None:
    result = CreateResult(finish_reason=reason, content="", usage=RequestUsage(0, 0), cached=True)
    assert result.finish_reason == reason


def test_create_result_rejects_unknown_finish_reason() -> None:
    with pytest.raises(ValidationError):
        CreateResult.model_validate(
            {
                "finish_reason": "tool_calls",
                "content": "",
                "usage": {"prompt_tokens": 0, "completion_tokens": 0},
                "cached": False,
            }
        )


def test_create_result_with_calls_logprobs_and_thought_round_trips() -> None:
    result = CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall("c", '{"x": 1}', "f")],
        usage=RequestUsage(3, 4),
        cached=False,
        logprobs=[
            ChatCompletionTokenLogprob(
                token="hi", logprob=-0.1, top_logprobs=[TopLogprob(-0.1), TopLogprob(-2.0, [104])]
            )
        ],
        thought="reasoning",
    )
    assert result.logprobs is not None
    assert result.logprobs[0].bytes is None
    assert result.logprobs[0].top_logprobs == [TopLogprob(-0.1), TopLogprob(-2.0, [104])]
    assert CreateResult.model_validate_json(result.model_dump_json()) == result


# -- Image -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "mime_type"),
    [(PNG, "image/png"), (JPEG, "image/jpeg"), (GIF, "image/gif"), (WEBP, "image/webp")],
)
def test_image_detects_mime_type(data: bytes, mime_type: str) -> None:
    image = Image(data)
    assert image.mime_type == mime_type
    assert image.data == data


def test_image_explicit_mime_type_and_undetectable_bytes() -> None:
    assert Image(b"raw", mime_type="image/x-custom").mime_type == "image/x-custom"
    with pytest.raises(ValueError, match="mime_type="):
        Image(b"not an image")
    with pytest.raises(TypeError, match="encoded image bytes or a PIL image"):
        Image("a string")


def test_image_base64_and_data_uri() -> None:
    image = Image(PNG)
    encoded = base64.b64encode(PNG).decode()
    assert image.to_base64() == encoded
    assert image.data_uri == f"data:image/png;base64,{encoded}"
    assert Image.from_base64(encoded) == image
    assert Image.from_uri(image.data_uri) == image
    assert Image.from_base64(encoded, mime_type="image/x-png").mime_type == "image/x-png"


def test_image_from_uri_rejects_non_data_uris() -> None:
    with pytest.raises(ValueError, match="base64 data URI"):
        Image.from_uri("https://example.com/cat.png")
    with pytest.raises(ValueError, match="not an image"):
        Image.from_uri("data:text/plain;base64,aGk=")
    with pytest.raises(ValueError, match="Invalid base64"):
        Image.from_uri("data:image/png;base64,***")


def test_image_from_file(tmp_path: Path) -> None:
    path = tmp_path / "pixel.png"
    path.write_bytes(PNG)
    assert Image.from_file(path) == Image(PNG)
    assert Image.from_file(str(path)).mime_type == "image/png"


def test_image_from_file_uses_extension_when_bytes_are_unknown(tmp_path: Path) -> None:
    tiff = tmp_path / "scan.tiff"
    tiff.write_bytes(b"II*\x00" + bytes(8))
    assert Image.from_file(tiff).mime_type == "image/tiff"
    unknown = tmp_path / "notes.txt"
    unknown.write_bytes(b"hello")
    with pytest.raises(ValueError, match=r"notes\.txt"):
        Image.from_file(unknown)


@pytest.mark.parametrize("detail", ["auto", "high", "low"])
def test_image_to_openai_format(detail: Any) -> None:
    image = Image(PNG)
    assert image.to_openai_format(detail=detail) == {
        "type": "image_url",
        "image_url": {"url": image.data_uri, "detail": detail},
    }
    assert image.to_openai_format()["image_url"]["detail"] == "auto"


def test_image_equality_hash_and_repr() -> None:
    assert Image(PNG) == Image(PNG)
    assert Image(PNG) != Image(GIF)
    assert Image(PNG) != Image(PNG, mime_type="image/x-other")
    assert len({Image(PNG), Image(PNG), Image(GIF)}) == 2
    assert Image(PNG).__eq__("png") is NotImplemented
    assert repr(Image(PNG)) == f"Image(mime_type='image/png', size={len(PNG)})"


class _WithImage(BaseModel):
    image: Image
    parts: list[str | Image] = []


def test_image_as_pydantic_field_round_trips() -> None:
    image = Image(PNG)
    model = _WithImage(image=image, parts=["text", image])
    python_dump = model.model_dump()
    assert python_dump["image"] is image  # python mode keeps the object
    json_dump = model.model_dump(mode="json")
    assert json_dump["image"] == {"data": image.to_base64(), "mime_type": "image/png"}
    assert json_dump["parts"][0] == "text"
    json.dumps(json_dump)
    assert _WithImage.model_validate(json_dump) == model
    assert _WithImage.model_validate_json(model.model_dump_json()) == model


def test_image_field_rejects_other_shapes() -> None:
    with pytest.raises(ValidationError, match="expected an Image"):
        _WithImage.model_validate({"image": {"data": "abc"}})
    with pytest.raises(ValidationError, match="expected an Image"):
        _WithImage.model_validate({"image": 42})


def test_image_json_schema() -> None:
    schema = _WithImage.model_json_schema()
    image_schema = schema["properties"]["image"]
    assert image_schema["type"] == "object"
    assert image_schema["required"] == ["data", "mime_type"]


def _fake_pil(monkeypatch: pytest.MonkeyPatch) -> type:
    """Install a minimal stand-in for ``PIL.Image`` in ``sys.modules``."""
    pil_image_module = types.ModuleType("PIL.Image")

    class FakePILImage:
        def __init__(self, payload: bytes) -> None:
            self.payload = payload

        def save(self, fp: Any, format: str) -> None:
            assert format == "PNG"
            fp.write(self.payload)

    FakePILImage.__module__ = "PIL.Image"
    FakePILImage.__name__ = FakePILImage.__qualname__ = "Image"

    def open_image(fp: Any) -> FakePILImage:
        return FakePILImage(fp.read())

    pil_image_module.Image = FakePILImage  # type: ignore[attr-defined]
    pil_image_module.open = open_image  # type: ignore[attr-defined]
    pil_package = types.ModuleType("PIL")
    pil_package.Image = pil_image_module  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "PIL", pil_package)
    monkeypatch.setitem(sys.modules, "PIL.Image", pil_image_module)
    return FakePILImage


def test_image_from_pil_with_stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cls = _fake_pil(monkeypatch)
    pil = fake_cls(PNG)
    assert Image.from_pil(pil) == Image(PNG)
    assert Image(pil) == Image(PNG)  # the documented `Image(pil_image)` form
    assert Image(PNG).image.payload == PNG
    with pytest.raises(TypeError, match="takes a PIL image"):
        Image.from_pil(b"bytes")


def test_image_pil_paths_say_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)
    monkeypatch.setitem(sys.modules, "PIL.Image", None)
    with pytest.raises(ImportError, match="pip install pillow"):
        Image.from_pil(object())
    with pytest.raises(ImportError, match="pip install pillow"):
        _ = Image(PNG).image


def test_image_with_real_pillow() -> None:
    pil_image_module = pytest.importorskip("PIL.Image")
    pil = pil_image_module.new("RGB", (2, 3), (255, 0, 0))
    image = Image.from_pil(pil)
    assert image.mime_type == "image/png"
    assert image.image.size == (2, 3)
    assert Image(pil) == image


# -- memory and code execution value types ---------------------------------------------


def test_memory_mime_type_values() -> None:
    assert {m.name: m.value for m in MemoryMimeType} == {
        "TEXT": "text/plain",
        "JSON": "application/json",
        "MARKDOWN": "text/markdown",
        "IMAGE": "image/*",
        "BINARY": "application/octet-stream",
    }
    assert MemoryMimeType("text/plain") is MemoryMimeType.TEXT
    as_text: str = MemoryMimeType.TEXT  # a str enum: usable wherever a MIME string is
    assert as_text == "text/plain"


def test_memory_content_fields() -> None:
    item = MemoryContent(content="User likes pizza.", mime_type="text/plain")
    assert item.metadata is None
    assert item.mime_type == MemoryMimeType.TEXT
    custom = MemoryContent(content="x", mime_type="application/x-yaml", metadata={"score": 0.5})
    assert custom.mime_type == "application/x-yaml"
    assert custom.metadata == {"score": 0.5}


@pytest.mark.parametrize(
    ("content", "mime_type"),
    [
        ("text", MemoryMimeType.TEXT),
        (b"\xff\x00\xfe", MemoryMimeType.BINARY),
        ({"likes": ["pizza"], "n": 1}, MemoryMimeType.JSON),
        (Image(PNG), MemoryMimeType.IMAGE),
    ],
    ids=["str", "bytes", "dict", "image"],
)
def test_memory_content_json_round_trip(content: Any, mime_type: MemoryMimeType) -> None:
    item = MemoryContent(content=content, mime_type=mime_type, metadata={"k": "v"})
    dumped = item.model_dump(mode="json")
    json.dumps(dumped)
    loaded = MemoryContent.model_validate(dumped)
    assert loaded == item
    assert type(loaded.content) is type(content)
    assert MemoryContent.model_validate_json(item.model_dump_json()) == item


def test_code_block_and_result() -> None:
    block = CodeBlock(code="print('hi')", language="python")
    assert (block.code, block.language) == ("print('hi')", "python")
    result = CodeResult(exit_code=0, output="hi\n")
    assert (result.exit_code, result.output) == (0, "hi\n")
    assert CodeResult.model_validate(result.model_dump()) == result
    with pytest.raises(ValidationError):
        CodeBlock.model_validate({"code": "x"})


def test_request_usage_adds_up() -> None:
    total = RequestUsage(prompt_tokens=10, completion_tokens=3) + RequestUsage(5, 2)
    assert (total.prompt_tokens, total.completion_tokens) == (15, 5)
    with pytest.raises(TypeError):
        RequestUsage(1, 1) + 3  # type: ignore[operator]
