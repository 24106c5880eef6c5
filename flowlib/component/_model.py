"""``ComponentModel``, the JSON shape of a declarative component configuration, and the
codec that walks a component tree: ``Dumper`` writes configs, ``Loader`` builds them.

Both keep the path from the root (``participants[0].tools[1]``) so every error and
warning says where it is. Each class writes and builds itself (``_to_config``,
``_from_config``); while a dump or a load runs, the active ``Dumper`` / ``Loader`` sits in
a context variable, so the field helpers of [`flowlib.component`][flowlib.component]
(``dump_field``, ``load_field``, ``skip_field``, ...) called from those methods nest under
the right path. (One module: the model loads itself through the loader, and the codec
builds models.)
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._english import a
from ..errors import GraphError
from ._errors import (
    ComponentLoadError,
    ComponentSerializationError,
    ComponentSerializationWarning,
    ComponentTypeError,
    UnknownProviderError,
)
from ._policy import MAX_DEPTH, LoadPolicy
from ._registry import (
    ComponentSpec,
    known_providers,
    registered_ancestor,
    spec_for_class,
    spec_for_provider,
)

T = TypeVar("T")

__all__ = [
    "ACTIVE_DUMPER",
    "ACTIVE_LOADER",
    "FORMAT_VERSION",
    "RESTORED_PREFIX",
    "ComponentModel",
    "Dumper",
    "Loader",
    "dump",
    "load",
]


class ComponentModel(BaseModel):
    """The declarative configuration of one component: what to build and with what.

    The shape is AutoGen's (``provider``, ``component_type``, ``version``,
    ``component_version``, ``description``, ``label``, ``config``), plus flowlib's
    ``unserializable`` note. Nested components (a team's participants, an agent's model
    client, ...) are nested component models inside ``config``, as plain dicts.

    A component model is a blueprint, not a snapshot: it holds what the constructor
    needs, never run state (message history, a replay script's position, cache entries).

    Attributes:
        provider: Which registered class builds the component, e.g.
            ``"flowlib.agents.AssistantAgent"``; AutoGen's provider paths and short names
            (``"OpenAIChatCompletionClient"``) resolve to the same classes. Loading only
            looks providers up in flowlib's registry, it never imports a module.
        component_type: The kind of component (``"agent"``, ``"team"``, ``"model"``,
            ``"termination"``, ...).
        version: The version of this configuration format (1).
        component_version: The version of the component's config schema.
        description: What the component class is, for people reading the config.
        label: A human-readable name; the class name.
        config: The constructor arguments, JSON data.
        unserializable: The fields a dump could not hold (Python callables the
            component documents as optional, such as ``selector_func``); ``None`` when
            everything was kept. The component is loaded without them.

    Examples:
        >>> from flowlib.conditions import MaxMessageTermination
        >>> model = MaxMessageTermination(5).dump_component()
        >>> model.provider
        'flowlib.conditions.MaxMessageTermination'
        >>> model.config
        {'max_messages': 5, 'include_agent_event': False}
    """

    model_config = ConfigDict(extra="ignore")

    provider: str
    component_type: str | None = None
    version: int | None = None
    component_version: int | None = None
    description: str | None = None
    label: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    unserializable: list[str] | None = None

    @overload
    def load_component(
        self,
        expected: None = None,
        *,
        conditions: Mapping[str, Callable[[Any], bool]] | None = None,
    ) -> Any: ...

    @overload
    def load_component(
        self,
        expected: type[T],
        *,
        conditions: Mapping[str, Callable[[Any], bool]] | None = None,
    ) -> T: ...

    def load_component(
        self,
        expected: type[T] | None = None,
        *,
        conditions: Mapping[str, Callable[[Any], bool]] | None = None,
    ) -> T | Any:
        """Build the component this model describes; see
        [`flowlib.component.load_component`][flowlib.component.load_component].

        Examples:
            >>> from flowlib.conditions import TextMentionTermination
            >>> model = TextMentionTermination("DONE").dump_component()
            >>> model.load_component()
            TextMentionTermination(text='DONE', sources=None)
        """
        return load(self, expected, conditions=conditions)


FORMAT_VERSION = 1
"""The ``version`` written in every component model."""

RESTORED_PREFIX = "graph."
"""``unserializable`` entries with this prefix (callable edge conditions) are restored by
``load_component(..., conditions=...)`` and do not warn when loading."""

ConfigT = TypeVar("ConfigT", bound=BaseModel)

EdgeFunction = Callable[[Any], bool]
"""A callable edge condition, ``func(message) -> bool`` (the message is a
``flowlib.messages.BaseChatMessage``; this bottom-layer package does not import it)."""

ACTIVE_DUMPER: ContextVar[Dumper | None] = ContextVar("flowlib_component_dumper", default=None)
"""The dump in progress in this context, if any."""
ACTIVE_LOADER: ContextVar[Loader | None] = ContextVar("flowlib_component_loader", default=None)
"""The load in progress in this context, if any."""


def _join(parts: Sequence[str]) -> str:
    out = ""
    for part in parts:
        if not part:
            continue
        out += part if (not out or part.startswith("[")) else "." + part
    return out


def _describe_class(cls: type) -> str | None:
    doc = cls.__doc__
    if not doc:
        return None
    first = doc.strip().split("\n\n", 1)[0]
    return " ".join(first.split())


def stacklevel() -> int:
    """The ``stacklevel`` that points a warning at user code: past flowlib.component's frames."""
    level = 1
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("flowlib.component"):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


@dataclass
class _Frame:
    segment: str
    unserializable: list[str] = field(default_factory=list)


class Dumper:
    """Turns a component and everything nested in it into component models."""

    def __init__(self) -> None:
        self._frames: list[_Frame] = []
        self._shared: dict[int, str] = {}  # id of a shared-state instance -> first path
        self._keep: list[Any] = []  # keeps seen objects alive, so ids stay unique

    # -- paths and reports ---------------------------------------------------------------

    def path(self, field_name: str = "") -> str:
        """The path of ``field_name`` in the component being dumped."""
        return _join([*(frame.segment for frame in self._frames), field_name])

    def skip(self, field_name: str, reason: str) -> None:
        """Leave an optional field out: note it in ``unserializable`` and warn."""
        self._frames[-1].unserializable.append(field_name)
        where = self.path(field_name)
        warnings.warn(
            f"`{where}` is not serialised: {reason}",
            ComponentSerializationWarning,
            stacklevel=stacklevel(),
        )

    def refuse(self, field_name: str, reason: str) -> NoReturn:
        """Stop the dump: ``field_name`` cannot be written and the component needs it."""
        where = self.path(field_name)
        raise ComponentSerializationError(
            f"Cannot dump `{where or '<root>'}`: {reason}", path=where, field=field_name
        )

    def json_value(self, value: Any, field_name: str) -> Any:
        """Return ``value`` if it is JSON data (after pydantic's JSON dump), else refuse."""
        try:
            if isinstance(value, BaseModel):
                return value.model_dump(mode="json")
            json.dumps(value)
        except (TypeError, ValueError):
            self.refuse(
                field_name,
                f"its value {value!r} is not JSON data ({a(type(value).__name__)}); a "
                "declarative config holds only strings, numbers, booleans, lists and dicts.",
            )
        return value

    # -- components ----------------------------------------------------------------------

    def root(self, component: object) -> ComponentModel:
        """Dump ``component`` as the root of a config."""
        return self._dump(component, "")

    def component(self, component: object, field_name: str) -> dict[str, Any]:
        """Dump a nested component; returns its component model as JSON data."""
        model = self._dump(component, field_name)
        return model.model_dump(mode="json", exclude_none=True)

    def components(self, components: Sequence[object], field_name: str) -> list[dict[str, Any]]:
        """Dump a list of nested components (``field[0]``, ``field[1]``, ...)."""
        return [
            self.component(item, f"{field_name}[{index}]") for index, item in enumerate(components)
        ]

    def _dump(self, component: object, segment: str) -> ComponentModel:
        cls = type(component)
        self._frames.append(_Frame(segment))
        token = ACTIVE_DUMPER.set(self)
        try:
            spec = self._spec(cls)
            if spec.shared_state:
                self._check_shared(component, spec)
            config = self._config(component, spec)
            unserializable = list(self._frames[-1].unserializable)
        finally:
            ACTIVE_DUMPER.reset(token)
            self._frames.pop()
        return ComponentModel(
            provider=spec.provider,
            component_type=spec.component_type,
            version=FORMAT_VERSION,
            component_version=spec.component_version,
            description=spec.description or _describe_class(cls),
            label=cls.__name__,
            config=config,
            unserializable=unserializable or None,
        )

    def _config(self, component: Any, spec: ComponentSpec) -> dict[str, Any]:
        if spec.to_config is not None:
            value = self.json_value(dict(spec.to_config(component)), "")
            return dict(value)
        config = component._to_config()  # the component protocol: private by AutoGen's design
        if not isinstance(config, BaseModel):
            self.refuse(
                "",
                f"`{type(component).__qualname__}._to_config()` returned "
                f"{type(config).__name__}, not a pydantic model.",
            )
        data: dict[str, Any] = config.model_dump(mode="json", exclude_none=True)
        return data

    def _spec(self, cls: type) -> ComponentSpec:
        try:
            spec = spec_for_class(cls)
        except ValueError as exc:  # a local class speaking AutoGen's protocol
            self.refuse("", str(exc))
        if spec is None:
            self.refuse("", self._unregistered(cls))
        return spec

    def _check_shared(self, component: object, spec: ComponentSpec) -> None:
        first = self._shared.get(id(component))
        here = self.path()
        if first is None:
            self._shared[id(component)] = here
            self._keep.append(component)
            return
        warnings.warn(
            f"`{here or '<root>'}` is the same {spec.cls.__name__} instance as "
            f"`{first or '<root>'}`; a config holds each occurrence separately, so loading "
            "gives independent copies (e.g. two replay scripts, two memories).",
            ComponentSerializationWarning,
            stacklevel=stacklevel(),
        )

    @staticmethod
    def _unregistered(cls: type) -> str:
        ancestor = registered_ancestor(cls)
        hint = (
            f" It subclasses the registered `{ancestor.__name__}`, but a subclass may "
            f"behave differently, so it is not dumped as one: register it with "
            f"`register_component({cls.__name__}, provider='...', like={ancestor.__name__})`."
            if ancestor is not None
            else f" Register it with `flowlib.component.register_component({cls.__name__}, "
            "...)`, or give it AutoGen's component_config_schema / _to_config / _from_config."
        )
        return f"`{cls.__qualname__}` is not a registered component.{hint}"


class Loader:
    """Builds components from component models, resolving providers in the registry only.

    Args:
        conditions: Callables for the graph edges whose conditions were callables, by
            the name the dump recorded.
        policy: What the loaded components may touch (files, programs, code); by
            default nothing (see ``_policy.py``).
    """

    def __init__(
        self,
        *,
        conditions: Mapping[str, EdgeFunction] | None = None,
        policy: LoadPolicy | None = None,
    ) -> None:
        self.conditions: Mapping[str, EdgeFunction] = dict(conditions or {})
        self.policy = policy or LoadPolicy()
        self._segments: list[str] = []
        self._depth = 0

    def path(self, field_name: str = "") -> str:
        """The path of ``field_name`` in the component being loaded."""
        return _join([*self._segments, field_name])

    def error(self, message: str, field_name: str = "") -> ComponentLoadError:
        """A load error located at ``field_name`` of the current component."""
        where = self.path(field_name)
        return ComponentLoadError(f"`{where or '<root>'}`: {message}", path=where)

    @contextmanager
    def at(self, segment: str) -> Iterator[None]:
        """Enter ``segment`` for paths of errors raised inside (non-component fields)."""
        self._segments.append(segment)
        try:
            yield
        finally:
            self._segments.pop()

    def validate(self, schema: type[ConfigT], config: Mapping[str, Any]) -> ConfigT:
        """Validate ``config`` against ``schema``, reporting errors with their path."""
        try:
            return schema.model_validate(dict(config))
        except ValidationError as exc:
            problems = []
            for error in exc.errors():
                where = self.path(".".join(str(part) for part in error["loc"]))
                if error["type"] == "extra_forbidden":
                    problems.append(f"`{where}` is not a field of this component")
                else:
                    problems.append(f"`{where}`: {error['msg']}")
            raise ComponentLoadError(
                "Invalid component config: " + "; ".join(problems), path=self.path()
            ) from exc

    def build(self, what: str, factory: Callable[[], Any]) -> Any:
        """Call a constructor, turning its ``ValueError``/``TypeError`` into a load error."""
        try:
            return factory()
        except (ComponentLoadError, GraphError):
            # A nested load error has its path already; a graph error names the fault.
            raise
        except (ValueError, TypeError) as exc:
            raise self.error(f"building {what} failed: {exc}") from exc

    # -- components ----------------------------------------------------------------------

    def root(self, data: ComponentModel | Mapping[str, Any], expected: type | None) -> Any:
        """Build the root component."""
        try:
            # All or nothing (issue 21.8): check every component of the config (its
            # provider, versions, schema and permissions) before building any of them,
            # so a refused config has created no file and started nothing.
            self._check_tree(data, "", 1)
            return self._load(data, "", expected)
        except RecursionError as exc:  # nesting inside one component's own fields
            raise ComponentLoadError(
                "The config is nested too deeply to load; flatten it.", path=""
            ) from exc

    def _check_tree(
        self, data: ComponentModel | Mapping[str, Any], segment: str, depth: int
    ) -> None:
        """Check one component model and every one nested in its config, building none."""
        self._segments.append(segment)
        try:
            model, spec = self._spec_of(data, depth)
            if spec is None:
                # A shape its parent interprets itself (AutoGen's StaticWorkbench in an
                # AssistantAgent); a provider nobody knows is refused when it is built.
                return
            if model.provider == spec.provider:
                self._check_versions(model, spec)
            self.policy.check(spec.cls, model.config, self)
            if spec.from_config is None and spec.loadable:
                self.validate(spec.cls.component_config_schema, model.config)  # type: ignore[attr-defined]
                self._refuse_code(spec.cls, model.config)
            for key, value in model.config.items():
                self._check_nested(value, str(key), depth)
        finally:
            self._segments.pop()

    def _refuse_code(self, cls: type, config: Mapping[str, Any]) -> None:
        """Refuse a config that sets a field of ``cls.component_code_fields``."""
        fields: Mapping[str, str] = getattr(cls, "component_code_fields", {})
        for name, instead in fields.items():
            if config.get(name) is not None:
                raise self.error(
                    f"`{name}` cannot be loaded from a config (it would be code); {instead}.",
                    name,
                )

    def _spec_of(
        self, data: ComponentModel | Mapping[str, Any], depth: int
    ) -> tuple[ComponentModel, ComponentSpec | None]:
        """The component model of ``data``, nested ``depth`` levels deep, and its
        provider's registration (None for a provider nobody registered)."""
        if depth > MAX_DEPTH:
            raise self.error(
                f"components nest more than {MAX_DEPTH} levels deep here; a config "
                "this deep is refused (it would exhaust the stack)."
            )
        model = self._model(data)
        return model, spec_for_provider(model.provider)

    def _check_nested(self, value: Any, segment: str, depth: int) -> None:
        if isinstance(value, Mapping):
            if isinstance(value.get("provider"), str) and isinstance(value.get("config"), Mapping):
                self._check_tree(value, segment, depth + 1)
                return
            for key, item in value.items():
                self._check_nested(item, f"{segment}.{key}", depth)
        elif isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                self._check_nested(item, f"{segment}[{index}]", depth)

    def component(
        self,
        data: ComponentModel | Mapping[str, Any],
        field_name: str,
        expected: type | tuple[type, ...],
    ) -> Any:
        """Build a nested component and check it is an ``expected`` instance."""
        return self._load(data, field_name, expected)

    def components(
        self,
        items: Sequence[ComponentModel | Mapping[str, Any]],
        field_name: str,
        expected: type | tuple[type, ...],
    ) -> list[Any]:
        """Build a list of nested components."""
        return [
            self.component(item, f"{field_name}[{index}]", expected)
            for index, item in enumerate(items)
        ]

    def _load(
        self,
        data: ComponentModel | Mapping[str, Any],
        segment: str,
        expected: type | tuple[type, ...] | None,
    ) -> Any:
        self._segments.append(segment)
        self._depth += 1
        token = ACTIVE_LOADER.set(self)
        try:
            model, spec = self._spec_of(data, self._depth)
            if spec is None:
                raise UnknownProviderError(model.provider, known_providers(), path=self.path())
            if model.provider == spec.provider:
                self._check_versions(model, spec)
            self._warn_missing(model)
            self.policy.check(spec.cls, model.config, self)
            component = self._build(spec, model.config)
            if expected is not None and not isinstance(component, expected):
                raise self.error(
                    f"`{model.provider}` builds {a(type(component).__name__)}, but this field "
                    f"takes a {_names(expected)}."
                )
            return component
        finally:
            ACTIVE_LOADER.reset(token)
            self._segments.pop()
            self._depth -= 1

    def _build(self, spec: ComponentSpec, config: Mapping[str, Any]) -> Any:
        target = spec.cls
        if spec.from_config is not None:
            from_config = spec.from_config
            return self.build(target.__name__, lambda: from_config(config))
        schema: type[BaseModel] = target.component_config_schema  # type: ignore[attr-defined]
        validated = self.validate(schema, config) if spec.loadable else config
        from_config_method = target._from_config  # type: ignore[attr-defined]
        return self.build(target.__name__, lambda: from_config_method(validated))

    def _model(self, data: ComponentModel | Mapping[str, Any]) -> ComponentModel:
        if isinstance(data, ComponentModel):
            return data
        if not isinstance(data, Mapping):
            raise self.error(
                f"expected a component model (a dict with `provider` and `config`), got a "
                f"{type(data).__name__}."
            )
        try:
            return ComponentModel.model_validate(dict(data))
        except ValidationError as exc:
            raise self.error(f"not a component model: {exc}") from exc

    def _check_versions(self, model: ComponentModel, spec: ComponentSpec) -> None:
        if model.component_type is not None and model.component_type != spec.component_type:
            raise self.error(
                f"`{model.provider}` is a {spec.component_type!r} component, but the config "
                f"says component_type={model.component_type!r}."
            )
        if model.version is not None and model.version > FORMAT_VERSION:
            raise self.error(
                f"the config has format version {model.version}; this flowlib reads version "
                f"{FORMAT_VERSION}. Upgrade flowlib."
            )
        if model.component_version is not None and model.component_version > (
            spec.component_version
        ):
            raise self.error(
                f"`{model.provider}` config has component_version {model.component_version}; "
                f"this flowlib reads up to {spec.component_version}. Upgrade flowlib."
            )

    def _warn_missing(self, model: ComponentModel) -> None:
        missing = [
            name for name in model.unserializable or () if not name.startswith(RESTORED_PREFIX)
        ]
        if missing:
            warnings.warn(
                f"`{self.path() or '<root>'}` ({model.provider}) was dumped without "
                f"{', '.join(f'`{name}`' for name in missing)}; the loaded component uses "
                "the defaults instead.",
                ComponentSerializationWarning,
                stacklevel=stacklevel(),
            )


def _names(expected: type | tuple[type, ...]) -> str:
    if isinstance(expected, tuple):
        return " or ".join(cls.__name__ for cls in expected)
    return expected.__name__


def dump(component: object) -> ComponentModel:
    """Dump ``component``; nested under the dump in progress when called from a
    ``_to_config``. See [`dump_component`][flowlib.component.dump_component]."""
    active = ACTIVE_DUMPER.get()
    if active is not None:
        return ComponentModel.model_validate(active.component(component, ""))
    return Dumper().root(component)


def load(
    model: ComponentModel | Mapping[str, Any],
    expected: type | None = None,
    *,
    conditions: Mapping[str, EdgeFunction] | None = None,
    policy: LoadPolicy | None = None,
) -> Any:
    """Build a component; nested under the load in progress when called from a
    ``_from_config``. See [`load_component`][flowlib.component.load_component].

    Raises:
        ComponentTypeError: The component is not an ``expected`` instance.
    """
    active = ACTIVE_LOADER.get()
    if active is not None and conditions is None and policy is None:
        component = active.component(model, "", object)
    else:
        component = Loader(conditions=conditions, policy=policy).root(model, None)
    if expected is not None and not isinstance(component, expected):
        raise ComponentTypeError(
            f"The config builds {a(type(component).__name__)}, not {a(expected.__name__)}; "
            f"load it with the matching class, or pass the config of a {expected.__name__}."
        )
    return component


def active_policy() -> LoadPolicy:
    """The permissions of the load in progress (for a class's ``_from_config``); outside
    a load, the default, which allows nothing."""
    loader = ACTIVE_LOADER.get()
    return LoadPolicy() if loader is None else loader.policy
