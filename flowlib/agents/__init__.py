"""Agents: the base class for custom agents and plain functions as agents."""

from ._assistant_agent import AssistantAgent
from ._base_chat_agent import BaseChatAgent
from ._code_executor_agent import ApprovalRequest, ApprovalResponse, CodeExecutorAgent
from ._function_agent import FunctionAgent, NodeFunction
from ._message_filter_agent import MessageFilterAgent, MessageFilterConfig, PerSourceFilter
from ._society_of_mind_agent import SocietyOfMindAgent
from ._tool_calls import DEFAULT_MAX_TOOL_CALLS
from ._user_proxy_agent import UserProxyAgent

__all__ = [
    "DEFAULT_MAX_TOOL_CALLS",
    "ApprovalRequest",
    "ApprovalResponse",
    "AssistantAgent",
    "BaseChatAgent",
    "CodeExecutorAgent",
    "FunctionAgent",
    "MessageFilterAgent",
    "MessageFilterConfig",
    "NodeFunction",
    "PerSourceFilter",
    "SocietyOfMindAgent",
    "UserProxyAgent",
]
