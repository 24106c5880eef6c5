"""The public entry points: ``dump_component`` / ``load_component`` and the mixin that
gives agents, teams, termination conditions and model clients the same two methods."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias, TypeVar, overload

from typing_extensions import Self

from ._model import ComponentModel

if TYPE_CHECKING:
    # Not imported at run time: the base classes import this module early.
    from ..agents._code_executor_agent import ApprovalFuncType
    from ..messages import BaseChatMessage

__all__ = ["ComponentBase", "ComponentLoader", "dump_component", "load_component"]

T = TypeVar("T")

EdgeFunction: TypeAlias = "Callable[[BaseChatMessage], bool]"


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
    from ._codec import Dumper

    return Dumper().root(component)


@overload
def load_component(
    model: ComponentModel | Mapping[str, Any],
    expected: None = None,
    *,
    conditions: Mapping[str, EdgeFunction] | None = None,
    allow_paths: Iterable[str | os.PathLike[str]] | None = None,
    allow_commands: bool = False,
    approval_func: ApprovalFuncType | None = None,
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
) -> T: ...


def load_component(
    model: ComponentModel | Mapping[str, Any],
    expected: type[T] | None = None,
    *,
    conditions: Mapping[str, EdgeFunction] | None = None,
    allow_paths: Iterable[str | os.PathLike[str]] | None = None,
    allow_commands: bool = False,
    approval_func: ApprovalFuncType | None = None,
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

    Returns:
        The new component.

    Raises:
        UnknownProviderError: A provider is not registered (a ``ValueError``).
        ComponentLoadError: A config is invalid, of a newer version, nested too deeply
            (over 100 components), a nested component has the wrong kind, or it needs
            a permission not given (a ``ValueError``).
        ConditionSerializationError: A callable edge condition is not in ``conditions``.
        ArgumentTypeError: The component is not an ``expected`` instance (a
            ``TypeError``), or an argument has the wrong type.
    """
    from ..errors import ArgumentTypeError
    from ._codec import Loader
    from ._policy import LoadPolicy

    policy = LoadPolicy.build(
        allow_paths=allow_paths, allow_commands=allow_commands, approval_func=approval_func
    )
    component = Loader(conditions=conditions, policy=policy).root(model, None)
    if expected is not None and not isinstance(component, expected):
        raise ArgumentTypeError(
            f"The config builds a {type(component).__name__}, not a {expected.__name__}.",
            argument="model",
        )
    return component


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
