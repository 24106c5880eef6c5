"""Names flowlib's other packages share from ``flowlib.component``'s private modules.

Not public API: users import from ``flowlib.component``. flowlib's own packages import these
names from here, never from a private module of the package (``tests/test_layers.py``).
"""

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
