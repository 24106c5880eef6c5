"""Configs of the agents (component type ``"agent"``)."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..agents import (
    AssistantAgent,
    CodeExecutorAgent,
    FunctionAgent,
    MessageFilterAgent,
    MessageFilterConfig,
    SocietyOfMindAgent,
    UserProxyAgent,
)
from ..agents._assistant_agent import DEFAULT_DESCRIPTION as ASSISTANT_DESCRIPTION
from ..base import ChatAgent, Handoff, Team
from ..code_executors import CodeExecutor
from ..memory import Memory
from ..model_context import ChatCompletionContext
from ..models import ChatCompletionClient
from ..tools import BaseTool
from ._codec import Dumper, Loader
from ._model import ComponentModel
from ._registry import ComponentSpec

__all__ = ["agent_specs"]

_AUTOGEN = "autogen_agentchat.agents."
# AutoGen wraps an agent's tools in a StaticWorkbench; flowlib reads its tools back.
_STATIC_WORKBENCH = frozenset({"autogen_core.tools.StaticWorkbench", "StaticWorkbench"})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())


def _spec(cls: type, to_config: Any, from_config: Any, *, loadable: bool = True) -> ComponentSpec:
    return ComponentSpec(
        cls=cls,
        provider=f"flowlib.agents.{cls.__name__}",
        component_type="agent",
        to_config=to_config,
        from_config=from_config,
        aliases=(_AUTOGEN + cls.__name__, cls.__name__),
        loadable=loadable,
    )


# --- AssistantAgent ----------------------------------------------------------------------


class AssistantAgentConfig(_Strict):
    name: str
    model_client: ComponentModel
    tools: list[ComponentModel] | None = None
    workbench: list[ComponentModel] | None = None
    handoffs: list[Handoff | str] | None = None
    model_context: ComponentModel | None = None
    memory: list[ComponentModel] | None = None
    description: str = ASSISTANT_DESCRIPTION
    system_message: str | None = None
    model_client_stream: bool = False
    reflect_on_tool_use: bool = False
    tool_call_summary_format: str = "{result}"
    max_tool_iterations: int = 1
    metadata: dict[str, str] | None = None
    output_content_type_format: str | None = None
    structured_message_factory: ComponentModel | None = None


def _assistant_to(agent: Any, dumper: Dumper) -> Mapping[str, Any]:
    if agent._output_content_type is not None:
        dumper.refuse(
            "output_content_type",
            f"`{agent.name}` answers with the pydantic class "
            f"{agent._output_content_type.__qualname__}, which a config cannot hold "
            "(AutoGen blocks this dump too). Build this agent in code.",
        )
    if agent._tool_call_summary_formatter is not None:
        dumper.skip(
            "tool_call_summary_formatter",
            "it is a Python callable (documented as ignored by configs); the loaded agent "
            "formats summaries with tool_call_summary_format.",
        )
    config: dict[str, Any] = {
        "name": agent.name,
        "model_client": dumper.component(agent._model_client, "model_client"),
    }
    if agent._tools:
        config["tools"] = dumper.components(list(agent._tools), "tools")
    if agent._handoffs:
        config["handoffs"] = [handoff.model_dump() for handoff in agent._handoffs.values()]
    config["model_context"] = dumper.component(agent._model_context, "model_context")
    if agent._memory:
        config["memory"] = dumper.components(list(agent._memory), "memory")
    config["description"] = agent.description
    if agent.system_message is not None:
        config["system_message"] = agent.system_message
    config["model_client_stream"] = agent._model_client_stream
    config["reflect_on_tool_use"] = agent._reflect_on_tool_use
    config["tool_call_summary_format"] = agent._tool_call_summary_format
    config["max_tool_iterations"] = agent._max_tool_iterations
    if agent._metadata:
        config["metadata"] = dict(agent._metadata)
    if agent._output_content_type_format is not None:
        config["output_content_type_format"] = agent._output_content_type_format
    return config


def _workbench_tools(parsed: AssistantAgentConfig, loader: Loader) -> list[Any]:
    tools: list[Any] = []
    for index, workbench in enumerate(parsed.workbench or ()):
        if workbench.provider not in _STATIC_WORKBENCH:
            raise loader.error(
                f"workbench `{workbench.provider}` is not supported; flowlib agents take "
                "tools directly (`tools=[...]`).",
                f"workbench[{index}]",
            )
        items = workbench.config.get("tools") or []
        with loader.at(f"workbench[{index}]"):
            tools.extend(loader.components(items, "tools", BaseTool))
    return tools


def _assistant_from(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(AssistantAgentConfig, config)
    if parsed.structured_message_factory is not None:
        raise loader.error(
            "structured output (`output_content_type`) cannot be loaded from a config; "
            "build this agent in code.",
            "structured_message_factory",
        )
    client = loader.component(parsed.model_client, "model_client", ChatCompletionClient)
    tools = loader.components(parsed.tools or [], "tools", BaseTool)
    tools += _workbench_tools(parsed, loader)
    context = (
        None
        if parsed.model_context is None
        else loader.component(parsed.model_context, "model_context", ChatCompletionContext)
    )
    memory = loader.components(parsed.memory or [], "memory", Memory)
    return loader.build(
        f"AssistantAgent `{parsed.name}`",
        lambda: target(
            parsed.name,
            client,
            tools=tools or None,
            handoffs=parsed.handoffs,
            model_context=context,
            description=parsed.description,
            system_message=parsed.system_message,
            model_client_stream=parsed.model_client_stream,
            reflect_on_tool_use=parsed.reflect_on_tool_use,
            max_tool_iterations=parsed.max_tool_iterations,
            tool_call_summary_format=parsed.tool_call_summary_format,
            output_content_type_format=parsed.output_content_type_format,
            memory=memory or None,
            metadata=parsed.metadata,
        ),
    )


# --- UserProxyAgent ----------------------------------------------------------------------


class UserProxyAgentConfig(_Strict):
    name: str
    description: str = "A human user"
    input_func: str | None = None


def _user_proxy_to(agent: Any, dumper: Dumper) -> Mapping[str, Any]:
    if agent.input_func is not builtins.input:
        dumper.refuse(
            "input_func",
            f"`{agent.name}` reads the user's answers with the Python callable "
            f"{getattr(agent.input_func, '__qualname__', agent.input_func)!r}; a loaded agent "
            "would read the console instead. Build this agent in code (or pass "
            "input_func=None to dump a console agent).",
        )
    return {"name": agent.name, "description": agent.description}


def _user_proxy_from(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(UserProxyAgentConfig, config)
    if parsed.input_func is not None:
        raise loader.error(
            "an input function cannot be loaded from a config (it would be code); the "
            "agent reads the console unless built in code with input_func=.",
            "input_func",
        )
    return loader.build(
        f"UserProxyAgent `{parsed.name}`",
        lambda: target(parsed.name, description=parsed.description),
    )


# --- CodeExecutorAgent -------------------------------------------------------------------


class CodeExecutorAgentConfig(_Strict):
    name: str
    code_executor: ComponentModel
    model_client: ComponentModel | None = None
    model_context: ComponentModel | None = None
    model_client_stream: bool = False
    max_retries_on_error: int = 0
    description: str | None = None
    system_message: str | None = None
    sources: list[str] | None = None
    supported_languages: list[str] | None = None


def _code_executor_to(agent: Any, dumper: Dumper) -> Mapping[str, Any]:
    # The approval_func (a callable) is not written: loading a CodeExecutorAgent needs
    # `load_component(..., approval_func=...)` anyway, so a loaded agent never runs code
    # unapproved (flowlib/component/_policy.py).
    config: dict[str, Any] = {
        "name": agent.name,
        "code_executor": dumper.component(agent._code_executor, "code_executor"),
    }
    if agent._model_client is not None:
        config["model_client"] = dumper.component(agent._model_client, "model_client")
    config["model_context"] = dumper.component(agent._model_context, "model_context")
    config["model_client_stream"] = agent._model_client_stream
    config["max_retries_on_error"] = agent._max_retries_on_error
    config["description"] = agent.description
    if agent._system_messages:
        config["system_message"] = agent._system_messages[0].content
    if agent._sources is not None:
        config["sources"] = list(agent._sources)
    config["supported_languages"] = list(agent._supported_languages)
    return config


def _code_executor_from(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(CodeExecutorAgentConfig, config)
    executor = loader.component(parsed.code_executor, "code_executor", CodeExecutor)
    client = (
        None
        if parsed.model_client is None
        else loader.component(parsed.model_client, "model_client", ChatCompletionClient)
    )
    context = (
        None
        if parsed.model_context is None
        else loader.component(parsed.model_context, "model_context", ChatCompletionContext)
    )
    return loader.build(
        f"CodeExecutorAgent `{parsed.name}`",
        lambda: target(
            parsed.name,
            executor,
            model_client=client,
            model_context=context,
            model_client_stream=parsed.model_client_stream,
            max_retries_on_error=parsed.max_retries_on_error,
            description=parsed.description,
            system_message=parsed.system_message,
            sources=parsed.sources,
            approval_func=loader.policy.approval_func,
            supported_languages=parsed.supported_languages,
        ),
    )


# --- SocietyOfMindAgent ------------------------------------------------------------------


class SocietyOfMindAgentConfig(_Strict):
    name: str
    team: ComponentModel
    model_client: ComponentModel
    description: str = SocietyOfMindAgent.DEFAULT_DESCRIPTION
    instruction: str = SocietyOfMindAgent.DEFAULT_INSTRUCTION
    response_prompt: str = SocietyOfMindAgent.DEFAULT_RESPONSE_PROMPT
    model_context: ComponentModel | None = None


def _society_to(agent: Any, dumper: Dumper) -> Mapping[str, Any]:
    return {
        "name": agent.name,
        "team": dumper.component(agent.team, "team"),
        "model_client": dumper.component(agent._model_client, "model_client"),
        "description": agent.description,
        "instruction": agent._instruction,
        "response_prompt": agent._response_prompt,
        "model_context": dumper.component(agent._model_context, "model_context"),
    }


def _society_from(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(SocietyOfMindAgentConfig, config)
    team = loader.component(parsed.team, "team", Team)
    client = loader.component(parsed.model_client, "model_client", ChatCompletionClient)
    context = (
        None
        if parsed.model_context is None
        else loader.component(parsed.model_context, "model_context", ChatCompletionContext)
    )
    return loader.build(
        f"SocietyOfMindAgent `{parsed.name}`",
        lambda: target(
            parsed.name,
            team,
            client,
            description=parsed.description,
            instruction=parsed.instruction,
            response_prompt=parsed.response_prompt,
            model_context=context,
        ),
    )


# --- MessageFilterAgent ------------------------------------------------------------------


class MessageFilterAgentConfig(_Strict):
    name: str
    wrapped_agent: ComponentModel
    filter: MessageFilterConfig


def _filter_to(agent: Any, dumper: Dumper) -> Mapping[str, Any]:
    return {
        "name": agent.name,
        "wrapped_agent": dumper.component(agent.wrapped_agent, "wrapped_agent"),
        "filter": agent.filter.model_dump(mode="json"),
    }


def _filter_from(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(MessageFilterAgentConfig, config)
    wrapped = loader.component(parsed.wrapped_agent, "wrapped_agent", ChatAgent)
    return loader.build(
        f"MessageFilterAgent `{parsed.name}`",
        lambda: target(parsed.name, wrapped_agent=wrapped, filter=parsed.filter),
    )


# --- FunctionAgent -----------------------------------------------------------------------


def _function_agent_to(agent: Any, dumper: Dumper) -> Mapping[str, Any]:
    dumper.refuse(
        "func",
        f"FunctionAgent `{agent.name}` runs the Python function "
        f"{getattr(agent.func, '__qualname__', agent.func)!r}, which a declarative config "
        "cannot hold (flowlib never loads code from one). Build this node in code, or use "
        "an agent that serialises (e.g. AssistantAgent).",
    )


def _function_agent_from(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    raise loader.error("a FunctionAgent runs Python code and cannot be loaded from a config.")


def agent_specs() -> list[ComponentSpec]:
    """The specs of the built-in agents."""
    return [
        _spec(AssistantAgent, _assistant_to, _assistant_from),
        _spec(UserProxyAgent, _user_proxy_to, _user_proxy_from),
        _spec(CodeExecutorAgent, _code_executor_to, _code_executor_from),
        _spec(SocietyOfMindAgent, _society_to, _society_from),
        _spec(MessageFilterAgent, _filter_to, _filter_from),
        _spec(FunctionAgent, _function_agent_to, _function_agent_from, loadable=False),
    ]
