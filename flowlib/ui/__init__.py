"""Console rendering of agent and team streams, with control characters escaped."""

from ._console import Console, UserInputManager
from ._escape import TerminalWriter, escape_control

__all__ = ["Console", "TerminalWriter", "UserInputManager", "escape_control"]
