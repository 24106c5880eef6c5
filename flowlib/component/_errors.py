"""The errors and the warning of declarative configuration.



    FlowlibError
    ├── ComponentSerializationError (also ValueError)   dump: a field cannot be written
    ├── ComponentLoadError (also ValueError)            load: the config cannot be built
    │   └── UnknownProviderError                        load: the provider is not registered
    ├── ComponentRegistrationError (also ValueError)    register_component: bad arguments
    └── ComponentTypeError (also TypeError)             load: the config builds another class

A callable edge condition that was not passed back to ``load_component(conditions=...)``
raises [`ConditionSerializationError`][flowlib.errors.ConditionSerializationError] (a
``GraphError``), as [`DiGraph.load`][flowlib.graph.DiGraph.load] does.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import FlowlibError

__all__ = [
    "ComponentLoadError",
    "ComponentRegistrationError",
    "ComponentSerializationError",
    "ComponentSerializationWarning",
    "ComponentTypeError",
    "UnknownProviderError",
]


class ComponentSerializationError(FlowlibError, ValueError):
    """``dump_component()`` met a field a declarative config cannot hold.

    Raised for what the component needs to work as built: a function wrapped as a tool
    or an agent, ``FunctionalTermination``, ``approval_func``, a custom ``input_func``,
    ``output_content_type``, or a class that is not a registered component.

    Attributes:
        path: Where the field is, from the dumped root, e.g.
            ``"participants[0].tools[1]"``.
        field: The offending field, e.g. ``"approval_func"``.
    """

    def __init__(self, message: str, *, path: str = "", field: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.field = field


class ComponentSerializationWarning(UserWarning):
    """A dump left out an optional field it cannot hold (listed in ``unserializable``).

    Issued for the callables the documents call "ignored" (``selector_func``,
    ``candidate_func``, ``tool_call_summary_formatter``), callable edge conditions
    (restored by ``load_component(..., conditions=...)``), custom message types, a
    replaced clock, secret headers, and for shared instances that load as copies.
    """


class ComponentLoadError(FlowlibError, ValueError):
    """``load_component()`` cannot build a config: invalid or unknown fields, a newer
    schema version, or a nested component of the wrong kind.

    Attributes:
        path: Where the problem is, from the loaded root (``""`` for the root).
    """

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class UnknownProviderError(ComponentLoadError):
    """A config names a provider flowlib's registry does not know.

    Loading never imports the module a provider string names, so a config cannot make
    flowlib run code; register your own classes with
    [`register_component`][flowlib.component.register_component].

    Attributes:
        provider: The provider string of the config.
        known: The registered provider strings.
    """

    def __init__(self, provider: str, known: Iterable[str], *, path: str = "") -> None:
        self.provider = provider
        self.known = sorted(known)
        where = f" (at `{path}`)" if path else ""
        super().__init__(
            f"Unknown component provider `{provider}`{where}. flowlib only builds classes "
            "from its own registry and never imports a provider string; register your "
            "class with `flowlib.component.register_component(...)` first. Known providers: "
            + ", ".join(self.known),
            path=path,
        )


class ComponentRegistrationError(FlowlibError, ValueError):
    """[`register_component`][flowlib.component.register_component] refused a class: it
    or one of its provider strings is already registered, it is a local class without
    an explicit provider, or it gives no way to be dumped and loaded. Nothing was
    registered."""


class ComponentTypeError(FlowlibError, TypeError):
    """``load_component(config, expected)`` or ``Class.load_component(config)``: the
    config builds an instance of another class."""
