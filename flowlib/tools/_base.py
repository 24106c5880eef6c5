"""``BaseTool``: a tool described by a pydantic model of its arguments.

Subclass it for custom tools; [`FunctionTool`][flowlib.tools.FunctionTool] subclasses it to wrap
plain functions. The schema sent to the model is derived from the argument model once, at
construction, so a tool that cannot be described (for example a strict tool with optional
arguments) fails when it is built rather than at its first model call.
"""

from __future__ import annotations

import copy
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Generic, TypeVar, cast

from pydantic import BaseModel

from .._cancellation import CancellationToken
from .._named import Named
from ..errors import InvalidValueError
from ._schema import ParametersSchema, ToolSchema

__all__ = ["BaseTool"]

ArgsT = TypeVar("ArgsT", bound=BaseModel, contravariant=True)
ReturnT = TypeVar("ReturnT", covariant=True)

_REF_PREFIX = "#/$defs/"


class BaseTool(Named, ABC, Generic[ArgsT, ReturnT]):
    """A tool whose arguments are a pydantic model; subclass it and implement
    [`run`][flowlib.tools.BaseTool.run].

    Args:
        args_type: The pydantic model of the arguments; its JSON schema becomes the
            tool's ``parameters``.
        return_type: The type [`run`][flowlib.tools.BaseTool.run] returns (informational).
        name: The name the model calls the tool by.
        description: What the tool does, for the model.
        strict: Ask the model to follow the schema exactly (OpenAI structured outputs).
            Every argument must then be required, nested objects included.

    Raises:
        ValueError: If ``strict`` is set and an argument (or a field of a nested object)
            has a default.

    Examples:
        >>> import asyncio
        >>> from pydantic import BaseModel
        >>> class AddArgs(BaseModel):
        ...     a: int
        ...     b: int
        >>> class AddTool(BaseTool[AddArgs, int]):
        ...     def __init__(self) -> None:
        ...         super().__init__(AddArgs, int, "add", "Add two numbers.")
        ...     async def run(self, args: AddArgs, cancellation_token: CancellationToken) -> int:
        ...         return args.a + args.b
        >>> asyncio.run(AddTool().run_json({"a": 1, "b": 2}, CancellationToken()))
        3
    """

    component_type: ClassVar[str] = "tool"

    def __init__(
        self,
        args_type: type[ArgsT],
        return_type: type[Any],
        name: str,
        description: str,
        *,
        strict: bool = False,
    ) -> None:
        self._args_type = args_type
        self._return_type = return_type
        self._name = name
        self._description = description
        self._strict = strict
        self._schema = self._build_schema()

    @property
    def strict(self) -> bool:
        """Whether the schema asks the model for exact adherence."""
        return self._strict

    @property
    def schema(self) -> ToolSchema:
        """The schema sent to the model (a fresh copy on every access).

        Shape: ``{'name', 'description', 'parameters': {'type': 'object', 'properties',
        'required', 'additionalProperties': False}, 'strict'}``. References to nested
        models are inlined, so ``parameters`` has no ``$defs`` unless a model refers to
        itself.
        """
        return copy.deepcopy(self._schema)

    def args_type(self) -> type[BaseModel]:
        """The pydantic model the arguments are validated against."""
        return self._args_type

    def return_type(self) -> type[Any]:
        """The type [`run`][flowlib.tools.BaseTool.run] returns."""
        return self._return_type

    def state_type(self) -> type[BaseModel] | None:
        """The model of the tool's saved state; ``None`` for a stateless tool."""
        return None

    def return_value_as_string(self, value: Any) -> str:
        """Render a result for the model: pydantic models as JSON, anything else ``str()``.

        ``None`` becomes ``'None'``, as the documents show for a tool returning nothing.
        """
        if isinstance(value, BaseModel):
            dumped = value.model_dump(mode="json")
            return json.dumps(dumped) if isinstance(dumped, dict) else str(dumped)
        return str(value)

    @abstractmethod
    async def run(self, args: ArgsT, cancellation_token: CancellationToken) -> ReturnT:
        """Run the tool on validated arguments."""

    async def run_json(
        self,
        args: Mapping[str, Any],
        cancellation_token: CancellationToken,
        call_id: str | None = None,
    ) -> Any:
        """Validate ``args`` against [`args_type`][flowlib.tools.BaseTool.args_type], then
        [`run`][flowlib.tools.BaseTool.run] the tool.

        Args:
            args: The arguments as the model sent them (a decoded JSON object).
            cancellation_token: Aborts the run.
            call_id: The id of the model's function call, if any (for tracing).

        Returns:
            The raw return value; render it with
            [`return_value_as_string`][flowlib.tools.BaseTool.return_value_as_string].

        Raises:
            pydantic.ValidationError: (a ``ValueError``) naming the tool and each bad
                argument.
        """
        validated = self._args_type.model_validate(dict(args))
        return await self.run(validated, cancellation_token)

    async def save_state_json(self) -> Mapping[str, Any]:
        """Return the tool's state as JSON-serialisable data; empty for stateless tools."""
        return {}

    async def load_state_json(self, state: Mapping[str, Any]) -> None:
        """Restore state saved by [`save_state_json`][flowlib.tools.BaseTool.save_state_json];
        stateless tools ignore it."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._name!r})"

    def _build_schema(self) -> ToolSchema:
        model_schema = self._args_type.model_json_schema()
        defs: dict[str, Any] = model_schema.get("$defs", {})
        recursive: set[str] = set()
        properties: dict[str, Any] = {
            key: _inline_refs(value, defs, (), recursive)
            for key, value in model_schema.get("properties", {}).items()
        }
        required = list(model_schema.get("required", []))
        kept_defs: dict[str, Any] = {}
        while recursive - kept_defs.keys():
            for name in sorted(recursive - kept_defs.keys()):
                kept_defs[name] = _inline_refs(defs[name], defs, (name,), recursive)
        if self._strict:
            _check_strict(self._name, "", properties, required)
            for name, body in kept_defs.items():
                body_required = list(body.get("required", []))
                _check_strict(self._name, f"{name}.", body.get("properties", {}), body_required)
            properties = {key: _close_objects(value) for key, value in properties.items()}
            kept_defs = {name: _close_objects(body) for name, body in kept_defs.items()}
        parameters = ParametersSchema(
            type="object",
            properties=properties,
            required=required,
            additionalProperties=False,
        )
        if kept_defs:
            # A self-referencing model cannot be inlined; keep the definitions it needs.
            cast(dict[str, Any], parameters)["$defs"] = kept_defs
        return ToolSchema(
            name=self._name,
            description=self._description,
            parameters=parameters,
            strict=self._strict,
        )


def _inline_refs(
    node: Any, defs: Mapping[str, Any], stack: tuple[str, ...], recursive: set[str]
) -> Any:
    """Replace ``$ref`` pointers to ``$defs`` by the definitions they point to.

    Keys next to a ``$ref`` (such as the argument's description) override the inlined
    definition. A definition that refers to itself is left as a ``$ref`` and recorded in
    ``recursive``.
    """
    if isinstance(node, list):
        return [_inline_refs(item, defs, stack, recursive) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
        target = ref[len(_REF_PREFIX) :]
        if target in stack:
            recursive.add(target)
            return dict(node)
        body = _inline_refs(defs[target], defs, (*stack, target), recursive)
        siblings = {
            key: _inline_refs(value, defs, stack, recursive)
            for key, value in node.items()
            if key != "$ref"
        }
        return {**body, **siblings}
    return {key: _inline_refs(value, defs, stack, recursive) for key, value in node.items()}


def _check_strict(
    tool_name: str, path: str, properties: Mapping[str, Any], required: list[str]
) -> None:
    """Raise if an object schema (or one nested in it) has an optional property."""
    optional = [key for key in properties if key not in required]
    if optional:
        names = ", ".join(f"`{path}{key}`" for key in optional)
        raise InvalidValueError(
            f"Tool `{tool_name}` is strict, but {names} "
            f"{'has a default' if len(optional) == 1 else 'have defaults'}: strict mode "
            "requires every argument. Remove the default(s), or pass strict=False."
        )
    for key, value in properties.items():
        _check_strict_nested(tool_name, f"{path}{key}", value)


def _check_strict_nested(tool_name: str, path: str, node: Any) -> None:
    if not isinstance(node, dict):
        return
    if isinstance(node.get("properties"), dict):
        _check_strict(tool_name, f"{path}.", node["properties"], list(node.get("required", [])))
        return
    for child in _subschemas(node):
        _check_strict_nested(tool_name, path, child)


def _close_objects(node: Any) -> Any:
    """Mark nested object schemas ``additionalProperties: False`` (strict mode needs it)."""
    if not isinstance(node, dict):
        return node
    out = dict(node)
    if isinstance(out.get("properties"), dict):
        out["properties"] = {key: _close_objects(value) for key, value in out["properties"].items()}
        out.setdefault("additionalProperties", False)
    for key in _LIST_KEYWORDS:
        if isinstance(out.get(key), list):
            out[key] = [_close_objects(item) for item in out[key]]
    for key in _SCHEMA_KEYWORDS:
        if isinstance(out.get(key), dict):
            out[key] = _close_objects(out[key])
    return out


_LIST_KEYWORDS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_KEYWORDS = ("items", "additionalProperties")


def _subschemas(node: Mapping[str, Any]) -> list[Any]:
    """The schemas directly inside ``node`` other than its ``properties``."""
    children: list[Any] = []
    for key in _LIST_KEYWORDS:
        if isinstance(node.get(key), list):
            children.extend(node[key])
    for key in _SCHEMA_KEYWORDS:
        if isinstance(node.get(key), dict):
            children.append(node[key])
    return children
