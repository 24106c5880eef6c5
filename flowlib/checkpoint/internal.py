"""Names flowlib's other packages share from ``flowlib.checkpoint``'s private modules.

Not public API: users import from ``flowlib.checkpoint``. flowlib's own packages import these
names from here, never from a private module of the package (``tests/test_layers.py``).
"""

from ._fold import base_record
from ._fork import fork_run
from ._patch import Patch

__all__ = [
    "Patch",
    "base_record",
    "fork_run",
]
