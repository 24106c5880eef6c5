"""The handoff configuration an agent exposes to its model as a tool."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, model_validator

from ..errors import InvalidValueError
from ..tools.internal import BaseTool, FunctionTool

__all__ = ["Handoff"]


class Handoff(BaseModel):
    """A handoff to another agent (or to the user), offered to the model as a tool.

    Empty fields are filled from ``target``: ``Handoff(target="user")`` is the tool
    ``transfer_to_user``, whose result (and the ``HandoffMessage`` content) is ``message``.

    Attributes:
        target: The name of the agent (or ``"user"``) to hand off to.
        description: The tool description shown to the model.
        name: The tool name; must be a valid identifier.
        message: The content of the resulting ``HandoffMessage``.

    Examples:
        >>> handoff = Handoff(target="user", message="Transfer to user.")
        >>> handoff.name, handoff.handoff_tool.name
        ('transfer_to_user', 'transfer_to_user')
    """

    target: str
    description: str = ""
    name: str = ""
    message: str = ""

    @model_validator(mode="before")
    @classmethod
    def _fill_defaults(cls, values: Any) -> Any:
        if not isinstance(values, dict) or "target" not in values:
            return values
        target = values["target"]
        filled = dict(values)
        if not filled.get("description"):
            filled["description"] = f"Handoff to {target}."
        if not filled.get("name"):
            filled["name"] = f"transfer_to_{target}".lower()
        elif not str(filled["name"]).isidentifier():
            raise InvalidValueError(
                f"Handoff name `{filled['name']}` is not a valid identifier; tool names must "
                "be letters, digits and underscores."
            )
        if not filled.get("message"):
            filled["message"] = (
                f"Transferred to {target}, adopting the role of {target} immediately."
            )
        return filled

    @property
    def handoff_tool(self) -> BaseTool[Any, Any]:
        """The tool the model calls to hand off: named ``name``, described by
        ``description``, taking no arguments and returning ``message``."""
        message = self.message

        async def handoff() -> str:  # async: no worker thread for a constant
            return message

        return FunctionTool(handoff, description=self.description, name=self.name)
