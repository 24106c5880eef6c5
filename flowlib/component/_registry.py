"""flowlib's registry of loadable component classes, keyed by provider string.

The registry only maps names to classes: how a class is written to a config and built
from one is the class's own business (``component_config_schema``, ``_to_config``,
``_from_config``; see [`Component`][flowlib.component.Component]). Loading a config looks
its ``provider`` up here and nowhere else: a provider string is never imported, so a
config can only build classes that Python code registered.

flowlib's own classes register themselves when their module is imported (each under
flowlib's provider path, AutoGen's provider path and its short class name). So that a
config naming a built-in loads even when its module was not imported yet, the first
lookup imports the modules listed in ``BUILTIN_MODULES`` (``ensure_builtins``). That list
is data, not an import: this package sits in flowlib's bottom layer and imports nothing
above it.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ._errors import ComponentRegistrationError, ComponentSerializationError

__all__ = [
    "BUILTIN_MODULES",
    "ComponentSpec",
    "ensure_builtins",
    "known_providers",
    "register_builtin",
    "register_component",
    "registered_ancestor",
    "speaks_protocol",
    "spec_for_class",
    "spec_for_provider",
]

BUILTIN_MODULES: tuple[str, ...] = (
    "flowlib.base",
    "flowlib.messages",
    "flowlib.conditions",
    "flowlib.models",
    "flowlib.model_context",
    "flowlib.memory",
    "flowlib.code_executors",
    "flowlib.tools",
    "flowlib.tools.mcp",
    "flowlib.agents",
    "flowlib.teams",
)
"""The modules whose import registers flowlib's own component classes."""


@dataclass(frozen=True)
class ComponentSpec:
    """What the registry knows of one class: its names, never how to write it.

    Attributes:
        cls: The class (dumping matches the exact class, never a subclass).
        provider: The provider string written by dumps.
        component_type: ``"agent"``, ``"team"``, ``"model"``, ...
        component_version: The version of the config schema written by dumps.
        aliases: Other provider strings that load this class (AutoGen paths, short names).
        shared_state: Whether two holders of one instance behave differently from two
            holders of two copies (a replay script, a memory): a dump of a shared
            instance then warns, since loading makes copies.
        loadable: False for classes that are registered only to explain why they cannot
            be dumped or loaded (a function as a tool, ...): their ``_from_config``
            raises.
        description: Written in dumps; defaults to the first paragraph of the class
            docstring.
        to_config: Only for classes registered with plain functions
            (``register_component(cls, to_config=..., from_config=...)``).
        from_config: See ``to_config``.
    """

    cls: type
    provider: str
    component_type: str
    component_version: int = 1
    aliases: tuple[str, ...] = ()
    shared_state: bool = False
    loadable: bool = True
    description: str | None = field(default=None)
    to_config: Callable[[Any], Mapping[str, Any]] | None = None
    from_config: Callable[[Mapping[str, Any]], Any] | None = None


_lock = threading.RLock()
_by_class: dict[type, ComponentSpec] = {}
_by_provider: dict[str, ComponentSpec] = {}
_builtins_loaded = False


def _source_of(cls: type) -> str | None:
    module = sys.modules.get(cls.__module__)
    return getattr(module, "__file__", None)


def _redefinition(old: type, new: type) -> bool:
    """Whether ``new`` is ``old`` defined again: the same class name, from the same module
    or file (a module imported twice, a notebook cell or a script run again)."""
    if old is new or old.__qualname__ != new.__qualname__:
        return False
    if old.__module__ == new.__module__:
        return True
    source = _source_of(old)
    return source is not None and source == _source_of(new)


def _register(spec: ComponentSpec) -> None:
    with _lock:
        names = (spec.provider, *spec.aliases)
        for name in names:
            earlier = _by_provider.get(name)
            if earlier is not None and _redefinition(earlier.cls, spec.cls):
                # The class defined again replaces its earlier registration.
                for key in [k for k, v in _by_provider.items() if v is earlier]:
                    del _by_provider[key]
                _by_class.pop(earlier.cls, None)
        if spec.cls in _by_class:
            raise ComponentRegistrationError(
                f"`{spec.cls.__qualname__}` is already a registered component "
                f"(provider `{_by_class[spec.cls].provider}`)."
            )
        names = (spec.provider, *spec.aliases)
        taken = [name for name in names if name in _by_provider]
        if taken:
            raise ComponentRegistrationError(
                f"Provider {', '.join(f'`{n}`' for n in taken)} is already registered for "
                f"`{_by_provider[taken[0]].cls.__qualname__}`; choose another provider string."
            )
        _by_class[spec.cls] = spec
        for name in names:
            _by_provider[name] = spec


