"""The batch tests' flow: fan-out/join, agents that "think" 50 ms, with side effects.

``src -> [left | middle | right] -> join``. Every reply is ``"<node>|<key>"`` where
``key`` is the task text, so transcripts are fixed by the task alone. Each turn appends
``"<key> <node>"`` to ``starts.txt`` when it begins and to ``ends.txt`` when it has
finished its work (just before its message is published): a line twice in ``ends.txt``
means a finished turn ran twice. The first turn of a run also appends ``"<pid> <key>"``
to ``pids.txt``: the process that ran it (tests kill a worker holding a run).

Importable by Ray workers (tests/ is put on their PYTHONPATH).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flowlib.agents import FunctionAgent
from flowlib.messages import BaseChatMessage, TextMessage
from flowlib.models import RequestUsage
from flowlib.teams import DiGraphBuilder, GraphFlow

BRANCHES = ("left", "middle", "right")
NODES = ("src", *BRANCHES, "join")
THINK = 0.05
FAIL_ON = "fail-me"  # a task with this text makes `middle` raise


def _key(messages: Sequence[BaseChatMessage]) -> str:
    return messages[0].to_text().split("|")[-1]


def _append(folder: str | None, name: str, line: str) -> None:
    if folder is None:
        return
    with open(os.path.join(folder, name), "a", encoding="utf-8") as file:
        file.write(line + "\n")


def _node(name: str, folder: str | None, think: float) -> FunctionAgent:
    async def step(messages: Sequence[BaseChatMessage]) -> BaseChatMessage:
        key = _key(messages)
        _append(folder, "starts.txt", f"{key} {name}")
        if name == "src":
            _append(folder, "pids.txt", f"{os.getpid()} {key}")
        await asyncio.sleep(think)
        if name == "middle" and key == FAIL_ON:
            raise RuntimeError("middle cannot handle this task")
        _append(folder, "ends.txt", f"{key} {name}")
        usage = RequestUsage(prompt_tokens=10, completion_tokens=5)
        return TextMessage(content=f"{name}|{key}", source=name, models_usage=usage)

    return FunctionAgent(step, name=name)


def build(
    *, checkpoint_store: Any = None, log_dir: str | None = None, think: float = THINK
) -> GraphFlow:
    """A fresh fan-out/join team (the batch factory)."""
    agents = {name: _node(name, log_dir, think) for name in NODES}
    builder = DiGraphBuilder()
    for agent in agents.values():
        builder.add_node(agent)
    for branch in BRANCHES:
        builder.add_edge(agents["src"], agents[branch])
        builder.add_edge(agents[branch], agents["join"])
    options: dict[str, Any] = {}
    if checkpoint_store is not None:
        options["checkpoint_store"] = checkpoint_store
    return GraphFlow(builder.get_participants(), builder.build(), **options)


def transcript(messages: Sequence[Any]) -> list[str]:
    """A run's chat messages as ``source:text``, the concurrent branches in name order
    (they finish together, so their relative order is up to the event loop)."""
    lines = [f"{m.source}:{m.to_text()}" for m in messages if isinstance(m, BaseChatMessage)]
    branch = [line for line in lines if line.split(":")[0] in BRANCHES]
    rest = [line for line in lines if line.split(":")[0] not in BRANCHES]
    return rest[:2] + sorted(branch) + rest[2:]


def lines(folder: str | Path, name: str) -> list[str]:
    """The lines of a side-effect file (empty if none was written)."""
    path = Path(folder) / name
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def build_hanging(*, checkpoint_store: Any = None, seconds: float = 600.0) -> GraphFlow:
    """A factory that blocks its process for ``seconds`` (a worker never ready)."""
    import time

    time.sleep(seconds)
    return build(checkpoint_store=checkpoint_store)
