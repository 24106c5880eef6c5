"""What flowlib's other packages use of ``flowlib.render``'s private modules (not public API)."""

from ._page import STEP_PANEL_HTML, STEP_VIEW_JS
from ._stored import graph_from_description, lineage_records, pending_of_state

__all__ = [
    "STEP_PANEL_HTML",
    "STEP_VIEW_JS",
    "graph_from_description",
    "lineage_records",
    "pending_of_state",
]
