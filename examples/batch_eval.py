"""Batch evaluation: one team on many tasks at once, checkpointed, resumable.

    planner -> [optimist | pessimist] -> judge     (one run per question)

``LocalRunner`` runs all the questions on one event loop (the agents mostly wait on
their model), each run checkpointed to a SQLite file after every turn. Running the same
batch again finds every run finished in the store and returns the stored results without
calling a model. Swap in ``flowlib.distributed.RayRunner`` (same methods) to run the
batch on a Ray cluster, or use the command line:

    flowlib batch examples/batch_eval.py:build questions.jsonl --store sqlite:///runs.db \\
        --out results.jsonl [--ray local]

Run offline: python examples/batch_eval.py
With a real model: OPENAI_API_KEY=... python examples/batch_eval.py
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import model_client

from flowlib.agents import AssistantAgent
from flowlib.base import TaskResult
from flowlib.teams import DiGraphBuilder, GraphFlow

QUESTIONS = [
    "Should our team move the weekly meeting to Friday afternoon?",
    "Should we adopt a four-day work week?",
    "Should the office switch to standing desks?",
    "Should we rewrite the billing service in Rust?",
    "Should we stop writing design documents?",
    "Should we hire a dedicated release manager?",
]
THINK = 0.1  # how long each scripted model "thinks" per answer, seconds


def build(*, checkpoint_store: Any = None) -> GraphFlow:
    """A fresh fan-out/join team; the batch calls it with the store the runs use."""

    def agent(name: str, answer: str, system_message: str) -> AssistantAgent:
        # Scripted offline: the same answer for every question (and every reuse of the team).
        client = model_client([answer] * 100, latency=THINK)
        return AssistantAgent(name, model_client=client, system_message=system_message)

    planner = agent("planner", "Case for, case against.", "Split the question in two.")
    optimist = agent("optimist", "For: it saves time.", "Make the case FOR, in one line.")
    pessimist = agent("pessimist", "Against: it costs focus.", "Make the case AGAINST.")
    judge = agent("judge", "Verdict: try it for a month.", "Weigh both; one-line verdict.")
    builder = DiGraphBuilder()
    for node in (planner, optimist, pessimist, judge):
        builder.add_node(node)
    builder.add_edge(planner, optimist).add_edge(planner, pessimist)
    builder.add_edge(optimist, judge).add_edge(pessimist, judge)
    durable = {} if checkpoint_store is None else {"checkpoint_store": checkpoint_store}
    return GraphFlow(builder.get_participants(), builder.build(), **durable)


async def main() -> None:
    """Run the batch, then run it again: the second time nothing runs."""
    from flowlib.batch import LocalRunner

    folder = Path(tempfile.mkdtemp(prefix="flowlib-batch-"))
    store = f"sqlite:///{folder / 'runs.db'}"
    run_ids = [f"question-{i}" for i in range(len(QUESTIONS))]
    for attempt in ("first", "again"):
        runner = LocalRunner(build, checkpoint_store=store, max_concurrency=10)
        started = time.perf_counter()
        results = await runner.run_many(QUESTIONS, run_ids=run_ids)
        elapsed = time.perf_counter() - started
        print(f"--- {attempt}: {len(results)} runs in {elapsed:.2f} s")
        for question, result in zip(QUESTIONS, results, strict=True):
            if isinstance(result, TaskResult):
                verdict = result.messages[-1].to_text()
                print(f"{result.run_id}: {question} -> {verdict}")
            else:
                print(f"{result.run_id}: failed: {result.error_type}: {result.error_message}")
    final = results[0]
    assert isinstance(final, TaskResult)
    print("stop reason:", final.stop_reason)
    print(f"(each run alone takes 3 x {THINK} s; the store is {folder / 'runs.db'})")


if __name__ == "__main__":
    asyncio.run(main())
