"""``FunctionTool``: a plain sync or async Python function as a tool, plus the ``tool``
decorator and ``as_tool`` (what agents use to accept bare functions in ``tools=``).

The argument model is built from the signature with ``pydantic.create_model``. Each
argument's description is, by priority: a string in ``Annotated[T, "..."]``, the
``description`` of a ``pydantic.Field`` in ``Annotated``, the entry for the argument in
the docstring (Google ``Args:``, NumPy ``Parameters`` or reST ``:param x:``), else the
argument's own name, as AutoGen does.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, overload

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo
from typing_extensions import Self

from .._cancellation import CancellationToken
from ..component import load_error, refuse_field
from ..component.internal import register_builtin
from ..errors import InvalidTypeError, InvalidValueError
from ._base import BaseTool
from ._schema import Tool

__all__ = ["FunctionTool", "as_tool", "tool"]


class _Argument:
    """How one parameter of the wrapped function is filled in."""

    __slots__ = ("field", "name", "positional", "token")

    def __init__(self, name: str, field: str | None, *, positional: bool, token: bool) -> None:
        self.name = name
        self.field = field  # the args-model field, None for an injected token
        self.positional = positional
        self.token = token


class FunctionToolConfig(BaseModel):
    """The config of a [`FunctionTool`][flowlib.tools.FunctionTool]: its function's import
    name, never its code. Loading imports the function only if the caller lists it in
    ``load_component(..., allow_functions=[...])``."""

    model_config = ConfigDict(extra="forbid")

    function: str
    """The function as ``"module:qualname"`` (``"myapp.tools:get_weather"``)."""
    description: str
    name: str
    strict: bool = False


def resolve_name(name: str) -> Any:
    """Import ``"module:qualname"`` and return the object it names.

    Raises:
        ImportError: The module cannot be imported, or the name has no ``:``.
        AttributeError: The module has no such attribute.
    """
    module_name, _, qualname = name.partition(":")
    if not module_name or not qualname:
        raise ImportError(f"`{name}` is not of the form 'module:qualname'")
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def importable_name(func: Callable[..., Any]) -> str | None:
    """``"module:qualname"`` if importing that name gives back ``func`` (or a tool that
    wraps it), else None."""
    module = getattr(func, "__module__", None)
    qualname = getattr(func, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        return None
    if module == "__main__" or "<" in qualname:
        return None
    name = f"{module}:{qualname}"
    try:
        target = resolve_name(name)
    except Exception:  # an import that fails here would fail at load time too
        return None
    if target is func or getattr(target, "func", None) is func:
        return name
    return None


class FunctionTool(BaseTool[BaseModel, Any]):
    """Wrap a sync or async function as a tool; its schema comes from the signature.

    Parameters typed [`CancellationToken`][flowlib.base.CancellationToken] are not shown to the
    model: the run's token is passed to them. A sync function runs in a worker thread so it does
    not block the event loop (cancelling the token stops waiting for it; the thread
    itself finishes in the background). An async function runs as a task cancelled with
    the token.

    Args:
        func: The function. Every argument should have a type hint (a missing hint
            accepts any JSON value).
        description: What the tool does, for the model.
        name: The tool's name; defaults to the function's name.
        strict: Ask the model to follow the schema exactly; every argument must then be
            required (no defaults).

    Raises:
        ValueError: If the function takes ``*args``/``**kwargs``, is a lambda without a
            ``name``, has a hint that cannot be resolved, or ``strict`` is set while an
            argument has a default.

    Examples:
        >>> async def web_search_func(query: str) -> str:
        ...     \"\"\"Find information on the web\"\"\"
        ...     return "AutoGen is a programming framework for building multi-agent apps."
        >>> search = FunctionTool(web_search_func, description="Find information on the web")
        >>> search.schema["parameters"]["properties"]
        {'query': {'description': 'query', 'title': 'Query', 'type': 'string'}}
    """

    def __init__(
        self,
        func: Callable[..., Any],
        description: str,
        name: str | None = None,
        *,
        strict: bool = False,
    ) -> None:
        if not callable(func):
            raise InvalidTypeError(f"FunctionTool needs a callable, not {type(func).__name__}.")
        tool_name = name or _callable_name(func)
        if not tool_name or tool_name == "<lambda>":
            raise InvalidValueError(
                "A lambda has no usable tool name; pass one: "
                "`FunctionTool(func, description=..., name='my_tool')`."
            )
        self._func = func
        self._is_async = is_async_callable(func)
        args_model, arguments, return_type = _describe(func, tool_name)
        self._arguments = arguments
        super().__init__(args_model, return_type, tool_name, description, strict=strict)

    @property
    def func(self) -> Callable[..., Any]:
        """The wrapped function."""
        return self._func

    # -- the component protocol: a function is named by its import path, never copied -----

    component_config_schema: ClassVar[type[BaseModel]] = FunctionToolConfig

    def _to_config(self) -> FunctionToolConfig:
        function = importable_name(self._func)
        if function is None:
            refuse_field(
                "",
                f"FunctionTool `{self.name}` wraps "
                f"`{getattr(self._func, '__qualname__', self._func)!r}`, which cannot be "
                "imported by name (a lambda, a nested function, a method or a function of "
                "the __main__ script), and flowlib never copies code into a config. Define "
                "the function at the top level of a module, or build this agent in code.",
            )
        return FunctionToolConfig(
            function=function, description=self.description, name=self.name, strict=self.strict
        )

    @classmethod
    def _from_config(cls, config: FunctionToolConfig) -> Self:
        # The load policy has already checked that the caller allowed this function.
        try:
            target = resolve_name(config.function)
        except (ImportError, AttributeError) as exc:
            raise load_error(
                f"cannot import the function `{config.function}`: {exc}.", "function"
            ) from exc
        if isinstance(target, FunctionTool):
            target = target.func
        if not callable(target):
            raise load_error(f"`{config.function}` is not a function.", "function")
        return cls(target, config.description, config.name, strict=config.strict)

    async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> Any:
        """Call the function with validated arguments (and the token where it asks).

        Raises:
            asyncio.CancelledError: If the token is cancelled before or during the call.
            Exception: Whatever the function raises.
        """
        if cancellation_token.is_cancelled():
            raise asyncio.CancelledError()
        positional: list[Any] = []
        keywords: dict[str, Any] = {}
        for argument in self._arguments:
            value = cancellation_token if argument.token else getattr(args, argument.field or "")
            if argument.positional:
                positional.append(value)
            else:
                keywords[argument.name] = value
        if self._is_async:
            future = asyncio.ensure_future(self._func(*positional, **keywords))
        else:
            call = functools.partial(self._func, *positional, **keywords)
            future = asyncio.ensure_future(asyncio.to_thread(call))
        cancellation_token.link_future(future)
        try:
            result = await future
        finally:
            cancellation_token.remove_callback(future.cancel)
        if inspect.isawaitable(result):
            # A sync wrapper around an async function: finish it on the loop.
            result = await result
        return result


@overload
def tool(func: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, strict: bool = False
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    strict: bool = False,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a function into a [`FunctionTool`][flowlib.tools.FunctionTool]: ``@tool`` or
    ``@tool(name=...)``.

    Args:
        func: The function (when used bare, as ``@tool``).
        name: The tool's name; defaults to the function's name.
        description: Defaults to the docstring's summary (its first paragraph).
        strict: See [`FunctionTool`][flowlib.tools.FunctionTool].

    Examples:
        >>> @tool
        ... def add(a: int, b: int = 0) -> int:
        ...     \"\"\"Add two numbers.\"\"\"
        ...     return a + b
        >>> add.name, add.description, add.schema["parameters"]["required"]
        ('add', 'Add two numbers.', ['a'])
    """

    def wrap(target: Callable[..., Any]) -> FunctionTool:
        text = description if description is not None else _summary(_doc(target))
        return FunctionTool(target, text, name, strict=strict)

    if func is not None:
        return wrap(func)
    return wrap


