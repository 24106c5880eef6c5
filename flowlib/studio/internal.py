"""What flowlib's other packages use of ``flowlib.studio``'s private modules (not public API)."""

from ._serve import register

__all__ = [
    "register",
]
