"""Tools a model can call."""

from ._schema import ParametersSchema, Tool, ToolSchema

__all__ = ["ParametersSchema", "Tool", "ToolSchema"]
