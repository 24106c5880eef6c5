"""Declarative configuration: dump components to JSON-ready configs and build them back.

``obj.dump_component()`` (or [`dump_component`][flowlib.component.dump_component]) returns a
[`ComponentModel`][flowlib.component.ComponentModel]; ``Class.load_component(config)`` (or
[`load_component`][flowlib.component.load_component]) builds a new, equivalent component from it.
Agents, teams, termination conditions and model clients have both methods; model contexts, memories,
cache stores and code executors go through the functions. Providers resolve only through flowlib's
registry, never by importing.

Examples:
    >>> import json
    >>> from flowlib.conditions import MaxMessageTermination, TextMentionTermination
    >>> from flowlib.base import TerminationCondition
    >>> stop = MaxMessageTermination(10) | TextMentionTermination("APPROVE")
    >>> text = json.dumps(stop.dump_component().model_dump(mode="json"))
    >>> loaded = TerminationCondition.load_component(json.loads(text))
    >>> loaded.dump_component() == stop.dump_component()
    True
"""

from ._base import ComponentBase, ComponentLoader, dump_component, load_component
from ._errors import (
    ComponentLoadError,
    ComponentSerializationError,
    ComponentSerializationWarning,
    UnknownProviderError,
)
from ._model import ComponentModel
from ._registry import known_providers, register_component

__all__ = [
    "ComponentBase",
    "ComponentLoadError",
    "ComponentLoader",
    "ComponentModel",
    "ComponentSerializationError",
    "ComponentSerializationWarning",
    "UnknownProviderError",
    "dump_component",
    "known_providers",
    "load_component",
    "register_component",
]
