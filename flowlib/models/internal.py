"""Names flowlib's other packages share from ``flowlib.models``' private modules.

Not public API: users import from ``flowlib.models``. flowlib's own packages import these
names from here, never from a private module of the package (``tests/test_layers.py``).
"""

from ._compact import CompactModel

__all__ = [
    "CompactModel",
]
