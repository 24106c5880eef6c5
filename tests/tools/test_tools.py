"""Tests of flowlib.tools: BaseTool, FunctionTool schemas and runs, the decorator, as_tool."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import threading
from collections.abc import Mapping
from typing import Annotated, Any, Optional

import pytest
from pydantic import BaseModel, Field, ValidationError

import flowlib.tools
from flowlib._cancellation import CancellationToken
from flowlib.tools import BaseTool, FunctionTool, ParametersSchema, Tool, ToolSchema, as_tool, tool


def props(t: BaseTool[Any, Any]) -> dict[str, Any]:
    return dict(t.schema["parameters"]["properties"])


def required(t: BaseTool[Any, Any]) -> list[str]:
    return list(t.schema["parameters"].get("required", []))


async def run(t: BaseTool[Any, Any], **kwargs: Any) -> Any:
    return await t.run_json(kwargs, CancellationToken())


class Point(BaseModel):
    x: int
    y: int = 0


class StrictPoint(BaseModel):
    x: int
    y: int


class Report(BaseModel):
    title: str
    score: float


# --- the public surface -----------------------------------------------------------------


def test_all_matches_exports() -> None:
    public = {name for name in vars(flowlib.tools) if not name.startswith("_")}
    public -= {"annotations"}
    assert sorted(flowlib.tools.__all__) == flowlib.tools.__all__
    assert set(flowlib.tools.__all__) == {
        name for name in public if not inspect.ismodule(getattr(flowlib.tools, name))
    }


# --- schema generation ------------------------------------------------------------------


def test_documented_schema_shape() -> None:
    async def web_search_func(query: str) -> str:
        """Find information on the web"""
        return "AutoGen is a programming framework for building multi-agent applications."

    web_search_function_tool = FunctionTool(
        web_search_func, description="Find information on the web"
    )
    assert web_search_function_tool.schema == {
        "name": "web_search_func",
        "description": "Find information on the web",
        "parameters": {
            "type": "object",
            "properties": {"query": {"description": "query", "title": "Query", "type": "string"}},
            "required": ["query"],
            "additionalProperties": False,
        },
        "strict": False,
    }


def test_schema_is_a_copy() -> None:
    def f(a: int) -> int:
        return a

    t = FunctionTool(f, "d")
    t.schema["parameters"]["properties"]["a"]["type"] = "string"
    assert props(t)["a"]["type"] == "integer"


def test_defaults_make_arguments_optional() -> None:
    def f(a: int, b: str = "x", c: float = 1.5, d: bool = False) -> None:
        pass

    t = FunctionTool(f, "d")
    assert required(t) == ["a"]
    assert props(t)["b"] == {"default": "x", "description": "b", "title": "B", "type": "string"}
    assert props(t)["c"]["default"] == 1.5
    assert props(t)["d"] == {"default": False, "description": "d", "title": "D", "type": "boolean"}


def test_optional_without_default_is_required_and_nullable() -> None:
    def f(a: Optional[int], b: int | None = None) -> None:  # noqa: UP045 - both spellings
        pass

    t = FunctionTool(f, "d")
    assert required(t) == ["a"]
    assert props(t)["a"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert props(t)["b"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert props(t)["b"]["default"] is None


def test_container_arguments() -> None:
    def f(tags: list[str], counts: dict[str, int], pair: tuple[int, str]) -> None:
        pass

    p = props(FunctionTool(f, "d"))
    assert p["tags"] == {
        "description": "tags",
        "items": {"type": "string"},
        "title": "Tags",
        "type": "array",
    }
    assert p["counts"]["type"] == "object"
    assert p["counts"]["additionalProperties"] == {"type": "integer"}
    assert p["pair"]["type"] == "array"


def test_pydantic_model_argument_is_inlined() -> None:
    def f(point: Point, points: list[Point]) -> None:
        pass

    t = FunctionTool(f, "d")
    dumped = json.dumps(t.schema)
    assert "$ref" not in dumped
    assert "$defs" not in dumped
    point = props(t)["point"]
    assert point["type"] == "object"
    assert point["description"] == "point"
    assert point["required"] == ["x"]
    assert set(point["properties"]) == {"x", "y"}
    assert props(t)["points"]["items"]["properties"]["x"] == {"title": "X", "type": "integer"}


def test_self_referencing_model_keeps_its_definition() -> None:
    t = FunctionTool(_takes_tree, "d")
    parameters: Any = t.schema["parameters"]
    assert set(parameters["$defs"]) == {"Tree"}
    assert parameters["properties"]["tree"]["properties"]["children"]["items"] == {
        "$ref": "#/$defs/Tree"
    }


class Tree(BaseModel):
    label: str
    children: list[Tree]


def _takes_tree(tree: Tree) -> str:
    return tree.label


def test_annotated_descriptions() -> None:
    def f(
        ticker: Annotated[str, "Ticker symbol, e.g. AAPL"],
        days: Annotated[int, Field(description="How many days back", ge=1)] = 7,
        plain: int = 0,
    ) -> None:
        pass

    p = props(FunctionTool(f, "d"))
    assert p["ticker"]["description"] == "Ticker symbol, e.g. AAPL"
    assert p["days"]["description"] == "How many days back"
    assert p["days"]["minimum"] == 1
    assert p["plain"]["description"] == "plain"


def test_google_docstring_args() -> None:
    def f(city: str, units: str = "metric", days: int = 1) -> str:
        """Get the weather.

        Args:
            city (str): The city to look up,
                for example Paris.
            units: ``metric`` or ``imperial``.

        Returns:
            A forecast.
        """
        return city

    p = props(FunctionTool(f, "d"))
    assert p["city"]["description"] == "The city to look up, for example Paris."
    assert p["units"]["description"] == "``metric`` or ``imperial``."
    assert p["days"]["description"] == "days"  # not documented: its own name


def test_numpy_and_rest_docstrings() -> None:
    def numpy_style(a: int, b: int) -> int:
        """Add.

        Parameters
        ----------
        a : int
            The first number.
        b : int
            The second
            number.

        Returns
        -------
        int
        """
        return a + b

    def rest_style(a: int, b: int) -> int:
        """Add.

        :param a: The first number.
        :param int b: The second number.
        :returns: The sum.
        """
        return a + b

    for func in (numpy_style, rest_style):
        p = props(FunctionTool(func, "d"))
        assert p["a"]["description"] == "The first number."
        assert p["b"]["description"] == "The second number."


def test_annotated_description_beats_docstring() -> None:
    def f(a: Annotated[int, "from Annotated"]) -> int:
        """Do it.

        Args:
            a: from the docstring
        """
        return a

    assert props(FunctionTool(f, "d"))["a"]["description"] == "from Annotated"


def test_names_that_clash_with_pydantic_keep_their_names() -> None:
    def f(json: str, schema: int, model_name: str, _hidden: int = 1, copy: bool = False) -> str:
        return f"{json}|{schema}|{model_name}|{_hidden}|{copy}"

    t = FunctionTool(f, "d")
    assert list(props(t)) == ["json", "schema", "model_name", "_hidden", "copy"]
    assert props(t)["model_name"]["title"] == "Model Name"
    assert required(t) == ["json", "schema", "model_name"]
    result = asyncio.run(
        t.run_json({"json": "j", "schema": 2, "model_name": "m", "_hidden": 5}, CancellationToken())
    )
    assert result == "j|2|m|5|False"


def test_cancellation_token_parameter_is_injected_not_shown() -> None:
    seen: list[CancellationToken] = []

    async def f(a: int, cancellation_token: CancellationToken) -> int:
        seen.append(cancellation_token)
        return a

    t = FunctionTool(f, "d")
    assert list(props(t)) == ["a"]
    token = CancellationToken()
    assert asyncio.run(t.run_json({"a": 4}, token)) == 4
    assert seen == [token]


def test_missing_hints_accept_anything() -> None:
    def f(a, b: int = 2):  # type: ignore[no-untyped-def]
        return (a, b)

    t = FunctionTool(f, "d")
    assert "type" not in props(t)["a"]
    assert asyncio.run(t.run_json({"a": [1, "x"]}, CancellationToken())) == ([1, "x"], 2)
    assert t.return_type() is Any


def test_return_type() -> None:
    def f() -> int:
        return 1

    def g() -> None:
        pass

    async def h() -> Report:
        return Report(title="t", score=1)

    assert FunctionTool(f, "d").return_type() is int
    assert FunctionTool(g, "d").return_type() is type(None)
    assert FunctionTool(h, "d").return_type() is Report
    assert FunctionTool(f, "d").args_type().model_fields == {}
    assert FunctionTool(f, "d").state_type() is None


def test_name_override_and_lambda() -> None:
    def f() -> int:
        return 1

    assert FunctionTool(f, "d", name="other").schema["name"] == "other"
    with pytest.raises(ValueError, match="lambda"):
        FunctionTool(lambda: 1, "d")
    assert FunctionTool(lambda: 1, "d", name="one").name == "one"


def test_var_arguments_are_rejected() -> None:
    def f(*items: int) -> None:
        pass

    def g(**options: int) -> None:
        pass

    for func in (f, g):
        with pytest.raises(ValueError, match=r"\*args/\*\*kwargs"):
            FunctionTool(func, "d")


def test_unresolvable_hint_is_a_clear_error() -> None:
    def f(a: NotDefinedAnywhere) -> None:  # type: ignore[name-defined]  # noqa: F821
        pass

    with pytest.raises(ValueError, match="type hints"):
        FunctionTool(f, "d")


def test_not_callable() -> None:
    with pytest.raises(TypeError, match="callable"):
        FunctionTool(42, "d")  # type: ignore[arg-type]


# --- strict mode ------------------------------------------------------------------------


def test_strict_schema() -> None:
    def sentiment_analysis(text: str, point: StrictPoint) -> str:
        """Given a text, return the sentiment."""
        return "happy" if "happy" in text else "sad" if "sad" in text else "neutral"

    t = FunctionTool(sentiment_analysis, description="Sentiment Analysis", strict=True)
    schema = t.schema
    assert schema["strict"] is True
    assert schema["parameters"]["required"] == ["text", "point"]
    assert schema["parameters"]["additionalProperties"] is False
    assert schema["parameters"]["properties"]["point"]["additionalProperties"] is False
    assert asyncio.run(
        t.run_json({"text": "I am happy today!", "point": {"x": 1, "y": 2}}, CancellationToken())
    ) == ("happy")


def test_strict_rejects_defaults() -> None:
    def f(a: int, b: int = 1, c: str | None = None) -> None:
        pass

    with pytest.raises(ValueError, match=r"Tool `f` is strict, but `b`, `c` have defaults"):
        FunctionTool(f, "d", strict=True)


def test_strict_rejects_nested_defaults() -> None:
    def f(point: Point) -> None:
        pass

    with pytest.raises(ValueError, match=r"`point\.y` has a default"):
        FunctionTool(f, "d", strict=True)
    FunctionTool(f, "d")  # fine when not strict


# --- running ----------------------------------------------------------------------------


async def test_run_json_sync_and_async() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    async def mul(a: int, b: int) -> int:
        await asyncio.sleep(0)
        return a * b

    assert await run(FunctionTool(add, "d"), a=2, b=3) == 5
    assert await run(FunctionTool(mul, "d"), a=2, b=3) == 6
    # Lax validation: a JSON model often sends numbers as strings.
    assert await run(FunctionTool(add, "d"), a="2", b=3) == 5


async def test_run_json_builds_nested_models() -> None:
    def norm(point: Point, scale: float = 1.0) -> float:
        assert isinstance(point, Point)
        return (point.x + point.y) * scale

    assert await run(FunctionTool(norm, "d"), point={"x": 1, "y": 2}, scale=2) == 6.0


async def test_bad_arguments_name_tool_and_argument() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    t = FunctionTool(add, "d")
    with pytest.raises(ValidationError) as info:
        await run(t, a="not a number")
    text = str(info.value)
    assert "arguments of tool `add`" in text
    assert "a\n  Input should be a valid integer" in text
    assert "b\n  Field required" in text
    assert isinstance(info.value, ValueError)


async def test_extra_arguments_are_ignored() -> None:
    def one(a: int) -> int:
        return a

    assert await run(FunctionTool(one, "d"), a=1, hallucinated=True) == 1


async def test_positional_only_parameters() -> None:
    def f(a: int, /, b: int) -> str:
        return f"{a}-{b}"

    assert await run(FunctionTool(f, "d"), a=1, b=2) == "1-2"


async def test_sync_function_runs_in_a_worker_thread_without_blocking_the_loop() -> None:
    released = threading.Event()
    loop_thread = threading.get_ident()

    def wait_for_release() -> tuple[bool, bool]:
        # Only the event loop can release us: if we ran on it, this would time out.
        return released.wait(timeout=5), threading.get_ident() != loop_thread

    async def release() -> None:
        await asyncio.sleep(0.01)
        released.set()

    result, _ = await asyncio.gather(run(FunctionTool(wait_for_release, "d")), release())
    assert result == (True, True)


async def test_function_errors_propagate() -> None:
    def boom(a: int) -> int:
        raise RuntimeError(f"bad {a}")

    with pytest.raises(RuntimeError, match="bad 3"):
        await run(FunctionTool(boom, "d"), a=3)


async def test_cancel_async_function() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def slow() -> str:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "done"

    token = CancellationToken()
    job = asyncio.ensure_future(FunctionTool(slow, "d").run_json({}, token))
    await started.wait()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    assert cancelled.is_set()


async def test_cancel_sync_function_stops_waiting() -> None:
    running = threading.Event()
    release = threading.Event()

    def blocking() -> str:
        running.set()
        release.wait(timeout=5)
        return "late"

    token = CancellationToken()
    job = asyncio.ensure_future(FunctionTool(blocking, "d").run_json({}, token))
    while not running.is_set():
        await asyncio.sleep(0.001)
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    release.set()


async def test_already_cancelled_token_does_not_call() -> None:
    calls: list[int] = []

    def f() -> None:
        calls.append(1)

    token = CancellationToken()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run_with(FunctionTool(f, "d"), token)
    assert calls == []


async def run_with(t: BaseTool[Any, Any], token: CancellationToken) -> Any:
    return await t.run_json({}, token)


async def test_finished_runs_leave_no_callbacks_on_the_token() -> None:
    async def f() -> int:
        return 1

    token = CancellationToken()
    t = FunctionTool(f, "d")
    for _ in range(3):
        assert await t.run_json({}, token) == 1
    assert not token._callbacks  # none left (a dict since issue 21.7)


async def test_partial_and_callable_objects() -> None:
    def power(base: int, exponent: int) -> int:
        """Raise base to a power.

        Args:
            base: The base.
        """
        return int(base**exponent)

    class Greeter:
        async def __call__(self, name: str) -> str:
            return f"hi {name}"

    square = FunctionTool(functools.partial(power, exponent=2), "d")
    assert square.name == "power"
    assert await run(square, base=3) == 9
    assert props(square)["base"]["description"] == "The base."
    assert as_tool(functools.partial(power, exponent=3)).description.startswith("Raise base")
    greeter = FunctionTool(Greeter(), "d")
    assert greeter.name == "Greeter"
    assert list(props(greeter)) == ["name"]
    assert await run(greeter, name="bo") == "hi bo"


async def test_sync_wrapper_returning_a_coroutine_is_awaited() -> None:
    async def inner(a: int) -> int:
        return a + 1

    def wrapper(a: int) -> Any:
        return inner(a)

    assert await run(FunctionTool(wrapper, "d"), a=1) == 2


# --- return values ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "None"),
        (42, "42"),
        ("text", "text"),
        ([1, 2], "[1, 2]"),
        ({"a": 1}, "{'a': 1}"),
        (Report(title="x", score=0.5), '{"title": "x", "score": 0.5}'),
    ],
)
def test_return_value_as_string(value: Any, expected: str) -> None:
    def f() -> None:
        pass

    assert FunctionTool(f, "d").return_value_as_string(value) == expected


async def test_none_result_renders_as_none() -> None:
    def nothing() -> None:
        return None

    t = FunctionTool(nothing, "d")
    assert t.return_value_as_string(await run(t)) == "None"


# --- decorator and as_tool --------------------------------------------------------------


def test_bare_decorator() -> None:
    @tool
    def get_weather(city: str) -> str:
        """Get the weather
        for a city.

        Args:
            city: The city.
        """
        return f"Sunny in {city}"

    assert isinstance(get_weather, FunctionTool)
    assert get_weather.name == "get_weather"
    assert get_weather.description == "Get the weather for a city."
    assert props(get_weather)["city"]["description"] == "The city."
    assert asyncio.run(get_weather.run_json({"city": "Oslo"}, CancellationToken())) == (
        "Sunny in Oslo"
    )


def test_decorator_with_options() -> None:
    @tool(name="lookup", description="Look things up.", strict=True)
    async def find(query: str) -> str:
        """Ignored summary."""
        return query

    assert (find.name, find.description, find.schema["strict"]) == (
        "lookup",
        "Look things up.",
        True,
    )

    @tool()
    def undocumented() -> None:
        pass

    assert undocumented.description == ""
    with pytest.raises(ValueError, match="strict"):

        @tool(strict=True)
        def optional(a: int = 1) -> None:
            pass


def test_as_tool() -> None:
    def get_current_time() -> str:
        """Get the time.

        Returns the time at noon.
        """
        return "The current time is 12:00 PM."

    converted = as_tool(get_current_time)
    assert isinstance(converted, FunctionTool)
    assert converted.name == "get_current_time"
    assert converted.description == "Get the time.\n\nReturns the time at noon."
    assert as_tool(converted) is converted
    with pytest.raises(TypeError, match="tool or a function"):
        as_tool("not a tool")  # type: ignore[call-overload]


def test_as_tool_accepts_any_tool_protocol_object() -> None:
    class Minimal:
        name = "minimal"
        description = "A hand-written tool."

        @property
        def schema(self) -> ToolSchema:
            return {"name": self.name}

        async def run_json(
            self,
            args: Mapping[str, Any],
            cancellation_token: CancellationToken,
            call_id: str | None = None,
        ) -> Any:
            return "ok"

        def return_value_as_string(self, value: Any) -> str:
            return str(value)

    minimal = Minimal()
    assert isinstance(minimal, Tool)
    assert as_tool(minimal) is minimal


# --- BaseTool subclasses ----------------------------------------------------------------


class AddArgs(BaseModel):
    a: int = Field(description="The first number.")
    b: int = Field(default=0, description="The second number.")


class AddTool(BaseTool[AddArgs, int]):
    def __init__(self) -> None:
        super().__init__(AddArgs, int, "add", "Add two numbers.")

    async def run(self, args: AddArgs, cancellation_token: CancellationToken) -> int:
        return args.a + args.b


async def test_base_tool_subclass() -> None:
    add = AddTool()
    assert isinstance(add, Tool)
    assert add.schema == {
        "name": "add",
        "description": "Add two numbers.",
        "parameters": {
            "type": "object",
            "properties": {
                "a": {"description": "The first number.", "title": "A", "type": "integer"},
                "b": {
                    "default": 0,
                    "description": "The second number.",
                    "title": "B",
                    "type": "integer",
                },
            },
            "required": ["a"],
            "additionalProperties": False,
        },
        "strict": False,
    }
    assert await add.run_json({"a": 2}, CancellationToken(), call_id="call_1") == 2
    assert add.args_type() is AddArgs
    assert add.return_type() is int
    assert await add.save_state_json() == {}
    await add.load_state_json({"anything": 1})
    assert repr(add) == "AddTool(name='add')"


def test_base_tool_is_abstract() -> None:
    with pytest.raises(TypeError):
        BaseTool(AddArgs, int, "x", "y")  # type: ignore[abstract]


def test_parameters_schema_is_a_typed_dict() -> None:
    parameters = ParametersSchema(type="object", properties={})
    assert parameters == {"type": "object", "properties": {}}
