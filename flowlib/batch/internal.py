"""What flowlib's other packages use of ``flowlib.batch``'s private modules (not public API)."""

from ._factory import factory_reference
from ._local import BatchRunner, check_batch, check_concurrency
from ._run import Results

__all__ = [
    "BatchRunner",
    "Results",
    "check_batch",
    "check_concurrency",
    "factory_reference",
]
