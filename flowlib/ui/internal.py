"""Names flowlib's other packages share from ``flowlib.ui``'s private modules.

Not public API: users import from ``flowlib.ui``. flowlib's own packages import these
names from here, never from a private module of the package (``tests/test_layers.py``).
"""

from ._escape import TerminalWriter, escapes

__all__ = [
    "TerminalWriter",
    "escapes",
]
