"""The one component protocol: ``Component[Config]``, explicit registration, the field
helpers, model contexts as components, and the lazily filled registry."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import BaseModel
from typing_extensions import Self

from flowlib.agents import AssistantAgent
from flowlib.base import TerminationCondition
from flowlib.component import (
    Component,
    ComponentLoadError,
    ComponentModel,
    ComponentRegistrationError,
    ComponentTypeError,
    UnknownProviderError,
    dump_component,
    dump_field,
    load_component,
    load_field,
    register_component,
)
from flowlib.conditions import MaxMessageTermination
from flowlib.errors import FlowlibError
from flowlib.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    StopMessage,
    ToolCallExecutionEvent,
)
from flowlib.model_context import (
    BufferedChatCompletionContext,
    ChatCompletionContext,
    HeadAndTailChatCompletionContext,
    TokenLimitedChatCompletionContext,
    UnboundedChatCompletionContext,
)
from flowlib.models import (
    ChatCompletionClient,
    FunctionExecutionResult,
    ReplayChatCompletionClient,
    UserMessage,
)
from flowlib.teams import RoundRobinGroupChat


def as_json(component: object) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(dump_component(component).model_dump()))
    return data


# --- the seeds' custom termination condition, with Component[Config] ---------------------


class FunctionCallTerminationConfig(BaseModel):
    """Configuration for the termination condition to allow for serialization
    and deserialization of the component."""

    function_name: str


class MyFunctionCallTermination(TerminationCondition, Component[FunctionCallTerminationConfig]):
    """Terminate the conversation if a FunctionExecutionResult with a specific name is
    received."""

    component_config_schema = FunctionCallTerminationConfig
    component_provider_override = "tests.MyFunctionCallTermination"

    def __init__(self, function_name: str) -> None:
        self._terminated = False
        self._function_name = function_name

    @property
    def terminated(self) -> bool:
        return self._terminated

    async def __call__(
        self, messages: Sequence[BaseAgentEvent | BaseChatMessage]
    ) -> StopMessage | None:
        for message in messages:
            if isinstance(message, ToolCallExecutionEvent):
                for execution in message.content:
                    if execution.name == self._function_name:
                        self._terminated = True
                        return StopMessage(
                            content=f"Function '{self._function_name}' was executed.",
                            source="FunctionCallTermination",
                        )
        return None

    async def reset(self) -> None:
        self._terminated = False

    def _to_config(self) -> FunctionCallTerminationConfig:
        return FunctionCallTerminationConfig(function_name=self._function_name)

    @classmethod
    def _from_config(cls, config: FunctionCallTerminationConfig) -> Self:
        return cls(function_name=config.function_name)


async def test_a_component_config_subclass_round_trips_once_registered() -> None:
    condition = MaxMessageTermination(10) | MyFunctionCallTermination("approve")
    data = as_json(condition)
    assert data["config"]["conditions"][1]["provider"] == "tests.MyFunctionCallTermination"
    assert data["config"]["conditions"][1]["config"] == {"function_name": "approve"}
    with pytest.raises(UnknownProviderError, match="register"):
        load_component(data)  # dumping needs no registration; loading does
    register_component(MyFunctionCallTermination)
    loaded = TerminationCondition.load_component(data)
    assert loaded.dump_component() == condition.dump_component()
    event = ToolCallExecutionEvent(
        content=[FunctionExecutionResult(content="ok", name="approve", call_id="1")],
        source="critic",
    )
    stop = await loaded([event])
    assert stop is not None and stop.content == "Function 'approve' was executed."


def test_component_is_generic_in_its_config() -> None:
    assert issubclass(MyFunctionCallTermination, Component)
    assert MyFunctionCallTermination("x")._to_config() == FunctionCallTerminationConfig(
        function_name="x"
    )


# --- a custom component with a nested component -------------------------------------------


class Greeting(BaseModel):
    greeting: str
    model_client: ComponentModel


class Greeter(Component[Greeting]):
    """A custom component holding a model client (component type ``"custom"``)."""

    component_type = "custom"
    component_config_schema = Greeting
    component_provider_override = "tests.Greeter"

    def __init__(self, greeting: str, model_client: ChatCompletionClient) -> None:
        self.greeting = greeting
        self.model_client = model_client

    def _to_config(self) -> Greeting:
        return Greeting(
            greeting=self.greeting, model_client=dump_field(self.model_client, "model_client")
        )

    @classmethod
    def _from_config(cls, config: Greeting) -> Self:
        client = load_field(config.model_client, "model_client", ChatCompletionClient)
        return cls(config.greeting, client)


register_component(Greeter)


def test_a_custom_component_nests_components_with_paths() -> None:
    greeter = Greeter("hello", ReplayChatCompletionClient(["hi"]))
    data = greeter.dump_component().model_dump(mode="json")
    loaded = load_component(data, Greeter)
    assert loaded.greeting == "hello"
    assert isinstance(loaded.model_client, ReplayChatCompletionClient)
    data["config"]["model_client"]["provider"] = "os.system"
    with pytest.raises(UnknownProviderError) as info:
        load_component(data)
    assert info.value.path == "model_client"
    data["config"]["model_client"] = MaxMessageTermination(3).dump_component().model_dump()
    with pytest.raises(ComponentLoadError, match="builds a MaxMessageTermination"):
        load_component(data)


def test_registration_is_explicit_and_checked() -> None:
    class Local(Component[Greeting]):
        component_type = "custom"
        component_config_schema = Greeting

    with pytest.raises(ComponentRegistrationError, match="local class"):
        register_component(Local)
    with pytest.raises(ComponentRegistrationError, match="already"):
        register_component(Greeter)

    class NoWay:
        component_type = "custom"

    with pytest.raises(ComponentRegistrationError, match="Say how to dump and load"):
        register_component(NoWay, provider="tests.NoWay")
    assert issubclass(ComponentRegistrationError, ValueError)
    assert issubclass(ComponentRegistrationError, FlowlibError)


def test_loading_the_wrong_class_is_a_component_type_error() -> None:
    data = MaxMessageTermination(2).dump_component()
    with pytest.raises(ComponentTypeError, match="not a RoundRobinGroupChat") as info:
        RoundRobinGroupChat.load_component(data)
    assert isinstance(info.value, TypeError)


# --- the four model contexts are components -------------------------------------------------


def _contexts() -> list[ChatCompletionContext]:
    first = [UserMessage(content="remember me", source="user")]
    return [
        UnboundedChatCompletionContext(first),
        BufferedChatCompletionContext(buffer_size=3, initial_messages=first),
        HeadAndTailChatCompletionContext(head_size=1, tail_size=2, initial_messages=first),
        TokenLimitedChatCompletionContext(
            ReplayChatCompletionClient(["x"]), token_limit=50, initial_messages=first
        ),
    ]


@pytest.mark.parametrize("context", _contexts(), ids=lambda c: type(c).__name__)
async def test_model_contexts_dump_and_load_as_components(context: ChatCompletionContext) -> None:
    model = context.dump_component()
    assert model.component_type == "chat_completion_context"
    assert model.provider == f"flowlib.model_context.{type(context).__name__}"
    loaded = ChatCompletionContext.load_component(json.loads(model.model_dump_json()))
    assert type(loaded) is type(context)
    assert loaded.dump_component() == model
    assert [m.content for m in await loaded.get_messages()] == ["remember me"]
    autogen = {
        **model.model_dump(),
        "provider": f"autogen_core.model_context.{type(context).__name__}",
    }
    assert type(load_component(autogen)) is type(context)


def test_an_agents_model_context_is_written_as_a_component() -> None:
    agent = AssistantAgent(
        "a",
        ReplayChatCompletionClient(["hi"]),
        model_context=BufferedChatCompletionContext(buffer_size=4),
    )
    config = as_json(agent)["config"]["model_context"]
    assert config["provider"] == "flowlib.model_context.BufferedChatCompletionContext"
    assert config["config"] == {"buffer_size": 4}


# --- the registry is filled lazily, and the component package is the bottom layer ---------


@pytest.mark.timeout(600)  # a hang guard: 32 s of 120 in a whole run at load ~20
def test_the_component_package_imports_nothing_above_it_and_still_loads_builtins() -> None:
    script = (
        "import sys, flowlib.component as c\n"
        "above = [m for m in ('flowlib.teams', 'flowlib.agents', 'flowlib.messages') "
        "if m in sys.modules]\n"
        "assert above == [], above\n"
        "team = c.load_component({'provider': 'RoundRobinGroupChat', 'config': {"
        "'participants': [{'provider': 'AssistantAgent', 'config': {'name': 'a', "
        "'model_client': {'provider': 'ReplayChatCompletionClient', "
        "'config': {'chat_completions': ['hi']}}}}], 'max_turns': 1}})\n"
        "print(type(team).__name__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "RoundRobinGroupChat"


def test_a_provider_string_is_never_imported() -> None:
    with pytest.raises(UnknownProviderError):
        load_component({"provider": "json.JSONDecoder", "config": {}})
