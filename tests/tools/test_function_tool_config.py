"""An agent with function tools dumps (each function named ``module:qualname``) and loads
only with the caller's permission (``allow_functions=``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from _tool_functions import Helpers, get_weather, shout

from flowlib.agents import AssistantAgent
from flowlib.component import (
    ComponentLoadError,
    ComponentSerializationError,
    dump_component,
    load_component,
)
from flowlib.errors import FlowlibError
from flowlib.messages import ToolCallExecutionEvent
from flowlib.models import ReplayChatCompletionClient
from flowlib.testing import tool_calls
from flowlib.tools import FunctionTool


def _agent(*tools: Any) -> AssistantAgent:
    model = ReplayChatCompletionClient([tool_calls(("get_weather", {"city": "Paris"})), "Done."])
    return AssistantAgent("helper", model, tools=list(tools), reflect_on_tool_use=True)


def _config(agent: AssistantAgent) -> dict[str, Any]:
    return json.loads(dump_component(agent).model_dump_json())  # type: ignore[no-any-return]


def test_function_tools_dump_as_import_names() -> None:
    config = _config(_agent(get_weather, shout, FunctionTool(Helpers.add, "Add.")))
    tools = config["config"]["tools"]
    assert [t["provider"] for t in tools] == ["flowlib.tools.FunctionTool"] * 3
    assert [t["config"]["function"] for t in tools] == [
        "_tool_functions:get_weather",
        "_tool_functions:shout",
        "_tool_functions:Helpers.add",
    ]
    assert tools[0]["config"]["description"] == "The weather in a city."
    assert "source" not in json.dumps(tools)


async def test_loading_needs_permission_for_each_function() -> None:
    config = _config(_agent(get_weather, shout))
    with pytest.raises(ComponentLoadError, match="may not import") as info:
        load_component(config, allow_functions=["_tool_functions:get_weather"])
    assert "allow_functions=['_tool_functions:shout']" in str(info.value)
    assert info.value.path == "tools[1].function"
    loaded = load_component(
        config,
        AssistantAgent,
        allow_functions=["_tool_functions:get_weather", "_tool_functions:shout"],
    )
    result = await loaded.run(task="Weather in Paris?")
    executed = next(m for m in result.messages if isinstance(m, ToolCallExecutionEvent))
    assert executed.content[0].content == "Sunny in Paris."
    assert result.messages[-1].to_text() == "Done."


def test_a_refused_function_is_never_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "imported"
    (tmp_path / "sneaky_module.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n"
        "def run(cmd: str) -> str:\n    return cmd\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    config = _config(_agent(get_weather))
    config["config"]["tools"][0]["config"]["function"] = "sneaky_module:run"
    with pytest.raises(ComponentLoadError, match="allow_functions"):
        load_component(config, allow_functions=["_tool_functions:get_weather"])
    assert not marker.exists() and "sneaky_module" not in sys.modules
    loaded = load_component(config, allow_functions=["sneaky_module:run"])  # the caller's call
    assert marker.exists() and isinstance(loaded, AssistantAgent)
    del sys.modules["sneaky_module"]


@pytest.mark.parametrize(
    ("function", "match"),
    [
        ("_tool_functions:missing", "cannot import the function `_tool_functions:missing`"),
        ("no_such_module_19:f", "cannot import the function `no_such_module_19:f`"),
        ("_tool_functions:NOT_A_FUNCTION", "is not a function"),
    ],
)
def test_an_allowed_name_that_does_not_import_is_a_load_error(function: str, match: str) -> None:
    config = _config(_agent(get_weather))
    config["config"]["tools"][0]["config"]["function"] = function
    with pytest.raises(ComponentLoadError, match=match):
        load_component(config, allow_functions=[function])


def test_functions_without_an_import_name_are_refused_at_dump() -> None:
    def nested(city: str) -> str:
        """Nested."""
        return city

    for tool in (nested, FunctionTool(lambda city: city, "Lambda.", name="anon")):
        with pytest.raises(ComponentSerializationError, match="cannot be imported by name") as info:
            dump_component(_agent(tool))
        assert info.value.path == "tools[0]"


@pytest.mark.parametrize("bad", [["get_weather"], ["a b:c"], [42], "x:y:z"])
def test_allow_functions_entries_are_checked(bad: Any) -> None:
    config = _config(_agent(get_weather))
    with pytest.raises(FlowlibError, match="allow_functions"):
        load_component(config, allow_functions=bad)


def test_the_permission_reaches_an_agent_inside_an_agent_tool() -> None:
    from flowlib.tools import AgentTool

    inner = _agent(get_weather)
    outer = AssistantAgent("outer", ReplayChatCompletionClient(["ok"]), tools=[AgentTool(inner)])
    config = _config(outer)
    with pytest.raises(ComponentLoadError, match="allow_functions"):
        load_component(config)
    loaded = load_component(config, allow_functions=["_tool_functions:get_weather"])
    assert isinstance(loaded, AssistantAgent)
