"""Names flowlib's other packages share from ``flowlib.agents``'s private modules.

Not public API: users import from ``flowlib.agents``. flowlib's own packages import these
names from here, never from a private module of the package (``tests/test_layers.py``).
"""

from ._user_proxy_agent import (
    AsyncInputFunc,
    InputFuncType,
    SyncInputFunc,
    is_async_callable,
    run_in_thread,
)

__all__ = [
    "AsyncInputFunc",
    "InputFuncType",
    "SyncInputFunc",
    "is_async_callable",
    "run_in_thread",
]
