"""Agents: the base class for custom agents and plain functions as agents."""

from ._base_chat_agent import BaseChatAgent
from ._function_agent import FunctionAgent, NodeFunction

__all__ = ["BaseChatAgent", "FunctionAgent", "NodeFunction"]
