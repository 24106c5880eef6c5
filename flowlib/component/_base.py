"""The public entry points: ``dump_component`` / ``load_component``, the mixin that gives
agents, teams, termination conditions and model clients the same two methods, and
[`Component`][flowlib.component.Component], the one protocol by which every class (flowlib's
and yours) writes itself to a config and builds itself from one."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Generic, TypeVar, overload

from pydantic import BaseModel
from typing_extensions import Self

from ._model import ComponentModel, EdgeFunction, dump, load

# A CodeExecutorAgent's approval function (ApprovalRequest -> ApprovalResponse, sync or
# async); named loosely here, as the component layer sits below the agents.
ApprovalFuncType = Callable[[Any], Any]

__all__ = [
    "Component",
    "ComponentBase",
    "ComponentLoader",
    "dump_component",
    "load_component",
]

T = TypeVar("T")
ConfigT = TypeVar("ConfigT", bound=BaseModel)


def dump_component(component: object) -> ComponentModel:
    """Dump ``component`` (and everything nested in it) to a
    [`ComponentModel`][flowlib.component.ComponentModel].

    The result is a blueprint: ``model.model_dump(mode="json")`` is JSON, and
    [`load_component`][flowlib.component.load_component] builds a new, equivalent component from it.
    Run state (message history, a replay script's position, cache entries) is not included.

    Fields a config cannot hold are handled in one of two ways:

    * **refused** ([`ComponentSerializationError`][flowlib.component.ComponentSerializationError])
    when the component needs them to
      work as built: a function wrapped as a tool (``FunctionTool``) or an agent
      (``FunctionAgent``), ``FunctionalTermination``, a ``CodeExecutorAgent``'s
      ``approval_func``, a ``UserProxyAgent``'s custom ``input_func``,
      ``output_content_type``, a client's ``response_format`` class or token provider;
    * **left out, listed in** ``unserializable`` **and warned about**
      ([`ComponentSerializationWarning`][flowlib.component.ComponentSerializationWarning]) when the
      documents call them optional or "ignored": ``selector_func``, ``candidate_func``,
      ``tool_call_summary_formatter``, ``custom_message_types``, a ``TimeoutTermination``'s test
      clock, secret headers. Callable edge conditions are written as markers in the graph and are
      restored by ``load_component(..., conditions={name: func})``.

    API keys are never written: a loaded OpenAI client reads ``OPENAI_API_KEY`` (or an
    ``api_key`` you add to the config yourself).

    Args:
        component: An agent, team, termination condition, model client, model context,
            memory, cache store or code executor.

    Raises:
        ComponentSerializationError: A field cannot be written (see above), or a class in
            the tree is not a registered component.

    Examples:
        >>> from flowlib.conditions import MaxMessageTermination, TextMentionTermination
        >>> model = dump_component(MaxMessageTermination(10) | TextMentionTermination("STOP"))
        >>> model.provider
        'flowlib.base.OrTerminationCondition'
        >>> condition = load_component(model.model_dump(mode="json"))
        >>> type(condition).__name__
        'OrTerminationCondition'
    """
    return dump(component)


@overload
def load_component(
    model: ComponentModel | Mapping[str, Any],
    expected: None = None,
    *,
    conditions: Mapping[str, EdgeFunction] | None = None,
    allow_paths: Iterable[str | os.PathLike[str]] | None = None,
    allow_commands: bool = False,
    approval_func: ApprovalFuncType | None = None,
    allow_env: Iterable[str] | None = None,
    allow_hosts: Iterable[str] | None = None,
    allow_functions: Iterable[str] | None = None,
) -> Any: ...


@overload
def load_component(
    model: ComponentModel | Mapping[str, Any],
    expected: type[T],
    *,
    conditions: Mapping[str, EdgeFunction] | None = None,
    allow_paths: Iterable[str | os.PathLike[str]] | None = None,
    allow_commands: bool = False,
    approval_func: ApprovalFuncType | None = None,
    allow_env: Iterable[str] | None = None,
    allow_hosts: Iterable[str] | None = None,
    allow_functions: Iterable[str] | None = None,
) -> T: ...


def load_component(
    model: ComponentModel | Mapping[str, Any],
    expected: type[T] | None = None,
    *,
    conditions: Mapping[str, EdgeFunction] | None = None,
    allow_paths: Iterable[str | os.PathLike[str]] | None = None,
    allow_commands: bool = False,
    approval_func: ApprovalFuncType | None = None,
    allow_env: Iterable[str] | None = None,
    allow_hosts: Iterable[str] | None = None,
    allow_functions: Iterable[str] | None = None,
) -> T | Any:
    """Build a component from a [`ComponentModel`][flowlib.component.ComponentModel] or its JSON
    dict.

    Providers are looked up in flowlib's registry only (flowlib's provider paths,
    AutoGen's, and short class names such as ``"OpenAIChatCompletionClient"``); a
    provider string is never imported, so a config cannot make flowlib run code. What
    else a loaded config may touch is given here, and is nothing by default: see
    "Security" in the docs.

    Args:
        model: The component model, or a dict (``model_dump(mode="json")``, parsed JSON,
            or a hand-written ``{"provider": ..., "config": {...}}``).
        expected: If given, the component must be an instance of this class.
        conditions: Callables for graph edges whose conditions were callables, by the
            name the dump recorded (the function's ``__name__``).
        allow_paths: Directories under which loaded components may create or change
            files (a ``SQLiteStore`` path, a ``DiskCacheStore`` directory, a
            ``LocalCommandLineCodeExecutor`` work_dir); a config naming a path outside
            them is refused.
        allow_commands: Whether an ``McpWorkbench`` may start its server's command.
        approval_func: Asked before every code execution of each loaded
            ``CodeExecutorAgent``; without it, a config holding one is refused.
        allow_env: Environment variables the config may read (a model client's
            ``api_key_env``). Without them a config reads none, except the key of the
            endpoint it belongs to (``OPENAI_API_KEY`` for OpenAI's own endpoint or
            ``OPENAI_BASE_URL``'s, ``AZURE_OPENAI_API_KEY`` for ``AZURE_OPENAI_ENDPOINT``).
        allow_hosts: Hosts (``"redis.internal"``, ``"127.0.0.1:8000"``) the config may
            connect to besides its model endpoint: an ``McpWorkbench``'s SSE/HTTP
            ``url``, a ``RedisStore``'s ``host``, a PostgreSQL ``dsn``.
        allow_functions: Functions (``"module:qualname"``, e.g. ``"myapp.tools:search"``)
            that a ``FunctionTool`` config may name: loading imports each one. A config
            naming any other function is refused.

    Returns:
        The new component.

    Raises:
        UnknownProviderError: A provider is not registered (a ``ValueError``).
        ComponentLoadError: A config is invalid, of a newer version, nested too deeply
            (over 100 components), a nested component has the wrong kind, or it needs
            a permission not given (a ``ValueError``).
        ConditionSerializationError: A callable edge condition is not in ``conditions``.
        TypeError: The component is not an ``expected`` instance.
    """
    from ._policy import LoadPolicy

    policy = LoadPolicy.build(
        allow_paths=allow_paths,
        allow_commands=allow_commands,
        approval_func=approval_func,
        allow_env=allow_env,
        allow_hosts=allow_hosts,
        allow_functions=allow_functions,
    )
    return load(model, expected, conditions=conditions, policy=policy)


class ComponentLoader:
    """Gives a class the classmethod
    [`load_component`][flowlib.component.ComponentLoader.load_component]."""

    @overload
    @classmethod
    def load_component(
        cls,
        model: ComponentModel | Mapping[str, Any],
        expected: None = None,
        *,
        conditions: Mapping[str, EdgeFunction] | None = None,
        allow_paths: Iterable[str | os.PathLike[str]] | None = None,
        allow_commands: bool = False,
        approval_func: ApprovalFuncType | None = None,
        allow_env: Iterable[str] | None = None,
        allow_hosts: Iterable[str] | None = None,
        allow_functions: Iterable[str] | None = None,
    ) -> Self: ...

    @overload
    @classmethod
    def load_component(
        cls,
        model: ComponentModel | Mapping[str, Any],
        expected: type[T],
        *,
        conditions: Mapping[str, EdgeFunction] | None = None,
        allow_paths: Iterable[str | os.PathLike[str]] | None = None,
        allow_commands: bool = False,
        approval_func: ApprovalFuncType | None = None,
        allow_env: Iterable[str] | None = None,
        allow_hosts: Iterable[str] | None = None,
        allow_functions: Iterable[str] | None = None,
    ) -> T: ...

    @classmethod
    def load_component(
        cls,
        model: ComponentModel | Mapping[str, Any],
        expected: type[T] | None = None,
        *,
        conditions: Mapping[str, EdgeFunction] | None = None,
        allow_paths: Iterable[str | os.PathLike[str]] | None = None,
        allow_commands: bool = False,
        approval_func: ApprovalFuncType | None = None,
        allow_env: Iterable[str] | None = None,
        allow_hosts: Iterable[str] | None = None,
        allow_functions: Iterable[str] | None = None,
    ) -> Self | T:
        """Build a component from a config and check it is an instance of this class.

        ``ChatCompletionClient.load_component({"provider": "OpenAIChatCompletionClient",
        "config": {"model": "gpt-4o"}})`` builds an OpenAI client;
        ``TerminationCondition.load_component(data)`` any condition. See
        [`flowlib.component.load_component`][flowlib.component.load_component] for the arguments.

        Raises:
            TypeError: The config builds something that is not an instance of this class
                (or of ``expected``).
        """
        target: Any = expected
        if target is None and cls not in (ComponentLoader, ComponentBase):
            target = cls
        return load_component(  # type: ignore[no-any-return]
            model,
            target,
            conditions=conditions,
            allow_paths=allow_paths,
            allow_commands=allow_commands,
            approval_func=approval_func,
            allow_env=allow_env,
            allow_hosts=allow_hosts,
            allow_functions=allow_functions,
        )


class ComponentBase(ComponentLoader):
    """Mixin of the component base classes (agents, teams, termination conditions, model
    clients): ``obj.dump_component()`` and ``Class.load_component(...)``."""

    component_type: ClassVar[str]

    def dump_component(self) -> ComponentModel:
        """Dump this component to a [`ComponentModel`][flowlib.component.ComponentModel]; see
        [`flowlib.component.dump_component`][flowlib.component.dump_component].

        Raises:
            ComponentSerializationError: A field cannot be written.
        """
        return dump_component(self)


class Component(ComponentBase, Generic[ConfigT]):
    """The component protocol, typed by its config model (AutoGen's ``Component[Config]``).

    A class writes itself to a declarative config and builds itself from one:

    * ``component_config_schema``: the pydantic model of the config;
    * ``_to_config(self)``: the constructor arguments, as a ``component_config_schema``
      instance (nested components as [`ComponentModel`][flowlib.component.ComponentModel]
      fields, from ``dump_component()`` or [`dump_field`][flowlib.component.dump_field]);
    * ``_from_config(cls, config)``: a new instance from a validated config.

    flowlib's own classes implement exactly this; the registry only maps provider
    strings to classes. Register your class with
    [`register_component`][flowlib.component.register_component] to make it loadable.

    Class attributes: ``component_type`` (``"termination"``, ``"agent"``, ...; the
    flowlib base classes set it), ``component_version`` (default 1),
    ``component_provider_override`` (the provider string dumps write; default
    ``"<module>.<qualname>"``) and ``component_description``.

    Examples:
        A custom termination condition, as in AutoGen's guide:

        ```python
        from collections.abc import Sequence
        from pydantic import BaseModel
        from typing_extensions import Self
        from flowlib.base import TerminationCondition
        from flowlib.component import Component, register_component
        from flowlib.messages import StopMessage, ToolCallExecutionEvent

        class FunctionCallTerminationConfig(BaseModel):
            function_name: str

        class MyFunctionCallTermination(
            TerminationCondition, Component[FunctionCallTerminationConfig]
        ):
            component_config_schema = FunctionCallTerminationConfig
            component_provider_override = "myapp.MyFunctionCallTermination"

            def __init__(self, function_name: str) -> None:
                self._terminated = False
                self._function_name = function_name

            @property
            def terminated(self) -> bool:
                return self._terminated

            async def __call__(self, messages: Sequence[object]) -> StopMessage | None:
                for message in messages:
                    if isinstance(message, ToolCallExecutionEvent) and any(
                        r.name == self._function_name for r in message.content
                    ):
                        self._terminated = True
                        return StopMessage(content="done", source="MyFunctionCallTermination")
                return None

            async def reset(self) -> None:
                self._terminated = False

            def _to_config(self) -> FunctionCallTerminationConfig:
                return FunctionCallTerminationConfig(function_name=self._function_name)

            @classmethod
            def _from_config(cls, config: FunctionCallTerminationConfig) -> Self:
                return cls(function_name=config.function_name)

        register_component(MyFunctionCallTermination)
        ```
    """

    component_config_schema: type[ConfigT]
    component_version: ClassVar[int] = 1
    component_code_fields: ClassVar[Mapping[str, str]] = {}
    """Config fields that would hold code (a function), each with what to do instead: a
    config that sets one is refused when loaded, before anything is built
    (``{"input_func": "build the agent in code with input_func="}``)."""

    def _to_config(self) -> ConfigT:
        """The constructor arguments of this component, as its config model."""
        raise NotImplementedError(f"{type(self).__qualname__} does not implement _to_config().")

    @classmethod
    def _from_config(cls, config: ConfigT) -> Self:
        """A new component built from a validated config."""
        raise NotImplementedError(f"{cls.__qualname__} does not implement _from_config().")
