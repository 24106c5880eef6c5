"""What flowlib's other packages use of ``flowlib.batch``'s private modules (not public API)."""

from ._local import check_batch, check_concurrency

__all__ = [
    "check_batch",
    "check_concurrency",
]
