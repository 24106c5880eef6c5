"""flowlib: multi-agent LLM workflows, graph-first.

Every team pattern compiles to one directed-graph IR ([`flowlib.graph`][flowlib.graph]) run by one
executor. The public API mirrors AutoGen AgentChat: [`flowlib.messages`][flowlib.messages],
[`flowlib.base`][flowlib.base], [`flowlib.conditions`][flowlib.conditions],
[`flowlib.agents`][flowlib.agents], [`flowlib.teams`][flowlib.teams],
[`flowlib.models`][flowlib.models].
"""

from .logging import EVENT_LOGGER_NAME, TRACE_LOGGER_NAME

__version__ = "0.1.0"

__all__ = ["EVENT_LOGGER_NAME", "TRACE_LOGGER_NAME", "__version__"]
