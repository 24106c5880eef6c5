"""flowlib's registry of loadable component classes, keyed by provider string.

Loading a config looks its ``provider`` up here and nowhere else: a provider string is
never imported, so a config can only build classes that Python code registered. The
built-in classes are registered on first use (``ensure_builtins``), each under
flowlib's provider path, AutoGen's provider path and its short class name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ._errors import ComponentLoadError, ComponentSerializationError

if TYPE_CHECKING:
    from ._codec import Dumper, Loader

__all__ = [
    "ComponentSpec",
    "FromConfig",
    "ToConfig",
    "ensure_builtins",
    "known_providers",
    "register",
    "register_component",
    "spec_for_class",
    "spec_for_provider",
]

ToConfig = Callable[[Any, "Dumper"], Mapping[str, Any]]
"""``(component, dumper) -> config``: the constructor arguments as JSON data."""
FromConfig = Callable[[type, Mapping[str, Any], "Loader"], Any]
"""``(class, config, loader) -> component``: builds an instance of ``class``."""


@dataclass(frozen=True)
class ComponentSpec:
    """How one class is dumped and loaded.

    Attributes:
        cls: The class (dumping matches the exact class, never a subclass).
        provider: The provider string written by dumps.
        component_type: ``"agent"``, ``"team"``, ``"model"``, ...
        component_version: The version of the config schema written by dumps.
        to_config: Reads a component's constructor arguments.
        from_config: Builds a component from a config.
        aliases: Other provider strings that load this class (AutoGen paths, short names).
        shared_state: Whether two holders of one instance behave differently from two
            holders of two copies (a replay script, a memory): a dump of a shared
            instance then warns, since loading makes copies.
        loadable: False for classes that are registered only to explain why they cannot
            be dumped or loaded (a function as a tool, ...).
    """

    cls: type
    provider: str
    component_type: str
    to_config: ToConfig
    from_config: FromConfig
    component_version: int = 1
    aliases: tuple[str, ...] = ()
    shared_state: bool = False
    loadable: bool = True
    description: str | None = field(default=None)


_lock = threading.RLock()
_by_class: dict[type, ComponentSpec] = {}
_by_provider: dict[str, ComponentSpec] = {}
_builtins_loaded = False


def register(spec: ComponentSpec) -> None:
    """Add ``spec`` to the registry.

    Raises:
        ValueError: If the class or one of the provider strings is already registered.
    """
    with _lock:
        if spec.cls in _by_class:
            raise ValueError(
                f"`{spec.cls.__qualname__}` is already a registered component "
                f"(provider `{_by_class[spec.cls].provider}`)."
            )
        names = (spec.provider, *spec.aliases)
        taken = [name for name in names if name in _by_provider]
        if taken:
            raise ValueError(
                f"Provider {', '.join(f'`{n}`' for n in taken)} is already registered for "
                f"`{_by_provider[taken[0]].cls.__qualname__}`; choose another provider string."
            )
        _by_class[spec.cls] = spec
        for name in names:
            _by_provider[name] = spec


def ensure_builtins() -> None:
    """Register flowlib's own components, once (imported late: they import the package)."""
    global _builtins_loaded
    if _builtins_loaded:
        return
    with _lock:
        if _builtins_loaded:
            return
        from ._builtins import register_builtins

        register_builtins()
        _builtins_loaded = True


def spec_for_class(cls: type) -> ComponentSpec | None:
    """The spec of exactly ``cls`` (subclasses are not matched), or an ad-hoc spec for a
    class that implements AutoGen's ``_to_config`` protocol, or None."""
    ensure_builtins()
    spec = _by_class.get(cls)
    if spec is not None:
        return spec
    if _speaks_autogen_protocol(cls):
        return _protocol_spec(cls, provider=_default_provider(cls))
    return None


