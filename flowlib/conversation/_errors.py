"""The errors of the conversation API; they join flowlib's one exception tree."""

from __future__ import annotations

from ..errors import FlowlibError

__all__ = ["ConversationError", "HumanInputRequiredError", "TurnCancelledError"]


class ConversationError(FlowlibError, RuntimeError):
    """A conversation API object was used in a way it does not support (for example
    ``start()`` outside the run's ``async with`` block)."""


class HumanInputRequiredError(ConversationError):
    """A turn asked for human input (``ask_human``) but its agent has no ``human_input``
    handler. The turn fails with this error rather than waiting forever."""


class TurnCancelledError(ConversationError):
    """The turn was cancelled (its ``async with`` block ended while it ran, or an inline
    ``result()`` await was cancelled); later ``result()`` calls raise this error."""
