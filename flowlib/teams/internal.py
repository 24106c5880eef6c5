"""What flowlib's other packages use of ``flowlib.teams``'s private modules (not public API)."""

from ._selector import SelectorRouter
from ._swarm import declared_handoff_targets

__all__ = [
    "SelectorRouter",
    "declared_handoff_targets",
]