@overload
def as_tool(obj: BaseTool[Any, Any]) -> BaseTool[Any, Any]: ...


@overload
def as_tool(obj: Tool) -> Tool: ...


@overload
def as_tool(obj: Callable[..., Any]) -> FunctionTool: ...


def as_tool(obj: Tool | Callable[..., Any]) -> Tool:
    """Return ``obj`` if it is already a tool, else wrap the function in a FunctionTool.

    A function's tool is named after the function and described by its whole docstring
    (empty if it has none), as AutoGen's ``AssistantAgent`` does with ``tools=[func]``.

    Raises:
        TypeError: If ``obj`` is neither a tool nor callable.
    """
    if isinstance(obj, Tool):
        return obj
    if callable(obj):
        return FunctionTool(obj, _doc(obj) or "")
    raise InvalidTypeError(
        f"Expected a tool or a function, got {type(obj).__name__}. Pass a BaseTool, "
        "a FunctionTool or a plain (sync or async) function."
    )


# --- signature -> argument model -------------------------------------------------------


def _callable_name(func: Callable[..., Any]) -> str:
    target: Any = func.func if isinstance(func, functools.partial) else func
    name = getattr(target, "__name__", None)
    return name if isinstance(name, str) else type(target).__name__


def _doc(func: Callable[..., Any]) -> str | None:
    """The docstring of ``func`` (of the wrapped function, for a ``functools.partial``)."""
    target: Any = func
    while isinstance(target, functools.partial):
        target = target.func
    return inspect.getdoc(target)


