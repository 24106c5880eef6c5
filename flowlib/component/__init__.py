"""Declarative configuration: dump components to JSON-ready configs and build them back.

``obj.dump_component()`` (or [`dump_component`][flowlib.component.dump_component]) returns a
[`ComponentModel`][flowlib.component.ComponentModel]; ``Class.load_component(config)`` (or
[`load_component`][flowlib.component.load_component]) builds a new, equivalent component from it.
Agents, teams, termination conditions, model clients and model contexts have both methods;
memories, cache stores and code executors go through the functions. Providers resolve only through
flowlib's registry, never by importing.

Every class, flowlib's and yours, writes and builds itself through one protocol:
[`Component`][flowlib.component.Component] (``component_config_schema``, ``_to_config``,
``_from_config``). The registry only maps provider strings to classes; register your own classes
explicitly with [`register_component`][flowlib.component.register_component].

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

from ._base import Component, ComponentBase, ComponentLoader, dump_component, load_component
from ._errors import (
    ComponentLoadError,
    ComponentRegistrationError,
    ComponentSerializationError,
    ComponentSerializationWarning,
    ComponentTypeError,
    UnknownProviderError,
)
from ._fields import (
    dump_field,
    dump_fields,
    edge_conditions,
    json_field,
    load_error,
    load_field,
    load_fields,
    loading_at,
    read_env,
    refuse_field,
    skip_field,
)
from ._model import ComponentModel
from ._registry import known_providers, register_component

__all__ = [
    "Component",
    "ComponentBase",
    "ComponentLoadError",
    "ComponentLoader",
    "ComponentModel",
    "ComponentRegistrationError",
    "ComponentSerializationError",
    "ComponentSerializationWarning",
    "ComponentTypeError",
    "UnknownProviderError",
    "dump_component",
    "dump_field",
    "dump_fields",
    "edge_conditions",
    "json_field",
    "known_providers",
    "load_component",
    "load_error",
    "load_field",
    "load_fields",
    "loading_at",
    "read_env",
    "refuse_field",
    "register_component",
    "skip_field",
]
