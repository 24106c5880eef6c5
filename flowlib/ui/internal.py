"""What flowlib's other packages use of ``flowlib.ui``'s private modules (not public API)."""

from ._escape import TerminalWriter, escapes

__all__ = [
    "TerminalWriter",
    "escapes",
]
