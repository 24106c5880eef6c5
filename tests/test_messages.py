"""Tests of flowlib.messages: every message and event, the unions and MessageFactory."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter, ValidationError

import flowlib.messages as messages_module
from flowlib.code_executors import CodeBlock, CodeResult
from flowlib.memory import MemoryContent, MemoryMimeType
from flowlib.messages import (
    AgentEvent,
    BaseAgentEvent,
    BaseChatMessage,
    BaseMessage,
    BaseTextChatMessage,
    ChatMessage,
    CodeExecutionEvent,
    CodeGenerationEvent,
    HandoffMessage,
    MemoryQueryEvent,
    MessageFactory,
    ModelClientStreamingChunkEvent,
    MultiModalMessage,
    SelectSpeakerEvent,
    StopMessage,
    StructuredContentType,
    StructuredMessage,
    TextMessage,
    ThoughtEvent,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    ToolCallSummaryMessage,
    UserInputRequestedEvent,
)
from flowlib.models import (
    AssistantMessage,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    Image,
    RequestUsage,
    SystemMessage,
    UserMessage,
)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)
CALL = FunctionCall(id="call_1", arguments='{"x": 1}', name="increment")
RESULT = FunctionExecutionResult(content="2", name="increment", call_id="call_1", is_error=False)


class MyContent(BaseModel):
    text: str
    number: int


def sample_messages() -> list[BaseChatMessage | BaseAgentEvent]:
    """One instance of every built-in concrete message and event, with non-default values."""
    usage = RequestUsage(prompt_tokens=5, completion_tokens=2)
    return [
        TextMessage(content="Hello", source="user", metadata={"k": "v"}),
        MultiModalMessage(content=["Look:", Image(PNG)], source="user"),
        StopMessage(content="stop now", source="StopCondition"),
        ToolCallSummaryMessage(
            content="2", source="assistant", tool_calls=[CALL], results=[RESULT]
        ),
        HandoffMessage(
            content="Transferred to Bob.",
            target="Bob",
            source="Alice",
            context=[
                SystemMessage(content="sys"),
                UserMessage(content="hi", source="user"),
                AssistantMessage(content=[CALL], source="Alice", thought="hand off"),
                FunctionExecutionResultMessage(content=[RESULT]),
            ],
        ),
        ToolCallRequestEvent(content=[CALL], source="assistant", models_usage=usage),
        ToolCallExecutionEvent(content=[RESULT], source="assistant"),
        MemoryQueryEvent(
            content=[MemoryContent(content="User likes pizza.", mime_type=MemoryMimeType.TEXT)],
            source="assistant",
        ),
        UserInputRequestedEvent(request_id="req-1", source="user_proxy"),
        ModelClientStreamingChunkEvent(content="Two", source="assistant", full_message_id="m1"),
        ThoughtEvent(content="thinking...", source="assistant"),
        SelectSpeakerEvent(content=["Agent1", "Agent2"], source="selector"),
        CodeGenerationEvent(
            retry_attempt=0,
            content="```python\nprint(1)\n```",
            code_blocks=[CodeBlock(code="print(1)", language="python")],
            source="coder",
        ),
        CodeExecutionEvent(
            retry_attempt=1, result=CodeResult(exit_code=0, output="1\n"), source="coder"
        ),
    ]


def ids_of(items: list[BaseChatMessage | BaseAgentEvent]) -> list[str]:
    return [type(item).__name__ for item in items]


# -- public surface --------------------------------------------------------------------


def test_all_lists_the_module_definitions() -> None:
    defined = {
        name
        for name, value in vars(messages_module).items()
        if not name.startswith("_")
        and isinstance(value, type)
        and (value.__module__ + ".").startswith("flowlib.messages.")
    }
    exported = set(messages_module.__all__)
    assert defined <= exported
    assert exported - defined == {"AgentEvent", "ChatMessage", "StructuredContentType"}
    assert all(hasattr(messages_module, name) for name in exported)
    assert sorted(messages_module.__all__) == list(messages_module.__all__)


# -- base classes ----------------------------------------------------------------------


@pytest.mark.parametrize("abstract", [BaseMessage, BaseChatMessage, BaseAgentEvent])
def test_base_classes_are_abstract(abstract: type[BaseMessage]) -> None:
    with pytest.raises(TypeError, match="abstract"):
        abstract(source="x")


def test_chat_message_defaults() -> None:
    before = datetime.now(timezone.utc)
    first = TextMessage(content="a", source="user")
    second = TextMessage(content="b", source="user")
    after = datetime.now(timezone.utc)
    assert first.models_usage is None
    assert first.metadata == {}
    first.metadata["k"] = "v"
    assert second.metadata == {}  # not a shared default
    assert first.id != second.id
    assert uuid.UUID(first.id).version == 4
    assert first.created_at.tzinfo is not None
    assert first.created_at.utcoffset() == timedelta(0)
    assert before <= first.created_at <= after


def test_agent_event_defaults() -> None:
    event = ThoughtEvent(content="hmm", source="a")
    assert event.models_usage is None
    assert event.metadata == {}
    assert uuid.UUID(event.id).version == 4
    assert event.created_at.utcoffset() == timedelta(0)


def test_explicit_base_fields_are_kept() -> None:
    created = datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    msg = TextMessage(
        content="x",
        source="a",
        id="my-id",
        created_at=created,
        models_usage=RequestUsage(1, 2),
        metadata={"tag": "t"},
    )
    assert (msg.id, msg.created_at, msg.metadata) == ("my-id", created, {"tag": "t"})
    assert msg.models_usage == RequestUsage(prompt_tokens=1, completion_tokens=2)


def test_source_is_required() -> None:
    with pytest.raises(ValidationError, match="source"):
        TextMessage.model_validate({"content": "x"})


def test_metadata_values_must_be_strings() -> None:
    with pytest.raises(ValidationError):
        TextMessage.model_validate({"content": "x", "source": "a", "metadata": {"n": [1]}})


# -- repr / str ------------------------------------------------------------------------


def test_str_matches_documented_format() -> None:
    msg = TextMessage(content="Name two cities in North America.", source="user")
    assert str(msg) == (
        "source='user' models_usage=None metadata={} "
        "content='Name two cities in North America.' type='TextMessage'"
    )
    chunk = ModelClientStreamingChunkEvent(content="Two", source="assistant")
    assert str(chunk) == (
        "source='assistant' models_usage=None metadata={} content='Two' "
        "full_message_id=None type='ModelClientStreamingChunkEvent'"
    )


def test_repr_matches_documented_format() -> None:
    msg = TextMessage(
        content="hi", source="assistant", models_usage=RequestUsage(30, 23), metadata={}
    )
    assert repr(msg) == (
        "TextMessage(source='assistant', models_usage=RequestUsage(prompt_tokens=30, "
        "completion_tokens=23), metadata={}, content='hi', type='TextMessage')"
    )
    event = UserInputRequestedEvent(request_id="r", source="user_proxy")
    assert repr(event) == (
        "UserInputRequestedEvent(source='user_proxy', models_usage=None, metadata={}, "
        "request_id='r', content='', type='UserInputRequestedEvent')"
    )


# -- every concrete class --------------------------------------------------------------


@pytest.mark.parametrize("message", sample_messages(), ids=ids_of(sample_messages()))
def test_type_field_is_the_class_name(message: BaseChatMessage | BaseAgentEvent) -> None:
    assert message.type == type(message).__name__  # type: ignore[union-attr]
    with pytest.raises(ValidationError):
        type(message).model_validate({**message.dump(), "type": "SomethingElse"})


@pytest.mark.parametrize("message", sample_messages(), ids=ids_of(sample_messages()))
def test_dump_is_json_safe_and_load_round_trips(
    message: BaseChatMessage | BaseAgentEvent,
) -> None:
    dumped = message.dump()
    assert dumped["type"] == type(message).__name__
    assert isinstance(dumped["created_at"], str)
    assert datetime.fromisoformat(dumped["created_at"].replace("Z", "+00:00")) == (
        message.created_at
    )
    reloaded_json = json.loads(json.dumps(dumped))
    loaded = type(message).load(reloaded_json)
    assert loaded == message
    assert loaded.id == message.id


@pytest.mark.parametrize("message", sample_messages(), ids=ids_of(sample_messages()))
def test_factory_rebuilds_every_builtin(message: BaseChatMessage | BaseAgentEvent) -> None:
    factory = MessageFactory()
    assert factory.is_registered(type(message))
    rebuilt = factory.create(json.loads(json.dumps(message.dump())))
    assert type(rebuilt) is type(message)
    assert rebuilt == message


# -- text messages ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        TextMessage(content="Hello", source="user"),
        StopMessage(content="Stop", source="cond"),
        HandoffMessage(content="Go", target="Bob", source="Alice"),
        ToolCallSummaryMessage(content="2", source="a", tool_calls=[CALL], results=[RESULT]),
    ],
    ids=lambda m: type(m).__name__,
)
def test_text_messages_render_their_content(message: BaseTextChatMessage) -> None:
    assert message.to_text() == message.content
    assert message.to_model_text() == message.content
    assert message.to_model_message() == UserMessage(content=message.content, source=message.source)


def test_base_text_chat_message_can_be_subclassed() -> None:
    class ShoutMessage(BaseTextChatMessage):
        type: Literal["ShoutMessage"] = "ShoutMessage"

        def to_text(self) -> str:
            return self.content.upper()

    msg = ShoutMessage(content="hey", source="a")
    assert msg.to_text() == "HEY"
    assert msg.to_model_text() == "hey"
    assert msg.to_model_message() == UserMessage(content="hey", source="a")


def test_handoff_message_fields() -> None:
    msg = HandoffMessage(content="Transferred.", target="user", source="lazy_assistant")
    assert msg.target == "user"
    assert msg.context == []
    assert str(msg) == (
        "source='lazy_assistant' models_usage=None metadata={} content='Transferred.' "
        "target='user' context=[] type='HandoffMessage'"
    )


def test_handoff_context_is_a_discriminated_llm_message_list() -> None:
    msg = HandoffMessage.load(
        {
            "source": "Alice",
            "target": "Bob",
            "content": "over to you",
            "context": [
                {"type": "UserMessage", "content": "hi", "source": "user"},
                {"type": "AssistantMessage", "content": "hello", "source": "Alice"},
            ],
        }
    )
    assert [type(m) for m in msg.context] == [UserMessage, AssistantMessage]
    with pytest.raises(ValidationError):
        HandoffMessage.load(
            {"source": "a", "target": "b", "content": "c", "context": [{"content": "x"}]}
        )


def test_tool_call_summary_message_fields() -> None:
    msg = ToolCallSummaryMessage(content="2", source="a", tool_calls=[CALL], results=[RESULT])
    assert msg.tool_calls == [CALL]
    assert msg.results == [RESULT]
    with pytest.raises(ValidationError):
        ToolCallSummaryMessage.model_validate({"content": "2", "source": "a"})


# -- multimodal ------------------------------------------------------------------------


def test_multimodal_to_model_text() -> None:
    image = Image(PNG)
    msg = MultiModalMessage(content=["Describe:", image, "thanks"], source="user")
    assert msg.to_model_text() == "Describe:\n[image]\nthanks"
    assert msg.to_model_text(image_placeholder="<img>") == "Describe:\n<img>\nthanks"
    assert msg.to_model_text(image_placeholder=None) == (
        f"Describe:\n{base64.b64encode(PNG).decode()}\nthanks"
    )


def test_multimodal_to_text() -> None:
    image = Image(PNG)
    msg = MultiModalMessage(content=["Describe:", image], source="user")
    assert msg.to_text() == "Describe:\n<image>"
    assert msg.to_text(iterm=True) == (
        f"Describe:\n\x1b]1337;File=inline=1:{image.to_base64()}\x07"
    )


def test_multimodal_to_model_message_keeps_images() -> None:
    image = Image(PNG)
    msg = MultiModalMessage(content=["Describe:", image], source="user")
    model_message = msg.to_model_message()
    assert model_message == UserMessage(content=["Describe:", image], source="user")
    assert model_message.content is not msg.content  # a copy, not an alias


def test_multimodal_dump_serialises_images() -> None:
    image = Image(PNG)
    msg = MultiModalMessage(content=["Describe:", image], source="user")
    dumped = msg.dump()
    assert dumped["content"] == [
        "Describe:",
        {"data": base64.b64encode(PNG).decode(), "mime_type": "image/png"},
    ]
    loaded = MultiModalMessage.load(dumped)
    assert isinstance(loaded.content[1], Image)
    assert loaded.content == ["Describe:", image]


def test_multimodal_rejects_other_content() -> None:
    with pytest.raises(ValidationError):
        MultiModalMessage.model_validate({"content": [42], "source": "u"})


# -- structured messages ---------------------------------------------------------------


def test_structured_message_to_text_is_json_of_the_content() -> None:
    msg = StructuredMessage[MyContent](content=MyContent(text="Hello", number=42), source="agent1")
    assert msg.to_text() == '{"text": "Hello", "number": 42}'
    assert msg.to_model_text() == msg.to_text()
    assert msg.to_model_message() == UserMessage(
        content='{"text": "Hello", "number": 42}', source="agent1"
    )
    assert msg.format_string is None


def test_structured_message_format_string() -> None:
    msg = StructuredMessage[MyContent](
        content=MyContent(text="Hello", number=42),
        source="agent",
        format_string="Hello, {text} {number}!",
    )
    assert msg.to_text() == "Hello, Hello 42!"
    assert msg.to_model_text() == "Hello, Hello 42!"


def test_structured_message_type_is_the_parametrised_class_name() -> None:
    msg = StructuredMessage[MyContent](content=MyContent(text="a", number=1), source="s")
    assert msg.type == "StructuredMessage[MyContent]"
    assert msg.dump()["type"] == "StructuredMessage[MyContent]"
    assert "type='StructuredMessage[MyContent]'" in str(msg)


def test_structured_message_validates_content() -> None:
    with pytest.raises(ValidationError):
        StructuredMessage[MyContent].model_validate(
            {"content": {"text": "a", "number": "not a number"}, "source": "s"}
        )
    loaded = StructuredMessage[MyContent].model_validate(
        {"content": {"text": "a", "number": 1}, "source": "s"}
    )
    assert loaded.content == MyContent(text="a", number=1)


def test_structured_message_round_trips_through_registered_factory() -> None:
    msg = StructuredMessage[MyContent](
        content=MyContent(text="a", number=1), source="s", format_string="{text}"
    )
    factory = MessageFactory()
    assert not factory.is_registered(StructuredMessage[MyContent])
    with pytest.raises(ValueError, match="StructuredMessage\\[MyContent\\]"):
        factory.create(msg.dump())
    factory.register(StructuredMessage[MyContent])
    assert factory.is_registered(StructuredMessage[MyContent])
    rebuilt = factory.create(json.loads(json.dumps(msg.dump())))
    assert type(rebuilt) is StructuredMessage[MyContent]
    assert rebuilt == msg


def test_structured_message_is_not_in_chat_message_union() -> None:
    adapter: TypeAdapter[ChatMessage] = TypeAdapter(ChatMessage)
    msg = StructuredMessage[MyContent](content=MyContent(text="a", number=1), source="s")
    with pytest.raises(ValidationError):
        adapter.validate_python(msg.dump())


def test_structured_content_type_variable() -> None:
    assert StructuredContentType.__bound__ is BaseModel
    assert StructuredContentType.__covariant__


# -- events ----------------------------------------------------------------------------


def test_event_to_text() -> None:
    assert ToolCallRequestEvent(content=[CALL], source="a").to_text() == (
        "[FunctionCall(id='call_1', arguments='{\"x\": 1}', name='increment')]"
    )
    assert ToolCallExecutionEvent(content=[RESULT], source="a").to_text() == (
        "[FunctionExecutionResult(content='2', name='increment', call_id='call_1', is_error=False)]"
    )
    memory = MemoryContent(content="likes pizza", mime_type="text/plain")
    assert MemoryQueryEvent(content=[memory], source="a").to_text() == str([memory])
    assert UserInputRequestedEvent(request_id="r", source="u").to_text() == ""
    assert ModelClientStreamingChunkEvent(content=" cities", source="a").to_text() == " cities"
    assert ThoughtEvent(content="Let me think", source="a").to_text() == "Let me think"
    assert SelectSpeakerEvent(content=["A", "B"], source="team").to_text() == "['A', 'B']"
    generation = CodeGenerationEvent(
        retry_attempt=0, content="code here", code_blocks=[], source="c"
    )
    assert generation.to_text() == "code here"
    execution = CodeExecutionEvent(
        retry_attempt=0, result=CodeResult(exit_code=1, output="Traceback"), source="c"
    )
    assert execution.to_text() == "Traceback"


def test_user_input_requested_event_content_must_be_empty() -> None:
    event = UserInputRequestedEvent(request_id="r", source="u")
    assert event.content == ""
    with pytest.raises(ValidationError):
        UserInputRequestedEvent.model_validate({"request_id": "r", "source": "u", "content": "x"})
    with pytest.raises(ValidationError, match="request_id"):
        UserInputRequestedEvent.model_validate({"source": "u"})


def test_streaming_chunk_full_message_id() -> None:
    final = TextMessage(content="Two cities", source="assistant")
    chunk = ModelClientStreamingChunkEvent(
        content="Two", source="assistant", full_message_id=final.id
    )
    assert chunk.full_message_id == final.id
    assert ModelClientStreamingChunkEvent(content="x", source="a").full_message_id is None


def test_code_events_fields() -> None:
    block = CodeBlock(code="print(1)", language="python")
    generation = CodeGenerationEvent(
        retry_attempt=2, content="...", code_blocks=[block], source="c"
    )
    assert (generation.retry_attempt, generation.code_blocks) == (2, [block])
    execution = CodeExecutionEvent(
        retry_attempt=0, result=CodeResult(exit_code=0, output="1"), source="c"
    )
    assert execution.result.exit_code == 0


def test_memory_query_event_round_trips_binary_and_image_memory() -> None:
    event = MemoryQueryEvent(
        content=[
            MemoryContent(content=b"\x00\xff", mime_type=MemoryMimeType.BINARY),
            MemoryContent(content=Image(PNG), mime_type=MemoryMimeType.IMAGE),
            MemoryContent(content={"likes": "pizza"}, mime_type=MemoryMimeType.JSON),
        ],
        source="assistant",
    )
    loaded = MessageFactory().create(json.loads(json.dumps(event.dump())))
    assert loaded == event


# -- unions ----------------------------------------------------------------------------


def test_chat_message_union_dispatches_on_type() -> None:
    adapter: TypeAdapter[list[ChatMessage]] = TypeAdapter(list[ChatMessage])
    chats = [m for m in sample_messages() if isinstance(m, BaseChatMessage)]
    assert len(chats) == 5
    loaded = adapter.validate_python([m.dump() for m in chats])
    assert loaded == chats
    with pytest.raises(ValidationError):
        adapter.validate_python([ThoughtEvent(content="x", source="a").dump()])


def test_agent_event_union_dispatches_on_type() -> None:
    adapter: TypeAdapter[list[AgentEvent]] = TypeAdapter(list[AgentEvent])
    events = [m for m in sample_messages() if isinstance(m, BaseAgentEvent)]
    assert len(events) == 9
    loaded = adapter.validate_python([m.dump() for m in events])
    assert loaded == events
    with pytest.raises(ValidationError):
        adapter.validate_python([TextMessage(content="x", source="a").dump()])


def test_unions_in_a_model_field() -> None:
    class Transcript(BaseModel):
        messages: list[ChatMessage | AgentEvent]

    items = sample_messages()
    transcript = Transcript(messages=items)
    assert Transcript.model_validate_json(transcript.model_dump_json()) == transcript


# -- MessageFactory: custom types and errors -------------------------------------------


class CustomChat(BaseChatMessage):
    """A custom chat message with its own type literal."""

    payload: dict[str, int]
    type: Literal["CustomChat"] = "CustomChat"

    def to_text(self) -> str:
        return json.dumps(self.payload)

    def to_model_text(self) -> str:
        return self.to_text()

    def to_model_message(self) -> UserMessage:
        return UserMessage(content=self.to_model_text(), source=self.source)


class UntypedEvent(BaseAgentEvent):
    """A custom event that declares no ``type`` field."""

    progress: float

    def to_text(self) -> str:
        return f"{self.progress:.0%}"


def test_factory_creates_registered_custom_chat_message() -> None:
    factory = MessageFactory()
    msg = CustomChat(payload={"a": 1}, source="bot")
    assert not factory.is_registered(CustomChat)
    factory.register(CustomChat)
    assert factory.is_registered(CustomChat)
    rebuilt = factory.create(msg.dump())
    assert isinstance(rebuilt, CustomChat)
    assert rebuilt == msg
    assert rebuilt.to_text() == '{"a": 1}'


def test_factory_uses_class_name_for_event_without_type_field() -> None:
    factory = MessageFactory()
    event = UntypedEvent(progress=0.5, source="worker")
    dumped = event.dump()
    assert dumped["type"] == "UntypedEvent"
    factory.register(UntypedEvent)
    rebuilt = factory.create(dumped)
    assert rebuilt == event
    assert rebuilt.to_text() == "50%"


def test_factory_registration_is_per_instance() -> None:
    first, second = MessageFactory(), MessageFactory()
    first.register(CustomChat)
    assert not second.is_registered(CustomChat)
    assert second.is_registered(TextMessage)


def test_factory_register_is_idempotent() -> None:
    factory = MessageFactory()
    factory.register(CustomChat)
    factory.register(CustomChat)
    factory.register(TextMessage)
    assert factory.is_registered(CustomChat)


def test_factory_rejects_a_second_class_with_the_same_type_name() -> None:
    class TextMessage(BaseTextChatMessage):  # shadows the built-in name on purpose
        type: Literal["TextMessage"] = "TextMessage"

    factory = MessageFactory()
    assert not factory.is_registered(TextMessage)
    with pytest.raises(ValueError, match="`TextMessage` is already registered"):
        factory.register(TextMessage)


@pytest.mark.parametrize("bad", [str, int, BaseModel, UserMessage, "TextMessage"])
def test_factory_rejects_non_message_types(bad: Any) -> None:
    with pytest.raises(ValueError, match="BaseChatMessage or BaseAgentEvent"):
        MessageFactory().register(bad)


def test_factory_rejects_abstract_and_unparametrised_types() -> None:
    factory = MessageFactory()
    with pytest.raises(ValueError, match="abstract"):
        factory.register(BaseChatMessage)
    with pytest.raises(ValueError, match="StructuredMessage\\[MyContent\\]"):
        factory.register(StructuredMessage)


def test_factory_create_requires_a_type() -> None:
    with pytest.raises(ValueError, match="`type`"):
        MessageFactory().create({"source": "a", "content": "x"})


def test_factory_create_unknown_type_says_how_to_register() -> None:
    with pytest.raises(ValueError) as info:
        MessageFactory().create({"type": "CustomChat", "source": "a", "payload": {}})
    text = str(info.value)
    assert "`CustomChat`" in text
    assert "register" in text
    assert "custom_message_types" in text


def test_factory_create_reports_invalid_data() -> None:
    with pytest.raises(ValidationError):
        MessageFactory().create({"type": "TextMessage", "source": "a"})


# -- properties ------------------------------------------------------------------------

_text = st.text(max_size=50)


@given(
    content=_text,
    source=_text,
    metadata=st.dictionaries(_text, _text, max_size=3),
    usage=st.none()
    | st.builds(
        RequestUsage,
        prompt_tokens=st.integers(0, 10**6),
        completion_tokens=st.integers(0, 10**6),
    ),
)
def test_text_message_round_trip_property(
    content: str, source: str, metadata: dict[str, str], usage: RequestUsage | None
) -> None:
    msg = TextMessage(content=content, source=source, metadata=metadata, models_usage=usage)
    assert MessageFactory().create(json.loads(json.dumps(msg.dump()))) == msg