def is_async_callable(func: Callable[..., Any]) -> bool:
    target: Any = func
    while isinstance(target, functools.partial):
        target = target.func
    if inspect.iscoroutinefunction(target):
        return True
    call = getattr(target, "__call__", None)  # noqa: B004 - instances with async __call__
    return not inspect.isroutine(target) and inspect.iscoroutinefunction(call)


def _hints(func: Callable[..., Any], tool_name: str) -> dict[str, Any]:
    target: Any = func
    while isinstance(target, functools.partial):
        target = target.func
    if inspect.isclass(target):
        target = target.__init__
    elif not inspect.isroutine(target):
        target = type(target).__call__
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception as exc:
        raise InvalidValueError(
            f"Tool `{tool_name}`: cannot resolve the type hints of its function ({exc}). "
            "Define the types it refers to at module level."
        ) from exc


def _is_token_type(hint: Any) -> bool:
    if hint is CancellationToken:
        return True
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        members = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return members == [CancellationToken]
    return False


def _split_annotated(hint: Any) -> tuple[Any, str | None, str | None]:
    """Return the hint without description strings, the string, and a Field description."""
    if typing.get_origin(hint) is not Annotated:
        return hint, None, None
    base, *metadata = typing.get_args(hint)
    text = next((item for item in metadata if isinstance(item, str)), None)
    field_text = next(
        (
            item.description
            for item in metadata
            if isinstance(item, FieldInfo) and item.description is not None
        ),
        None,
    )
    kept = tuple(item for item in metadata if not isinstance(item, str))
    if not kept:
        return base, text, field_text
    annotated: Any = Annotated  # rebuilt at run time from a computed tuple
    parameters = (base, *kept)
    return annotated[parameters], text, field_text


def _field_name(name: str, taken: set[str]) -> str:
    """A model field name for argument ``name``; the schema still shows ``name``."""
    safe = (
        not name.startswith("_") and not name.startswith("model_") and not hasattr(BaseModel, name)
    )
    candidate = name if safe else f"arg_{name.lstrip('_')}"
    while candidate in taken:
        candidate += "_"
    return candidate


