"""Model-backed agent shapes (issue 15), written once against the AgentChat API.

Two ``AssistantAgent``s take turns in a ``RoundRobinGroupChat`` (A, B, A, ...), each
sending its whole history to its model on every turn:

- on a ``ReplayChatCompletionClient`` (``make_assistant_loop``), so only the library's own
  per-turn work is timed: the per-turn time at the start and the end of a long run, and
  the memory the run keeps per message;
- on the real ``OpenAIChatCompletionClient`` against a local Chat Completions server
  (``make_openai_loop``), streaming or not, so the time above a raw-SDK loop is the
  library's overhead on the request path.

``flowlib_impl`` and ``autogen_graphflow`` hand in their own classes as an
:class:`AgentAPI`, so both run exactly the same code.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

TimedRunner = Callable[[], Awaitable[list[float]]]
"""Runs the built team once; returns ``time.perf_counter()`` after each agent turn."""

SYSTEM = "You are a terse assistant."
REPLY = "Noted, carrying on with the plan."


@dataclass(frozen=True)
class AgentAPI:
    """The AgentChat names the model-backed shapes need, from one framework."""

    AssistantAgent: Any
    RoundRobinGroupChat: Any
    ReplayChatCompletionClient: Any
    OpenAIChatCompletionClient: Any
    TextMessage: Any
    ModelClientStreamingChunkEvent: Any


def clear_replay_log(client: Any) -> None:
    """Forget what a replay client recorded of its calls, on either framework.

    The replay client is a test tool: what it keeps per request is not what the team,
    its agents and their model contexts keep, so the ``msgmem`` shape clears it on both
    sides before it reads the memory. ``reset()`` forgets flowlib's request log and
    both clients' usage; AutoGen 0.7.5's ``reset()`` leaves its ``create_calls`` list (a
    dict of every call's arguments, the whole request included), so it is cleared too.
    """
    client.reset()
    calls = getattr(client, "_create_calls", None)
    if isinstance(calls, list):
        calls.clear()


def _timed(
    team: Any, api: AgentAPI, names: set[str], after: Callable[[], None] | None = None
) -> TimedRunner:
    async def run() -> list[float]:
        stamps: list[float] = []
        async for item in team.run_stream(task="go"):
            if isinstance(item, api.TextMessage) and item.source in names:
                stamps.append(time.perf_counter())
        if after is not None:
            after()
        return stamps

    return run


def make_assistant_loop(
    api: AgentAPI, turns: int, *, clear_client_logs: bool = False, **team_options: Any
) -> TimedRunner:
    """Two assistants on replay clients, ``turns`` agent turns in all (``team_options``
    go to the team, e.g. flowlib's ``checkpoint_store``). With ``clear_client_logs`` the
    runner clears both replay clients' call logs when the run ends
    ([`clear_replay_log`][])."""
    per_agent = turns // 2 + 1
    agents = [
        api.AssistantAgent(
            name,
            model_client=api.ReplayChatCompletionClient(
                [f"{name}: {REPLY} ({i})" for i in range(per_agent)]
            ),
            system_message=SYSTEM,
        )
        for name in ("A", "B")
    ]
    team = api.RoundRobinGroupChat(agents, max_turns=turns, **team_options)

    def clear_logs() -> None:
        for agent in agents:
            clear_replay_log(agent._model_client)

    return _timed(team, api, {"A", "B"}, clear_logs if clear_client_logs else None)


def make_openai_loop(api: AgentAPI, turns: int, base_url: str, stream: bool) -> TimedRunner:
    """Two assistants on the real OpenAI client against ``base_url``."""
    clients = [
        api.OpenAIChatCompletionClient(
            model="gpt-4o", base_url=base_url, api_key="sk-bench", max_retries=0
        )
        for _ in range(2)
    ]
    agents = [
        api.AssistantAgent(
            name, model_client=client, system_message=SYSTEM, model_client_stream=stream
        )
        for name, client in zip(("A", "B"), clients, strict=True)
    ]
    team = api.RoundRobinGroupChat(agents, max_turns=turns)
    return _timed(team, api, {"A", "B"})
