"""What flowlib's other packages use of ``flowlib.model_context``'s private modules
(not public API)."""

from ._base import RollbackPoint

__all__ = [
    "RollbackPoint",
]
