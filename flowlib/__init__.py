"""flowlib: multi-agent LLM workflows, graph-first.

Every team pattern compiles to one directed-graph IR (:mod:`flowlib.graph`) run by one
executor. The public API mirrors AutoGen AgentChat: :mod:`flowlib.messages`,
:mod:`flowlib.base`, :mod:`flowlib.conditions`, :mod:`flowlib.agents`,
:mod:`flowlib.teams`, :mod:`flowlib.models`.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