def register_builtin(
    cls: type,
    provider: str | None = None,
    *,
    autogen: str | None = None,
    aliases: Iterable[str] = (),
    shared_state: bool = False,
    loadable: bool = True,
) -> None:
    """Register one of flowlib's own classes (called by its module, at import).

    The class speaks the component protocol; ``component_type`` and
    ``component_version`` are read from it. It loads under its provider, AutoGen's
    provider path when ``autogen`` names AutoGen's module, its short class name and
    ``aliases``.

    Args:
        cls: The class.
        provider: What dumps write; by default the path users import the class by
            (``flowlib.models.RedisStore`` for ``flowlib.models._cache_stores.RedisStore``).
            The class's ``component_provider_override`` is set to it unless the class
            sets its own.
        autogen: AutoGen's module holding the class of the same name
            (``"autogen_agentchat.agents"``).
        aliases: More strings that load ``cls``.
        shared_state: As in ``ComponentSpec``.
        loadable: As in ``ComponentSpec``.
    """
    _check_protocol(cls)
    name = cls.__qualname__
    if provider is None:
        public = [part for part in cls.__module__.split(".") if not part.startswith("_")]
        provider = ".".join((*public, name))
    if "component_provider_override" not in cls.__dict__:
        cls.component_provider_override = provider  # type: ignore[attr-defined]
    autogen_path = () if autogen is None else (f"{autogen}.{name}",)
    names = dict.fromkeys((*autogen_path, *aliases, name))
    names.pop(provider, None)
    _register(
        ComponentSpec(
            cls=cls,
            provider=provider,
            component_type=_component_type(cls),
            component_version=int(getattr(cls, "component_version", 1)),
            aliases=tuple(names),
            shared_state=shared_state,
            loadable=loadable,
        )
    )


def ensure_builtins() -> None:
    """Import the modules of flowlib's own components, once, so that they are registered."""
    global _builtins_loaded
    if _builtins_loaded:
        return
    with _lock:
        if _builtins_loaded:
            return
        _builtins_loaded = True  # first: the imports below register through this module
        try:
            for module in BUILTIN_MODULES:
                importlib.import_module(module)
        except BaseException:
            _builtins_loaded = False  # try again on the next lookup
            raise


def spec_for_class(cls: type) -> ComponentSpec | None:
    """The spec of exactly ``cls`` (subclasses are not matched), or an ad-hoc spec for an
    unregistered class that speaks the component protocol itself and subclasses no
    registered class, or None."""
    ensure_builtins()
    spec = _by_class.get(cls)
    if spec is not None:
        return spec
    if speaks_protocol(cls) and not any(base in _by_class for base in cls.__mro__[1:]):
        return ComponentSpec(
            cls=cls,
            provider=_default_provider(cls),
            component_type=_component_type(cls),
            component_version=int(getattr(cls, "component_version", 1)),
        )
    return None


def spec_for_provider(provider: str) -> ComponentSpec | None:
    """The spec registered under ``provider`` (a provider path, alias or short name)."""
    ensure_builtins()
    return _by_provider.get(provider)


def registered_ancestor(cls: type) -> type | None:
    """The nearest base class of ``cls`` that is registered, if any."""
    for base in cls.__mro__[1:]:
        if base in _by_class:
            return base
    return None


def known_providers() -> list[str]:
    """The provider strings dumps write for loadable classes, sorted.

    AutoGen's provider paths and the short class names of the same classes also load.
    """
    ensure_builtins()
    return sorted(spec.provider for spec in _by_class.values() if spec.loadable)


