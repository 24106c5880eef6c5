"""Model contexts: the message history an agent keeps and the view of it the model sees.

:class:`UnboundedChatCompletionContext` sends everything (the default),
:class:`BufferedChatCompletionContext` the last N messages,
:class:`TokenLimitedChatCompletionContext` what fits a token budget and
:class:`HeadAndTailChatCompletionContext` the first and last messages. Subclass
:class:`ChatCompletionContext` for another view.
"""

from ._base import ChatCompletionContext, ChatCompletionContextState
from ._buffered import BufferedChatCompletionContext
from ._head_and_tail import HeadAndTailChatCompletionContext
from ._token_limited import TokenLimitedChatCompletionContext
from ._unbounded import UnboundedChatCompletionContext

__all__ = [
    "BufferedChatCompletionContext",
    "ChatCompletionContext",
    "ChatCompletionContextState",
    "HeadAndTailChatCompletionContext",
    "TokenLimitedChatCompletionContext",
    "UnboundedChatCompletionContext",
]
