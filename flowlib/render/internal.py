"""Names flowlib's other packages share from ``flowlib.render``'s private modules.

Not public API: users import from ``flowlib.render``. flowlib's own packages import these
names from here, never from a private module of the package (``tests/test_layers.py``).
"""

from ._stored import graph_from_description, lineage_records, pending_of_state

__all__ = [
    "graph_from_description",
    "lineage_records",
    "pending_of_state",
]
