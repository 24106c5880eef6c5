"""Argument checks shared by the teams, agents and termination conditions (issue 11.5).

Each check runs first in its constructor or method, so bad input is a named flowlib
error ([`ArgumentTypeError`][flowlib.errors.ArgumentTypeError], a ``TypeError``, or
[`InvalidArgumentError`][flowlib.errors.InvalidArgumentError], a ``ValueError``) that
names the argument and what is expected, and nothing has changed yet.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ..errors import ArgumentTypeError, FlowlibError, InvalidArgumentError, StateError

__all__ = [
    "check_count",
    "check_number",
    "check_state_argument",
    "check_team_arguments",
    "load_atomically",
]

_UNSET: Any = object()


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(value: object) -> str:
    name = type(value).__name__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    return f"{article} {name} ({_shown(value)})"


def check_count(value: object, argument: str, *, minimum: int = 1, optional: bool = False) -> None:
    """``value`` must be an int >= ``minimum`` (or None when ``optional``)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        expected = f"an int >= {minimum}" + (" or None" if optional else "")
        raise ArgumentTypeError(
            f"`{argument}` must be {expected}, not {_kind(value)}.", argument=argument
        )
    if value < minimum:
        raise InvalidArgumentError(
            f"`{argument}` must be at least {minimum}, not {value}.", argument=argument
        )


def check_number(
    value: object, argument: str, *, minimum: float = 0.0, optional: bool = False
) -> None:
    """``value`` must be a real number >= ``minimum`` (or None when ``optional``)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentTypeError(
            f"`{argument}` must be a number, not {_kind(value)}.", argument=argument
        )
    if not value >= minimum:  # NaN fails too
        raise InvalidArgumentError(
            f"`{argument}` must be at least {minimum:g}, not {value}.", argument=argument
        )


def check_team_arguments(
    team: str,
    participants: object,
    *,
    termination_condition: object = None,
    max_turns: object = None,
    functions: bool = False,
    minimum: int = 1,
    graph: object = _UNSET,
    model_client: object = _UNSET,
) -> None:
    """Check the arguments every team constructor shares, before anything is built.

    Args:
        team: The team class's name, for the messages.
        participants: Must be a list (or tuple) of agents or teams (or, with
            ``functions``, plain functions).
        termination_condition: None or a ``TerminationCondition``.
        max_turns: None or an int >= 1.
        functions: Whether plain callables are participants (GraphFlow).
        minimum: How many participants the team needs at least.
        graph: If given, must be a ``DiGraph``.
        model_client: If given, must be a ``ChatCompletionClient``.
    """
    from ..graph import DiGraph
    from ..models import ChatCompletionClient
    from ._chat_agent import ChatAgent
    from ._team import Team
    from ._termination import TerminationCondition

    if isinstance(participants, (str, bytes, Mapping)) or not isinstance(participants, Sequence):
        raise ArgumentTypeError(
            f"{team}: `participants` must be a list of agents, not {_kind(participants)}.",
            argument="participants",
        )
    if len(participants) < minimum:
        wanted = "one participant" if minimum == 1 else f"{minimum} participants"
        wanted = wanted.replace("2 ", "two ")
        hint = "; for a single agent use RoundRobinGroupChat" if minimum > 1 else ""
        raise InvalidArgumentError(
            f"{team} needs at least {wanted}, got {len(participants)}{hint}; pass a list "
            "of agents as `participants`.",
            argument="participants",
        )
    for position, participant in enumerate(participants):
        if isinstance(participant, (ChatAgent, Team)):
            continue
        if functions and callable(participant):
            continue
        hint = " (a name: pass the agent itself)" if isinstance(participant, str) else ""
        accepted = "an agent, a team or a function" if functions else "an agent or a team"
        raise ArgumentTypeError(
            f"{team}: `participants[{position}]` is {_kind(participant)}{hint}; each "
            f"participant must be {accepted}.",
            argument=f"participants[{position}]",
        )
    if termination_condition is not None and not isinstance(
        termination_condition, TerminationCondition
    ):
        raise ArgumentTypeError(
            f"{team}: `termination_condition` must be a TerminationCondition (e.g. "
            f"MaxMessageTermination(10)) or None, not {_kind(termination_condition)}.",
            argument="termination_condition",
        )
    check_count(max_turns, "max_turns", optional=True)
    if graph is not _UNSET and not isinstance(graph, DiGraph):
        raise ArgumentTypeError(
            f"{team}: `graph` must be a DiGraph (e.g. `DiGraphBuilder(...).build()`), not "
            f"{_kind(graph)}.",
            argument="graph",
        )
    if model_client is not _UNSET and not isinstance(model_client, ChatCompletionClient):
        raise ArgumentTypeError(
            f"{team}: `model_client` must be a ChatCompletionClient (e.g. "
            f"OpenAIChatCompletionClient(...)), not {_kind(model_client)}.",
            argument="model_client",
        )


def check_state_argument(state: object, owner: str) -> Mapping[str, Any]:
    """``state`` must be the mapping ``save_state()`` returned.

    Raises:
        StateError: It is not a mapping (a ``ValueError``).
    """
    if not isinstance(state, Mapping):
        raise StateError(
            f"{owner}: `state` must be the dict `save_state()` returned, not {_kind(state)}."
        )
    return state


async def load_atomically(
    owner: str,
    state: Mapping[str, Any],
    save: Callable[[], Awaitable[Mapping[str, Any]]],
    load: Callable[[Mapping[str, Any]], Awaitable[None]],
) -> None:
    """``await load(state)``, all or nothing: if it fails part-way (a participant's state
    is malformed after the executor's was taken), the state from before is loaded back,
    and an error that is not a flowlib error becomes a ``StateError``.

    Args:
        owner: Names the team in the error.
        state: The state to load.
        save: Returns the current state (loaded back on failure).
        load: Loads a state, possibly in several steps.
    """
    before = await save()
    try:
        await load(state)
    except Exception as exc:
        await load(before)
        if isinstance(exc, FlowlibError):
            raise
        raise StateError(
            f"{owner}: cannot load this state ({type(exc).__name__}: {exc}); pass the dict "
            "`save_state()` returned. Nothing was changed."
        ) from exc
