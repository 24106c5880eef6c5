"""Names flowlib's other packages share from ``flowlib.tools``'s private modules.

Not public API: users import from ``flowlib.tools``. flowlib's own packages import these
names from here, never from a private module of the package (``tests/test_layers.py``).
"""

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
