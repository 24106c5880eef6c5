"""Termination conditions that decide when a team's run stops.

Combine them with ``|`` (either) and ``&`` (both); the protocol and the combinators live
in [`flowlib.base`][flowlib.base].
"""

from ._terminations import (
    ExternalTermination,
    FunctionalTermination,
    FunctionCallTermination,
    HandoffTermination,
    MaxMessageTermination,
    SourceMatchTermination,
    StopMessageTermination,
    TextMentionTermination,
    TextMessageTermination,
    TimeoutTermination,
    TokenUsageTermination,
)

__all__ = [
    "ExternalTermination",
    "FunctionCallTermination",
    "FunctionalTermination",
    "HandoffTermination",
    "MaxMessageTermination",
    "SourceMatchTermination",
    "StopMessageTermination",
    "TextMentionTermination",
    "TextMessageTermination",
    "TimeoutTermination",
    "TokenUsageTermination",
]
