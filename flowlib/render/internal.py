"""What flowlib's other packages use of ``flowlib.render``'s private modules (not public API)."""

from ._stored import graph_from_description, lineage_records, pending_of_state

__all__ = [
    "graph_from_description",
    "lineage_records",
    "pending_of_state",
]
