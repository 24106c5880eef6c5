"""What flowlib's other packages use of ``flowlib.testing``'s private modules (not public API)."""

from ._crash import DEFAULT_TASK
from ._crash_worker import load_factory

__all__ = [
    "DEFAULT_TASK",
    "load_factory",
]