def _describe(
    func: Callable[..., Any], tool_name: str
) -> tuple[type[BaseModel], list[_Argument], type[Any]]:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise InvalidValueError(
            f"Tool `{tool_name}`: cannot read the function's signature."
        ) from exc
    hints = _hints(func, tool_name)
    doc_descriptions = _argument_docs(_doc(func))
    fields: dict[str, Any] = {}
    arguments: list[_Argument] = []
    taken = set(signature.parameters)
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise InvalidValueError(
                f"Tool `{tool_name}`: `{parameter.name}` is a *args/**kwargs parameter, "
                "which a model cannot be told about. Give the function named arguments."
            )
        positional = parameter.kind is parameter.POSITIONAL_ONLY
        hint = hints.get(parameter.name, Any)
        if _is_token_type(hint):
            arguments.append(_Argument(parameter.name, None, positional=positional, token=True))
            continue
        annotation, text, field_text = _split_annotated(hint)
        description = text or field_text or doc_descriptions.get(parameter.name) or parameter.name
        field_name = _field_name(parameter.name, taken - {parameter.name})
        taken.add(field_name)
        options: dict[str, Any] = {"description": description}
        if field_name != parameter.name:
            options["alias"] = parameter.name
            options["title"] = parameter.name.replace("_", " ").strip().title()
        if parameter.default is not parameter.empty:
            options["default"] = parameter.default
        fields[field_name] = (annotation, Field(**options))
        arguments.append(_Argument(parameter.name, field_name, positional=positional, token=False))
    model = create_model(
        f"{tool_name}args",
        __config__=ConfigDict(title=f"arguments of tool `{tool_name}`"),
        **fields,
    )
    return_hint = hints.get("return", Any)
    if typing.get_origin(return_hint) is Annotated:
        return_hint = typing.get_args(return_hint)[0]
    if return_hint is None:
        return_hint = type(None)
    return model, arguments, return_hint


# --- docstrings ------------------------------------------------------------------------

_GOOGLE_HEADER = re.compile(
    r"^(\s*)(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments)\s*:\s*$"
)
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?::.*)?$")
_REST_PARAM = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _summary(doc: str | None) -> str:
    """The first paragraph of a docstring, on one line."""
    if not doc:
        return ""
    paragraph: list[str] = []
    for line in doc.strip().splitlines():
        if not line.strip():
            break
        paragraph.append(line.strip())
    return " ".join(paragraph)


def _argument_docs(doc: str | None) -> dict[str, str]:
    """Per-argument descriptions from a Google, NumPy or reST docstring."""
    if not doc:
        return {}
    lines = doc.splitlines()
    found: dict[str, list[str]] = {}
    _google(lines, found)
    _numpy(lines, found)
    _rest(lines, found)
    return {name: " ".join(parts).strip() for name, parts in found.items() if " ".join(parts)}


def _google(lines: list[str], found: dict[str, list[str]]) -> None:
    index = 0
    while index < len(lines):
        header = _GOOGLE_HEADER.match(lines[index])
        index += 1
        if not header:
            continue
        section_indent = len(header.group(1))
        entry_indent: int | None = None
        current: list[str] | None = None
        while index < len(lines):
            line = lines[index]
            if line.strip() and _indent(line) <= section_indent:
                break
            index += 1
            if not line.strip():
                continue
            if entry_indent is None:
                entry_indent = _indent(line)
            entry = _GOOGLE_ENTRY.match(line.strip()) if _indent(line) == entry_indent else None
            if entry:
                current = found.setdefault(entry.group(1), [])
                current.append(entry.group(2).strip())
            elif current is not None:
                current.append(line.strip())


def _numpy(lines: list[str], found: dict[str, list[str]]) -> None:
    index = 0
    while index + 1 < len(lines):
        is_header = lines[index].strip() in {"Parameters", "Other Parameters"} and bool(
            _UNDERLINE.match(lines[index + 1])
        )
        index += 1
        if not is_header:
            continue
        index += 1
        section_indent = _indent(lines[index - 2])
        current: list[str] | None = None
        while index < len(lines):
            line = lines[index]
            if index + 1 < len(lines) and _UNDERLINE.match(lines[index + 1]):
                break  # the next section's header
            index += 1
            if not line.strip():
                continue
            if _indent(line) <= section_indent:
                entry = _NUMPY_ENTRY.match(line.strip())
                current = found.setdefault(entry.group(1), []) if entry else None
            elif current is not None:
                current.append(line.strip())


def _rest(lines: list[str], found: dict[str, list[str]]) -> None:
    current: list[str] | None = None
    base_indent = 0
    for line in lines:
        match = _REST_PARAM.match(line)
        if match:
            current = found.setdefault(match.group(1), [])
            current.append(match.group(2).strip())
            base_indent = _indent(line)
        elif current is not None and line.strip() and _indent(line) > base_indent:
            current.append(line.strip())
        else:
            current = None


register_builtin(FunctionTool, autogen="autogen_core.tools")
