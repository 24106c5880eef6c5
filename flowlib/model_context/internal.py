"""Names flowlib's other packages share from ``flowlib.model_context``'s private modules.

Not public API: users import from ``flowlib.model_context``. flowlib's own packages import these
names from here, never from a private module of the package (``tests/test_layers.py``).
"""

from ._base import RollbackPoint

__all__ = [
    "RollbackPoint",
]
