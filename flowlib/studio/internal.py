"""Names flowlib's other packages share from ``flowlib.studio``'s private modules.

Not public API: users import from ``flowlib.studio``. flowlib's own packages import these
names from here, never from a private module of the package (``tests/test_layers.py``).
"""

from ._serve import register

__all__ = [
    "register",
]
