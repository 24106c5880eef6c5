"""Names flowlib's other packages share from ``flowlib.testing``'s private modules.

Not public API: users import from ``flowlib.testing``. flowlib's own packages import these
names from here, never from a private module of the package (``tests/test_layers.py``).
"""

from ._crash import DEFAULT_TASK
from ._crash_worker import load_factory

__all__ = [
    "DEFAULT_TASK",
    "load_factory",
]
