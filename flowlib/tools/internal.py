"""What flowlib's other packages use of ``flowlib.tools``'s private modules (not public API)."""

from ._base import BaseTool
from ._function_tool import FunctionTool
from ._keys import CallScope, call_scope, current_scope, keyed_turn, tool_call_scopes, turn_scope
from ._schema import Tool, ToolSchema
from ._tracing import ToolCall, tool_call
from ._workbench import as_workbenches, workbench_tools

__all__ = [
    "BaseTool",
    "CallScope",
    "FunctionTool",
    "Tool",
    "ToolCall",
    "ToolSchema",
    "as_workbenches",
    "call_scope",
    "current_scope",
    "keyed_turn",
    "tool_call",
    "tool_call_scopes",
    "turn_scope",
    "workbench_tools",
]
