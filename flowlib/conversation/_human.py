"""Human in the loop: ask the running turn's human from inside a tool."""

from __future__ import annotations

import asyncio

from .._cancellation import CancellationToken
from ._errors import ConversationError
from ._turn import CURRENT_TURN, Turn

__all__ = ["ask_human", "ask_human_sync"]


def _current_turn(function: str) -> Turn:
    try:
        return CURRENT_TURN.get()
    except LookupError:
        raise ConversationError(
            f"{function}() works only while a flowlib.conversation turn runs (in a tool "
            "of an Agent, or an input function of an agent it wraps); no turn is running "
            "here."
        ) from None


async def ask_human(prompt: str, cancellation_token: CancellationToken | None = None) -> str:
    """Ask the human of the running turn and return the answer.

    Emits a [`HumanInputRequest`][flowlib.conversation.HumanInputRequest], which the agent's
    ``human_input`` handler answers, then a
    [`HumanInputResponse`][flowlib.conversation.HumanInputResponse]. Use it in async tools, for
    example to get confirmation before a sensitive action. Its signature also fits
    ``UserProxyAgent(input_func=ask_human)``, so a user proxy inside a wrapped team asks through the
    conversation's handler.

    Args:
        prompt: The question.
        cancellation_token: Accepted for ``UserProxyAgent``; cancelling the turn already
            cancels the request.

    Raises:
        HumanInputRequiredError: If the agent has no ``human_input`` handler (the turn
            fails with it).
        ConversationError: If no turn is running.

    Examples:
        >>> from flowlib.tools import tool
        >>> @tool
        ... async def delete_file(path: str) -> str:
        ...     \"\"\"Delete a file.\"\"\"
        ...     if await ask_human(f"Delete {path}? (yes/no)") != "yes":
        ...         return "The user refused; nothing was deleted."
        ...     return f"Deleted {path}."
    """
    return await _current_turn("ask_human").ask_human(prompt)


def ask_human_sync(prompt: str) -> str:
    """[`ask_human`][flowlib.conversation.ask_human] for sync tools, which flowlib runs in a worker
    thread.

    Blocks the calling thread until the handler answers.

    Raises:
        HumanInputRequiredError: If the agent has no ``human_input`` handler.
        ConversationError: If no turn is running, or if called on the event loop's
            thread (use ``await ask_human(...)`` there).
    """
    turn = _current_turn("ask_human_sync")
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is turn.loop:
        raise ConversationError(
            "ask_human_sync() was called on the event loop's thread, where it would block "
            "the turn; in async code use `await ask_human(...)`."
        )
    return turn.ask_human_from_thread(prompt)
