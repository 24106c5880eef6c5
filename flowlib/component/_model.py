"""``ComponentModel``: the JSON shape of a declarative component configuration."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from ..messages import BaseChatMessage

T = TypeVar("T")

__all__ = ["ComponentModel"]


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
        conditions: Mapping[str, Callable[[BaseChatMessage], bool]] | None = None,
    ) -> Any: ...

    @overload
    def load_component(
        self,
        expected: type[T],
        *,
        conditions: Mapping[str, Callable[[BaseChatMessage], bool]] | None = None,
    ) -> T: ...

    def load_component(
        self,
        expected: type[T] | None = None,
        *,
        conditions: Mapping[str, Callable[[BaseChatMessage], bool]] | None = None,
    ) -> T | Any:
        """Build the component this model describes; see
        [`flowlib.component.load_component`][flowlib.component.load_component].

        Examples:
            >>> from flowlib.conditions import TextMentionTermination
            >>> model = TextMentionTermination("DONE").dump_component()
            >>> model.load_component()
            TextMentionTermination(text='DONE', sources=None)
        """
        from ._base import load_component

        return load_component(self, expected, conditions=conditions)
