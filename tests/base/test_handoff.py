"""Handoff: defaults filled from the target, and the tool a model calls to hand off."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from flowlib.base import CancellationToken, Handoff
from flowlib.tools import BaseTool


def test_defaults_come_from_the_target() -> None:
    handoff = Handoff(target="user")
    assert handoff.target == "user"
    assert handoff.name == "transfer_to_user"
    assert handoff.description == "Handoff to user."
    assert handoff.message == "Transferred to user, adopting the role of user immediately."


def test_tool_name_is_lower_case() -> None:
    assert Handoff(target="Alice").name == "transfer_to_alice"


def test_given_fields_are_kept() -> None:
    handoff = Handoff(target="bob", description="Ask Bob.", name="escalate", message="Over to Bob.")
    assert (handoff.description, handoff.name, handoff.message) == (
        "Ask Bob.",
        "escalate",
        "Over to Bob.",
    )


def test_invalid_name_is_rejected() -> None:
    with pytest.raises(ValidationError, match="not a valid identifier"):
        Handoff(target="bob", name="hand off")


def test_dump_and_load_round_trip() -> None:
    handoff = Handoff(target="user", message="Transfer to user.")
    assert Handoff.model_validate(handoff.model_dump()) == handoff


def test_handoff_tool_schema() -> None:
    handoff = Handoff(target="user", description="Ask the user.")
    tool = handoff.handoff_tool
    assert isinstance(tool, BaseTool)
    assert tool.name == "transfer_to_user"
    assert tool.description == "Ask the user."
    assert tool.schema == {
        "name": "transfer_to_user",
        "description": "Ask the user.",
        "parameters": {
            "type": "object",
            "properties": {},
            "required": [],
            "additionalProperties": False,
        },
        "strict": False,
    }


async def test_handoff_tool_returns_the_message() -> None:
    tool = Handoff(target="user", message="Transfer to user.").handoff_tool
    result = await tool.run_json({}, CancellationToken(), call_id="call_1")
    assert tool.return_value_as_string(result) == "Transfer to user."


async def test_handoff_tool_follows_a_custom_name() -> None:
    handoff = Handoff(target="bob", name="escalate", message="Over to Bob.")
    tool = handoff.handoff_tool
    assert tool.name == "escalate"
    assert await tool.run_json({}, CancellationToken()) == "Over to Bob."
