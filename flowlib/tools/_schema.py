"""What a model client needs to know about a tool: its JSON schema and the Tool protocol."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypedDict, runtime_checkable

from typing_extensions import NotRequired, Required

from .._cancellation import CancellationToken

__all__ = ["ParametersSchema", "Tool", "ToolSchema"]


class ParametersSchema(TypedDict, total=False):
    """JSON schema of a tool's arguments (an object schema)."""

    type: Required[str]
    properties: Required[dict[str, Any]]
    required: list[str]
    additionalProperties: bool


class ToolSchema(TypedDict, total=False):
    """A tool as a model sees it: name, description, argument schema, strictness."""

    name: Required[str]
    description: str
    parameters: ParametersSchema
    strict: NotRequired[bool]


@runtime_checkable
class Tool(Protocol):
    """Anything a model can call: a schema plus ``run_json``."""

    @property
    def name(self) -> str:
        """The tool's name as the model calls it."""
        ...

    @property
    def description(self) -> str:
        """What the tool does."""
        ...

    @property
    def schema(self) -> ToolSchema:
        """The schema sent to the model."""
        ...

    async def run_json(
        self,
        args: Mapping[str, Any],
        cancellation_token: CancellationToken,
        call_id: str | None = None,
    ) -> Any:
        """Validate ``args`` and run the tool; return its raw result."""
        ...

    def return_value_as_string(self, value: Any) -> str:
        """Render a result for the model."""
        ...
