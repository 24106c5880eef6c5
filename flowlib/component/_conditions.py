"""Configs of the termination conditions (component type ``"termination"``)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..base import AndTerminationCondition, OrTerminationCondition, TerminationCondition
from ..conditions import (
    ExternalTermination,
    FunctionalTermination,
    FunctionCallTermination,
    HandoffTermination,
    MaxMessageTermination,
    SourceMatchTermination,
    StopMessageTermination,
    TextMentionTermination,
    TextMessageTermination,
    TimeoutTermination,
    TokenUsageTermination,
)
from ._codec import Dumper, Loader
from ._model import ComponentModel
from ._registry import ComponentSpec

__all__ = ["condition_specs"]

_AUTOGEN = "autogen_agentchat.conditions."


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MaxMessageConfig(_Strict):
    max_messages: int
    include_agent_event: bool = False


class TextMentionConfig(_Strict):
    text: str
    sources: list[str] | None = None


class EmptyConfig(_Strict):
    pass


class TokenUsageConfig(_Strict):
    max_total_token: int | None = None
    max_prompt_token: int | None = None
    max_completion_token: int | None = None


class HandoffConfig(_Strict):
    target: str


class TimeoutConfig(_Strict):
    timeout_seconds: float


class SourceMatchConfig(_Strict):
    sources: list[str]


class TextMessageConfig(_Strict):
    source: str | None = None


class FunctionCallConfig(_Strict):
    function_name: str


class CombinedConfig(_Strict):
    conditions: list[ComponentModel]


def _params(condition: Any, dumper: Dumper) -> dict[str, Any]:
    """The built-ins' constructor arguments (their private ``_params()``), as JSON."""
    params: dict[str, Any] = condition._params()
    return {
        name: dumper.json_value(value, name) for name, value in params.items() if value is not None
    }


def _simple(
    cls: type[TerminationCondition], schema: type[_Strict], autogen_name: str | None = None
) -> ComponentSpec:
    def to_config(condition: Any, dumper: Dumper) -> Mapping[str, Any]:
        return _params(condition, dumper)

    def from_config(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
        arguments = loader.validate(schema, config).model_dump(exclude_none=True)
        return loader.build(target.__name__, lambda: target(**arguments))

    name = autogen_name or cls.__name__
    return ComponentSpec(
        cls=cls,
        provider=f"flowlib.conditions.{cls.__name__}",
        component_type="termination",
        to_config=to_config,
        from_config=from_config,
        aliases=(_AUTOGEN + name, cls.__name__),
    )


def _timeout_to_config(condition: Any, dumper: Dumper) -> Mapping[str, Any]:
    if condition._clock is not time.monotonic:
        dumper.skip(
            "clock",
            "a replaced clock is a Python callable; the loaded condition uses time.monotonic.",
        )
    return _params(condition, dumper)


def _combined(cls: type[AndTerminationCondition] | type[OrTerminationCondition]) -> ComponentSpec:
    def to_config(condition: Any, dumper: Dumper) -> Mapping[str, Any]:
        return {"conditions": dumper.components(list(condition._conditions), "conditions")}

    def from_config(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
        parsed = loader.validate(CombinedConfig, config)
        parts = loader.components(parsed.conditions, "conditions", TerminationCondition)
        return loader.build(target.__name__, lambda: target(*parts))

    return ComponentSpec(
        cls=cls,
        provider=f"flowlib.base.{cls.__name__}",
        component_type="termination",
        to_config=to_config,
        from_config=from_config,
        aliases=(f"autogen_agentchat.base.{cls.__name__}", cls.__name__),
    )


def _refuse_functional(condition: Any, dumper: Dumper) -> Mapping[str, Any]:
    dumper.refuse(
        "func",
        "FunctionalTermination wraps a Python function, which a declarative config cannot "
        "hold. Use a built-in condition (they all serialise), or register your own "
        "TerminationCondition subclass with flowlib.component.register_component().",
    )


def _refuse_functional_load(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    raise loader.error(
        "FunctionalTermination wraps a Python function and cannot be loaded from a config."
    )


def condition_specs() -> list[ComponentSpec]:
    """The specs of every built-in termination condition."""
    timeout = _simple(TimeoutTermination, TimeoutConfig)
    return [
        _simple(MaxMessageTermination, MaxMessageConfig),
        _simple(TextMentionTermination, TextMentionConfig),
        _simple(StopMessageTermination, EmptyConfig),
        _simple(TokenUsageTermination, TokenUsageConfig),
        _simple(HandoffTermination, HandoffConfig),
        ComponentSpec(
            cls=TimeoutTermination,
            provider=timeout.provider,
            component_type="termination",
            to_config=_timeout_to_config,
            from_config=timeout.from_config,
            aliases=timeout.aliases,
        ),
        ComponentSpec(
            cls=ExternalTermination,
            provider="flowlib.conditions.ExternalTermination",
            component_type="termination",
            to_config=lambda condition, dumper: {},
            from_config=_simple(ExternalTermination, EmptyConfig).from_config,
            aliases=(_AUTOGEN + "ExternalTermination", "ExternalTermination"),
            shared_state=True,  # one stop button for one team
        ),
        _simple(SourceMatchTermination, SourceMatchConfig),
        _simple(TextMessageTermination, TextMessageConfig),
        _simple(FunctionCallTermination, FunctionCallConfig),
        _combined(AndTerminationCondition),
        _combined(OrTerminationCondition),
        ComponentSpec(
            cls=FunctionalTermination,
            provider="flowlib.conditions.FunctionalTermination",
            component_type="termination",
            to_config=_refuse_functional,
            from_config=_refuse_functional_load,
            aliases=(_AUTOGEN + "FunctionalTermination",),
            loadable=False,
        ),
    ]