def spec_for_provider(provider: str) -> ComponentSpec | None:
    """The spec registered under ``provider`` (a provider path, alias or short name)."""
    ensure_builtins()
    return _by_provider.get(provider)


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

    Three ways to say how:

    * ``to_config`` / ``from_config``: plain functions, ``component -> dict`` and
      ``dict -> component``. Nested components go through
      [`dump_component`][flowlib.component.dump_component] /
      [`load_component`][flowlib.component.load_component] (their dicts are
      ``model_dump(mode="json")`` of the component model).
    * AutoGen's protocol, when neither function is given: ``cls`` defines
      ``component_config_schema`` (a pydantic model), ``_to_config(self)`` and the
      classmethod ``_from_config(config)``.
    * ``like=Base``: a subclass of a built-in component with the same constructor, dumped
      and loaded with ``Base``'s adapter but built as ``cls``.

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

    Raises:
        ValueError: If the class or a provider string is already registered, ``cls`` is
            a local class, or no way to dump and load it was given.

    Examples:
        >>> from flowlib.base import TerminationCondition
        >>> class NeverStop(TerminationCondition):
        ...     terminated = False
        ...     async def __call__(self, messages): return None
        ...     async def reset(self): pass
        >>> register_component(
        ...     NeverStop,
        ...     provider="myapp.NeverStop",
        ...     to_config=lambda condition: {},
        ...     from_config=lambda config: NeverStop(),
        ... )  # doctest: +SKIP
    """
    ensure_builtins()
    name = provider or _default_provider(cls)
    kind = component_type or getattr(cls, "component_type", None)
    if not isinstance(kind, str):
        raise ValueError(
            f"`{cls.__qualname__}` has no `component_type`; pass component_type='agent' "
            "(or 'team', 'model', 'termination', ...)."
        )
    version = component_version or int(getattr(cls, "component_version", 1))
    if like is not None:
        base = _by_class.get(like)
        if base is None or not base.loadable:
            raise ValueError(f"like=`{like.__qualname__}` is not a loadable registered component.")
        if not issubclass(cls, like):
            raise ValueError(f"`{cls.__qualname__}` is not a subclass of `{like.__qualname__}`.")
        spec = ComponentSpec(
            cls=cls,
            provider=name,
            component_type=kind,
            component_version=version,
            to_config=base.to_config,
            from_config=base.from_config,
            aliases=tuple(aliases),
            shared_state=base.shared_state,
        )
    elif to_config is not None and from_config is not None:
        dump_fn, load_fn = to_config, from_config
        spec = ComponentSpec(
            cls=cls,
            provider=name,
            component_type=kind,
            component_version=version,
            to_config=lambda component, dumper: dumper.json_value(dict(dump_fn(component)), ""),
            from_config=lambda target, config, loader: load_fn(config),
            aliases=tuple(aliases),
        )
    elif to_config is None and from_config is None and _speaks_autogen_protocol(cls):
        spec = _protocol_spec(cls, provider=name, aliases=tuple(aliases), version=version)
    else:
        raise ValueError(
            f"Say how to dump and load `{cls.__qualname__}`: pass both to_config= and "
            "from_config=, or like=<a built-in base class>, or implement "
            "component_config_schema, _to_config() and _from_config()."
        )
    register(spec)


def _default_provider(cls: type) -> str:
    override = getattr(cls, "component_provider_override", None)
    if isinstance(override, str) and override:
        return override
    if "<locals>" in cls.__qualname__:
        raise ValueError(
            f"`{cls.__qualname__}` is a local class; move it to module level, or pass "
            "provider='...' explicitly."
        )
    return f"{cls.__module__}.{cls.__qualname__}"


def _speaks_autogen_protocol(cls: type) -> bool:
    schema = getattr(cls, "component_config_schema", None)
    return (
        isinstance(schema, type)
        and issubclass(schema, BaseModel)
        and callable(getattr(cls, "_to_config", None))
        and callable(getattr(cls, "_from_config", None))
    )


def _protocol_spec(
    cls: type, *, provider: str, aliases: tuple[str, ...] = (), version: int | None = None
) -> ComponentSpec:
    kind = getattr(cls, "component_type", None)
    if not isinstance(kind, str):
        raise ComponentSerializationError(
            f"`{cls.__qualname__}` defines _to_config() but no `component_type`."
        )

    def to_config(component: Any, dumper: Dumper) -> Mapping[str, Any]:
        config = component._to_config()
        if not isinstance(config, BaseModel):
            raise ComponentSerializationError(
                f"`{cls.__qualname__}._to_config()` returned {type(config).__name__}, "
                "not a pydantic model."
            )
        data: dict[str, Any] = config.model_dump(mode="json", exclude_none=True)
        return data

    def from_config(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
        schema: type[BaseModel] = target.component_config_schema  # type: ignore[attr-defined]
        validated = loader.validate(schema, config)
        from_config_method = target._from_config  # type: ignore[attr-defined]
        try:
            return from_config_method(validated)
        except (TypeError, ValueError) as exc:
            raise ComponentLoadError(
                f"`{target.__qualname__}._from_config()` failed at `{loader.path() or '<root>'}`:"
                f" {exc}",
                path=loader.path(),
            ) from exc

    return ComponentSpec(
        cls=cls,
        provider=provider,
        component_type=kind,
        component_version=version or int(getattr(cls, "component_version", 1)),
        to_config=to_config,
        from_config=from_config,
        aliases=aliases,
    )
