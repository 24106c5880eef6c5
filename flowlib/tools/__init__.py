"""Tools a model can call: the schema types, ``BaseTool``, ``FunctionTool``, helpers
that turn plain functions into tools, and ``call_key()``, the idempotency key of the
call running now."""

from ._agent_tool import AgentTool, TaskRunnerTool, TeamTool
from ._base import BaseTool
from ._function_tool import FunctionTool, as_tool, tool
from ._keys import NoCallKeyError, call_key
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
    "NoCallKeyError",
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
    "call_key",
    "tool",
]
