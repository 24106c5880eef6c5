"""Tools a model can call: the schema types, ``BaseTool``, ``FunctionTool`` and helpers
that turn plain functions into tools."""

from ._base import BaseTool
from ._function_tool import FunctionTool, as_tool, tool
from ._schema import ParametersSchema, Tool, ToolSchema

__all__ = [
    "BaseTool",
    "FunctionTool",
    "ParametersSchema",
    "Tool",
    "ToolSchema",
    "as_tool",
    "tool",
]
