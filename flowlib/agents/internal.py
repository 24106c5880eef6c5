"""What flowlib's other packages use of ``flowlib.agents``'s private modules (not public API)."""

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
