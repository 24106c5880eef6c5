"""Names flowlib's other packages share from ``flowlib.teams``'s private modules.

Not public API: users import from ``flowlib.teams``. flowlib's own packages import these
names from here, never from a private module of the package (``tests/test_layers.py``).
"""

from ._selector import SelectorRouter

__all__ = [
    "SelectorRouter",
]
