"""What a team of two assistants keeps per message of a long conversation (issue 22,
item 7): the chat message, its usage, the receiver's and the sender's model-side messages,
and a few list slots, nothing else."""

from __future__ import annotations

import asyncio
import gc
import sys
import types
from typing import Any

from flowlib.agents import AssistantAgent
from flowlib.models import ReplayChatCompletionClient
from flowlib.teams import RoundRobinGroupChat

# Code and classes are shared by every team, not kept by one.
_SHARED = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.CodeType,
)


def _reachable(roots: list[Any]) -> dict[int, tuple[Any, int]]:
    """Every object reachable from ``roots`` (but code and classes), with its size."""
    found: dict[int, tuple[Any, int]] = {}
    stack = list(roots)
    while stack:
        item = stack.pop()
        if id(item) in found or isinstance(item, _SHARED):
            continue
        found[id(item)] = (item, sys.getsizeof(item))
        stack.extend(gc.get_referents(item))
    return found


async def _kept(turns: int) -> int:
    """Bytes of the objects a team, its agents and their contexts hold after a run of
    ``turns`` turns that they did not hold before it (the replay clients' logs cleared).

    Counted from the team, not with ``tracemalloc``: the interpreter's free lists and a
    cache's churn move a ``tracemalloc`` reading by a few kilobytes from run to run.
    """
    clients = [
        ReplayChatCompletionClient([f"{name}: noted, carrying on ({i})" for i in range(turns)])
        for name in ("A", "B")
    ]
    agents = [
        AssistantAgent(name, model_client=client, system_message="Be terse.")
        for name, client in zip(("A", "B"), clients, strict=True)
    ]
    team = RoundRobinGroupChat(agents, max_turns=turns)
    before = _reachable([team, agents])  # holds them: no id is reused during the run
    result = await team.run(task="go")
    assert sum(1 for message in result.messages if message.source in ("A", "B")) == turns
    del result  # the caller's copy: the team's own is what is measured
    for client in clients:
        client.reset()  # a test tool's request log, not the team's
    gc.collect()
    after = _reachable([team, agents])
    return sum(size for key, (_, size) in after.items() if key not in before)


def test_a_team_keeps_about_four_small_objects_per_message() -> None:
    # Per message: the TextMessage (a 7-field dict, its id and time), its RequestUsage,
    # the receiver's UserMessage, the sender's AssistantMessage and a few list slots:
    # about 1,310 bytes. At issue 22's start a team kept about 2,850 (a fields set per
    # pydantic object, an empty metadata dict per message, tuples in the run trace);
    # AutoGen 0.7.5 keeps about 1,950. Session 4 started at about 1,450.
    small, large = 100, 300
    per_message = (asyncio.run(_kept(large)) - asyncio.run(_kept(small))) / (large - small)
    assert per_message < 1_400, per_message
