"""What flowlib's other packages use of ``flowlib.base``'s private modules (not public API)."""

from ._arguments import (
    check_count,
    check_number,
    check_state_argument,
    kind_of,
    load_atomically,
    parsed_state,
    state_entry,
)
from ._task import last_item, task_messages
from ._termination import TERMINATION_STATE_VERSION, state_header

__all__ = [
    "TERMINATION_STATE_VERSION",
    "check_count",
    "check_number",
    "check_state_argument",
    "kind_of",
    "last_item",
    "load_atomically",
    "parsed_state",
    "state_entry",
    "state_header",
    "task_messages",
]
