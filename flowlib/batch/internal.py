"""Names flowlib's other packages share from ``flowlib.batch``'s private modules.

Not public API: users import from ``flowlib.batch``. flowlib's own packages import these
names from here, never from a private module of the package (``tests/test_layers.py``).
"""

from ._factory import factory_reference
from ._local import check_batch, check_concurrency

__all__ = [
    "check_batch",
    "check_concurrency",
    "factory_reference",
]
