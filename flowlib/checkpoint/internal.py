"""What flowlib's other packages use of ``flowlib.checkpoint``'s private modules
(not public API)."""

from ._fold import base_record
from ._fork import fork_run
from ._patch import Patch

__all__ = [
    "Patch",
    "base_record",
    "fork_run",
]
