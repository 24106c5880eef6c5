"""Configs of what agents are made of: model contexts (``"chat_completion_context"``),
memories (``"memory"``), tools (``"tool"``) and code executors (``"code_executor"``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from pydantic import BaseModel, ConfigDict

from ..code_executors import LocalCommandLineCodeExecutor
from ..memory import ListMemory
from ..memory._types import MemoryContent
from ..model_context import (
    BufferedChatCompletionContext,
    HeadAndTailChatCompletionContext,
    TokenLimitedChatCompletionContext,
    UnboundedChatCompletionContext,
)
from ..models import ChatCompletionClient, LLMMessage
from ..tools import FunctionTool, ToolSchema
from ._codec import Dumper, Loader
from ._model import ComponentModel
from ._registry import ComponentSpec

__all__ = ["part_specs"]

_CONTEXTS = "autogen_core.model_context."


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())


class UnboundedConfig(_Strict):
    initial_messages: list[LLMMessage] | None = None


class BufferedConfig(_Strict):
    buffer_size: int
    initial_messages: list[LLMMessage] | None = None


class HeadAndTailConfig(_Strict):
    head_size: int
    tail_size: int
    initial_messages: list[LLMMessage] | None = None


class TokenLimitedConfig(_Strict):
    model_client: ComponentModel
    token_limit: int | None = None
    tool_schema: list[dict[str, Any]] | None = None
    initial_messages: list[LLMMessage] | None = None


def _initial(context: Any) -> dict[str, Any]:
    messages = [message.model_dump(mode="json") for message in context._initial_messages]
    return {"initial_messages": messages} if messages else {}


def _context_spec(
    cls: type, to_config: Any, from_config: Any, *, name: str | None = None
) -> ComponentSpec:
    short = name or cls.__name__
    return ComponentSpec(
        cls=cls,
        provider=f"flowlib.model_context.{cls.__name__}",
        component_type="chat_completion_context",
        to_config=to_config,
        from_config=from_config,
        aliases=(_CONTEXTS + short, short),
    )


def _unbounded_from(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(UnboundedConfig, config)
    return loader.build(target.__name__, lambda: target(parsed.initial_messages))


def _buffered_from(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(BufferedConfig, config)
    return loader.build(
        target.__name__, lambda: target(parsed.buffer_size, parsed.initial_messages)
    )


def _head_tail_from(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(HeadAndTailConfig, config)
    return loader.build(
        target.__name__,
        lambda: target(parsed.head_size, parsed.tail_size, parsed.initial_messages),
    )


def _token_limited_to(context: Any, dumper: Dumper) -> Mapping[str, Any]:
    config: dict[str, Any] = {
        "model_client": dumper.component(context._model_client, "model_client")
    }
    if context._token_limit is not None:
        config["token_limit"] = context._token_limit
    if context._tool_schema:
        config["tool_schema"] = dumper.json_value(list(context._tool_schema), "tool_schema")
    config.update(_initial(context))
    return config


def _token_limited_from(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(TokenLimitedConfig, config)
    client = loader.component(parsed.model_client, "model_client", ChatCompletionClient)
    schemas = cast("list[ToolSchema] | None", parsed.tool_schema)
    return loader.build(
        target.__name__,
        lambda: target(
            client,
            token_limit=parsed.token_limit,
            tool_schema=schemas,
            initial_messages=parsed.initial_messages,
        ),
    )


class ListMemoryConfig(_Strict):
    name: str | None = None
    memory_contents: list[MemoryContent] = []


def _list_memory_to(memory: Any, dumper: Dumper) -> Mapping[str, Any]:
    return {
        "name": memory.name,
        "memory_contents": [item.model_dump(mode="json") for item in memory.content],
    }


def _list_memory_from(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(ListMemoryConfig, config)
    return loader.build(target.__name__, lambda: target(parsed.name, parsed.memory_contents))


def _refuse_function_tool(tool: Any, dumper: Dumper) -> Mapping[str, Any]:
    dumper.refuse(
        "",
        f"FunctionTool `{tool.name}` wraps the Python function "
        f"`{getattr(tool.func, '__qualname__', tool.func)!r}`, and flowlib never turns code "
        "into config (nor loads code from one). Build this agent in code, or write the tool "
        "as a BaseTool subclass registered with flowlib.component.register_component().",
    )


def _refuse_function_tool_load(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    raise loader.error(
        "this FunctionTool config carries Python source code; flowlib never executes code "
        "from a config. Build the tool in code and pass it to the agent."
    )


class LocalExecutorConfig(_Strict):
    timeout: float = 60
    work_dir: str | None = None
    cleanup_temp_files: bool = True


def _local_executor_to(executor: Any, dumper: Dumper) -> Mapping[str, Any]:
    config: dict[str, Any] = {
        "timeout": executor.timeout,
        "cleanup_temp_files": executor._cleanup_temp_files,
    }
    if executor._given_work_dir is not None:
        config["work_dir"] = str(executor._given_work_dir)
    return config


def _local_executor_from(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(LocalExecutorConfig, config)
    return loader.build(
        target.__name__,
        lambda: target(
            timeout=parsed.timeout,
            work_dir=parsed.work_dir,
            cleanup_temp_files=parsed.cleanup_temp_files,
        ),
    )


def part_specs() -> list[ComponentSpec]:
    """The specs of model contexts, memories, tools and code executors."""
    return [
        _context_spec(
            UnboundedChatCompletionContext,
            lambda context, dumper: _initial(context),
            _unbounded_from,
        ),
        _context_spec(
            BufferedChatCompletionContext,
            lambda context, dumper: {"buffer_size": context.buffer_size, **_initial(context)},
            _buffered_from,
        ),
        _context_spec(
            HeadAndTailChatCompletionContext,
            lambda context, dumper: {
                "head_size": context._head_size,
                "tail_size": context._tail_size,
                **_initial(context),
            },
            _head_tail_from,
        ),
        _context_spec(TokenLimitedChatCompletionContext, _token_limited_to, _token_limited_from),
        ComponentSpec(
            cls=ListMemory,
            provider="flowlib.memory.ListMemory",
            component_type="memory",
            to_config=_list_memory_to,
            from_config=_list_memory_from,
            aliases=("autogen_core.memory.ListMemory", "ListMemory"),
            shared_state=True,
        ),
        ComponentSpec(
            cls=FunctionTool,
            provider="flowlib.tools.FunctionTool",
            component_type="tool",
            to_config=_refuse_function_tool,
            from_config=_refuse_function_tool_load,
            aliases=("autogen_core.tools.FunctionTool", "FunctionTool"),
            loadable=False,
        ),
        ComponentSpec(
            cls=LocalCommandLineCodeExecutor,
            provider="flowlib.code_executors.LocalCommandLineCodeExecutor",
            component_type="code_executor",
            to_config=_local_executor_to,
            from_config=_local_executor_from,
            aliases=(
                "autogen_ext.code_executors.local.LocalCommandLineCodeExecutor",
                "LocalCommandLineCodeExecutor",
            ),
        ),
    ]
