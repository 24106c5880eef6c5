"""StructuredMessageFactory: structured message classes from a model or a JSON schema,
dumped and loaded as a component (AutoGen's ``autogen_agentchat.messages`` name)."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel, Field, ValidationError

from flowlib.component import load_component
from flowlib.errors import ArgumentTypeError, FlowlibError, InvalidArgumentError
from flowlib.messages import MessageFactory, StructuredMessage, StructuredMessageFactory


class Address(BaseModel):
    city: str
    zip_code: str | None = None


class Person(BaseModel):
    """A person."""

    name: str = Field(description="Full name")
    age: int
    height: float = 1.7
    tags: list[str] = []
    role: Literal["admin", "user"] = "user"
    home: Address
    past: list[Address] = []
    nickname: str | None = None


def test_from_a_model() -> None:
    factory = StructuredMessageFactory(input_model=Person, format_string="{name} ({age})")
    assert factory.ContentModel is Person
    assert factory.StructuredMessage is StructuredMessage[Person]
    message = factory.StructuredMessage(
        content=Person(name="Ada", age=36, home=Address(city="London")),
        source="agent",
        format_string=factory.format_string,
    )
    assert message.to_text() == "Ada (36)"


def test_dump_and_load_rebuild_an_equivalent_content_model() -> None:
    factory = StructuredMessageFactory(input_model=Person, format_string="{name}")
    dumped = json.loads(json.dumps(factory.dump_component().model_dump(mode="json")))
    assert dumped["provider"] == "flowlib.messages.StructuredMessageFactory"
    assert dumped["component_type"] == "structured_message"
    assert dumped["config"]["content_model_name"] == "Person"

    loaded = StructuredMessageFactory.load_component(dumped)
    model = loaded.ContentModel
    assert model.__name__ == "Person"
    assert loaded.format_string == "{name}"
    person = model.model_validate(
        {"name": "Ada", "age": 36, "home": {"city": "London"}, "past": [{"city": "Paris"}]}
    )
    assert person.model_dump() == {
        "name": "Ada",
        "age": 36,
        "height": 1.7,
        "tags": [],
        "role": "user",
        "home": {"city": "London", "zip_code": None},
        "past": [{"city": "Paris", "zip_code": None}],
        "nickname": None,
    }
    with pytest.raises(ValidationError):
        model.model_validate({"name": "Ada", "age": "old", "home": {"city": "x"}})
    with pytest.raises(ValidationError):
        model.model_validate({"name": "Ada", "age": 3, "home": {"city": "x"}, "role": "root"})
    with pytest.raises(ValidationError):
        model.model_validate({"name": "Ada", "age": 3})  # `home` is required
    assert model.model_json_schema()["properties"]["name"]["description"] == "Full name"

    # The loaded class's messages round-trip through a MessageFactory that knows it.
    factory_of_messages = MessageFactory()
    factory_of_messages.register(loaded.StructuredMessage)
    message = loaded.StructuredMessage(content=person, source="agent")
    assert factory_of_messages.create(message.dump()) == message


def test_an_autogen_config_loads() -> None:
    config = {
        "provider": "autogen_agentchat.messages.StructuredMessageFactory",
        "component_type": "structured_message",
        "config": {
            "json_schema": {
                "type": "object",
                "properties": {"field1": {"type": "string"}, "field2": {"type": "integer"}},
                "required": ["field1", "field2"],
            },
            "format_string": "This is a string {field1} and this is an int {field2}",
            "content_model_name": "TestContent",
        },
    }
    loaded = load_component(config, StructuredMessageFactory)
    message = loaded.StructuredMessage(
        source="test_agent",
        content=loaded.ContentModel(field1="dyn agent", field2=43),
        format_string=loaded.format_string,
    )
    assert message.to_model_text() == "This is a string dyn agent and this is an int 43"
    assert message.type == "StructuredMessage[TestContent]"


def test_bad_arguments_are_named() -> None:
    with pytest.raises(InvalidArgumentError, match="exactly one of `json_schema` and"):
        StructuredMessageFactory()
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        StructuredMessageFactory(Person.model_json_schema(), input_model=Person)
    with pytest.raises(ArgumentTypeError, match="`input_model` must be a pydantic model"):
        StructuredMessageFactory(input_model=dict)  # type: ignore[arg-type]
    bad = {"type": "object", "properties": {"when": {"type": "string"}, "x": {"not": {}}}}
    with pytest.raises(InvalidArgumentError, match=r"`\$\.properties\.x`") as raised:
        StructuredMessageFactory(bad)
    assert raised.value.argument == "json_schema"
    assert isinstance(raised.value, FlowlibError) and isinstance(raised.value, ValueError)
    with pytest.raises(InvalidArgumentError, match="expected an object schema"):
        StructuredMessageFactory({"type": "string"})
    recursive = {
        "$ref": "#/$defs/Node",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"next": {"$ref": "#/$defs/Node"}},
            }
        },
        "type": "object",
        "properties": {"head": {"$ref": "#/$defs/Node"}},
    }
    with pytest.raises(InvalidArgumentError, match="recursive"):
        StructuredMessageFactory(recursive)
