"""Console rendering of agent and team streams."""

from ._console import Console, UserInputManager

__all__ = ["Console", "UserInputManager"]
