"""Model contexts: the message history an agent keeps and the view of it the model sees.

[`UnboundedChatCompletionContext`][flowlib.model_context.UnboundedChatCompletionContext] sends
everything (the default),
[`BufferedChatCompletionContext`][flowlib.model_context.BufferedChatCompletionContext] the last N
messages,
[`TokenLimitedChatCompletionContext`][flowlib.model_context.TokenLimitedChatCompletionContext] what
fits a token budget and
[`HeadAndTailChatCompletionContext`][flowlib.model_context.HeadAndTailChatCompletionContext] the
first and last messages. Subclass
[`ChatCompletionContext`][flowlib.model_context.ChatCompletionContext] for another view.
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