def register_component(
    cls: type,
    *,
    provider: str | None = None,
    aliases: Iterable[str] = (),
    component_type: str | None = None,
    component_version: int | None = None,
    to_config: Callable[[Any], Mapping[str, Any]] | None = None,
    from_config: Callable[[Mapping[str, Any]], Any] | None = None,
    like: type | None = None,
) -> None:
    """Make ``cls`` loadable (and dumpable) by provider string.

    This is the only way a class becomes loadable: flowlib never imports a provider
    string found in a config. Three ways to say how ``cls`` is written and built:

    * The component protocol, when neither function is given: ``cls`` defines
      ``component_config_schema`` (a pydantic model), ``_to_config(self)`` and the
      classmethod ``_from_config(config)``, most simply by subclassing
      [`Component`][flowlib.component.Component]. flowlib's own classes work this way.
    * ``like=Base``: a subclass of a registered class with the same constructor; it
      inherits ``Base``'s protocol methods and is built as ``cls``.
    * ``to_config`` / ``from_config``: plain functions, ``component -> dict`` and
      ``dict -> component``, for classes you cannot change. Nested components go
      through [`dump_component`][flowlib.component.dump_component] /
      [`load_component`][flowlib.component.load_component].

    Args:
        cls: The class.
        provider: The provider string dumps write; defaults to
            ``cls.component_provider_override``, else ``"<module>.<qualname>"``.
        aliases: More strings that load ``cls``.
        component_type: Defaults to ``cls.component_type``.
        component_version: Defaults to ``cls.component_version``, else 1.
        to_config: See above.
        from_config: See above.
        like: See above.

    A class defined again (same name, from the same module or file: a module imported
    twice, a script or notebook cell run again) replaces its earlier registration.

    Raises:
        ComponentRegistrationError: The class or a provider string is already registered,
            ``cls`` is a local class without ``provider=``, or no way to dump and load it
            was given (a ``ValueError``).

    Examples:
        ```python
        from pydantic import BaseModel
        from flowlib.base import TerminationCondition
        from flowlib.component import Component, register_component

        class NeverStopConfig(BaseModel):
            pass

        class NeverStop(TerminationCondition, Component[NeverStopConfig]):
            component_config_schema = NeverStopConfig
            terminated = False

            async def __call__(self, messages): return None
            async def reset(self): pass
            def _to_config(self) -> NeverStopConfig: return NeverStopConfig()
            @classmethod
            def _from_config(cls, config: NeverStopConfig) -> "NeverStop": return cls()

        register_component(NeverStop, provider="myapp.NeverStop")
        ```
    """
    ensure_builtins()
    name = provider or _default_provider(cls)
    kind = component_type or _component_type(cls)
    version = component_version or int(getattr(cls, "component_version", 1))
    shared_state = False
    if like is not None:
        base = _by_class.get(like)
        if base is None or not base.loadable:
            raise ComponentRegistrationError(
                f"like=`{like.__qualname__}` is not a loadable registered component."
            )
        if not issubclass(cls, like):
            raise ComponentRegistrationError(
                f"`{cls.__qualname__}` is not a subclass of `{like.__qualname__}`."
            )
        shared_state, to_config, from_config = base.shared_state, base.to_config, base.from_config
    # Only one of the two functions, or neither and no protocol to fall back on.
    elif (to_config is None) != (from_config is None) or (
        to_config is None and not speaks_protocol(cls)
    ):
        raise ComponentRegistrationError(
            f"Say how to dump and load `{cls.__qualname__}`: pass both to_config= and "
            "from_config=, or like=<a registered base class>, or implement "
            "component_config_schema, _to_config() and _from_config() (subclass "
            "flowlib.component.Component)."
        )
    spec = ComponentSpec(
        cls=cls,
        provider=name,
        component_type=kind,
        component_version=version,
        aliases=tuple(aliases),
        shared_state=shared_state,
        to_config=to_config,
        from_config=from_config,
    )
    _register(spec)


def _default_provider(cls: type) -> str:
    override = cls.__dict__.get("component_provider_override")
    if isinstance(override, str) and override:
        return override
    if "<locals>" in cls.__qualname__:
        raise ComponentRegistrationError(
            f"`{cls.__qualname__}` is a local class; move it to module level, or pass "
            "provider='...' explicitly."
        )
    return f"{cls.__module__}.{cls.__qualname__}"


def _component_type(cls: type) -> str:
    kind = getattr(cls, "component_type", None)
    if not isinstance(kind, str):
        raise ComponentRegistrationError(
            f"`{cls.__qualname__}` has no `component_type`; set the class attribute or pass "
            "component_type='agent' (or 'team', 'model', 'termination', ...)."
        )
    return kind


def speaks_protocol(cls: type) -> bool:
    """Whether ``cls`` has ``component_config_schema``, ``_to_config`` and ``_from_config``."""
    schema = getattr(cls, "component_config_schema", None)
    return (
        isinstance(schema, type)
        and issubclass(schema, BaseModel)
        and callable(getattr(cls, "_to_config", None))
        and callable(getattr(cls, "_from_config", None))
    )


def _check_protocol(cls: type) -> None:
    if not speaks_protocol(cls):
        raise ComponentSerializationError(
            f"`{cls.__qualname__}` does not implement the component protocol "
            "(component_config_schema, _to_config, _from_config)."
        )
