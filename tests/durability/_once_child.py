"""A process that runs a one-agent flow whose tool appends a line to a file through
``CallResults.once`` with the call's key, and may SIGKILL itself at a point of a call.

Run by ``test_exactly_once.py`` as ``python _once_child.py PLAN.json``. The plan names the
store (``sqlite:///...`` or ``postgresql://...``), the effects file, a log of every
attempt's key, the run id, whether to start or resume, and ``kill``:
``{"call": i, "at": "before" | "after_effect" | "after_record"}`` (the i-th tool call this
process makes, counted from 0).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from typing import Any

from flowlib.agents import AssistantAgent
from flowlib.checkpoint import CallResults, open_store
from flowlib.models import CreateResult, FunctionCall, ReplayChatCompletionClient, RequestUsage
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.tools import call_key


def _append(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def script() -> list[Any]:
    """Two calls of one tool with the same arguments in one response, then an answer."""
    calls = [FunctionCall(id=f"c{i}", name="append", arguments='{"text": "a"}') for i in (0, 1)]
    usage = RequestUsage(prompt_tokens=1, completion_tokens=1)
    return [
        CreateResult(finish_reason="function_calls", content=calls, usage=usage, cached=False),
        "done",
    ]


async def main(plan: dict[str, Any]) -> None:
    store = open_store(plan["store"])
    results = CallResults(store)
    kill = plan.get("kill") or {}
    made = 0

    def die_at(point: str, index: int) -> None:
        if kill.get("call") == index and kill.get("at") == point:
            os.kill(os.getpid(), signal.SIGKILL)

    async def append(text: str) -> str:
        """Append a line to the effects file, once per call."""
        nonlocal made
        index, made = made, made + 1
        key = call_key()
        _append(plan["attempts"], f"{os.getpid()} {index} {key}\n")

        def act() -> str:
            die_at("before", index)
            _append(plan["effects"], f"{key} {text}\n")
            die_at("after_effect", index)
            return f"appended {text}"

        def lookup() -> str | None:
            with open(plan["effects"]) as handle:
                found = any(line.split()[0] == key for line in handle if line.strip())
            return f"appended {text}" if found else None

        result = await results.once(key, act, lookup=lookup)
        die_at("after_record", index)
        return str(result)

    agent = AssistantAgent(
        "clerk",
        model_client=ReplayChatCompletionClient(script()),
        tools=[append],
        max_tool_iterations=2,
    )
    builder = DiGraphBuilder().add_node(agent)
    team = GraphFlow(builder.get_participants(), builder.build(), checkpoint_store=store)
    try:
        if plan["start"]:
            await team.run(task="append twice", run_id=plan["run_id"])
        else:
            await team.run(run_id=plan["run_id"])
    finally:
        await results.close()
        await store.close()


if __name__ == "__main__":
    with open(sys.argv[1]) as plan_file:
        asyncio.run(main(json.load(plan_file)))
