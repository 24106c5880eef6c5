"""What flowlib's other packages use of ``flowlib.component``'s private modules (not public API)."""

from ._base import ComponentBase
from ._fields import dump_fields, load_fields
from ._model import ComponentModel, active_policy
from ._registry import register_builtin

__all__ = [
    "ComponentBase",
    "ComponentModel",
    "active_policy",
    "dump_fields",
    "load_fields",
    "register_builtin",
]
