"""Tools a model can call: the schema types, ``BaseTool``, ``FunctionTool`` and helpers
that turn plain functions into tools."""

from ._agent_tool import AgentTool, TaskRunnerTool, TeamTool
from ._base import BaseTool
from ._function_tool import FunctionTool, as_tool, tool
from ._schema import ParametersSchema, Tool, ToolSchema
from ._workbench import (  # after _schema: it imports flowlib.models, which imports Tool
    ImageResultContent,
    ResultContent,
    StaticWorkbench,
    TextResultContent,
    ToolResult,
    Workbench,
    WorkbenchToolError,
)

__all__ = [
    "AgentTool",
    "BaseTool",
    "FunctionTool",
    "ImageResultContent",
    "ParametersSchema",
    "ResultContent",
    "StaticWorkbench",
    "TaskRunnerTool",
    "TeamTool",
    "TextResultContent",
    "Tool",
    "ToolResult",
    "ToolSchema",
    "Workbench",
    "WorkbenchToolError",
    "as_tool",
    "tool",
]
