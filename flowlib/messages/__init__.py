"""Messages agents exchange and events they emit.

Every message derives from [`BaseChatMessage`][flowlib.messages.BaseChatMessage] (agent-to-agent
communication, seen by the other participants and by termination conditions) or
[`BaseAgentEvent`][flowlib.messages.BaseAgentEvent] (observable progress for users and applications,
not processed by other agents). Each concrete class has a literal ``type`` field equal to its class
name, which [`MessageFactory`][flowlib.messages.MessageFactory] uses to rebuild a message from its
[`BaseMessage.dump`][flowlib.messages.BaseMessage.dump].

Examples:
    >>> msg = TextMessage(content="Hello", source="user")
    >>> print(msg)
    source='user' models_usage=None metadata={} content='Hello' type='TextMessage'
    >>> MessageFactory().create(msg.dump()) == msg
    True
"""

from ._base import (
    BaseAgentEvent,
    BaseChatMessage,
    BaseMessage,
    BaseTextChatMessage,
)
from ._chat import (
    ChatMessage,
    HandoffMessage,
    MultiModalMessage,
    StopMessage,
    StructuredContentType,
    StructuredMessage,
    TextMessage,
    ToolCallSummaryMessage,
)
from ._events import (
    AgentEvent,
    CodeExecutionEvent,
    CodeGenerationEvent,
    MemoryQueryEvent,
    ModelClientStreamingChunkEvent,
    NodeCacheHitEvent,
    NodeRetryEvent,
    SelectorEvent,
    SelectSpeakerEvent,
    ThoughtEvent,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    UserInputRequestedEvent,
)
from ._factory import MessageFactory
from ._structured_factory import (
    StructuredMessageFactory,
    StructuredMessageFactoryConfig,
)

__all__ = [
    "AgentEvent",
    "BaseAgentEvent",
    "BaseChatMessage",
    "BaseMessage",
    "BaseTextChatMessage",
    "ChatMessage",
    "CodeExecutionEvent",
    "CodeGenerationEvent",
    "HandoffMessage",
    "MemoryQueryEvent",
    "MessageFactory",
    "ModelClientStreamingChunkEvent",
    "MultiModalMessage",
    "NodeCacheHitEvent",
    "NodeRetryEvent",
    "SelectSpeakerEvent",
    "SelectorEvent",
    "StopMessage",
    "StructuredContentType",
    "StructuredMessage",
    "StructuredMessageFactory",
    "StructuredMessageFactoryConfig",
    "TextMessage",
    "ThoughtEvent",
    "ToolCallExecutionEvent",
    "ToolCallRequestEvent",
    "ToolCallSummaryMessage",
    "UserInputRequestedEvent",
]
