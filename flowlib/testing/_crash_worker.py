"""The processes of [`check_crashes`][flowlib.testing.check_crashes]: a fork server that
imports the user's factory once, and the forked runs it makes.

``python -m flowlib.testing._crash_worker REFERENCE`` imports ``REFERENCE``
(``path/to/file.py:function`` or ``package.module:function``), prints ``{"ready": true}``
and then reads one job per line on stdin (JSON). For each it forks a child, which runs the
job and writes its outcome (JSON) to the job's ``out`` file, and answers one line:
``{"status": "exit", "code": N}``, ``{"status": "signal", "signal": N}`` or
``{"status": "timeout"}``. A forked child starts from the module as imported, with no run
made in the server, so each run (and each resume) is in a fresh process.

A job: ``db`` (the SQLite file), ``run_id``, ``task`` (None: resume), ``interrupt`` (None,
or ``{"kind", "turn", "at", "hops"}``), ``out``, ``log`` (the child's stdout and stderr)
and ``timeout`` (seconds).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import AsyncGenerator, Callable, Sequence
from pathlib import Path
from typing import Any

from .._english import a
from ..base import CancellationToken, Response
from ..checkpoint import SQLiteCheckpointStore, fold
from ..errors import FlowlibError, InvalidArgumentError
from ..graph import RunTrace, as_node

__all__ = ["InjectedCrash", "load_factory", "main"]


class InjectedCrash(FlowlibError, RuntimeError):
    """The exception ``check_crashes`` raises inside a turn."""


def load_factory(reference: str) -> Callable[..., Any]:
    """The function ``reference`` names (``file.py:function`` or ``module:function``).

    Raises:
        InvalidArgumentError: If it cannot be imported, is not a function, or takes no
            ``checkpoint_store``.
    """
    where, sep, name = reference.rpartition(":")
    if not sep or not where or not name:
        raise InvalidArgumentError(
            f"{reference!r}: expected FILE.py:FUNCTION or module:function.", argument="factory"
        )
    if where.endswith(".py"):
        file = Path(where)
        if not file.is_file():
            raise InvalidArgumentError(f"`{where}` does not exist.", argument="factory")
        digest = hashlib.sha1(str(file.resolve()).encode()).hexdigest()[:10]
        spec = importlib.util.spec_from_file_location(f"_flowlib_crash_{file.stem}_{digest}", file)
        if spec is None or spec.loader is None:
            raise InvalidArgumentError(f"`{where}` is not a Python file.", argument="factory")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        sys.path.insert(0, str(file.parent.resolve()))  # its own helper modules import
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    found: Any = module
    for part in name.split("."):
        found = getattr(found, part, None)
    if found is None:
        raise InvalidArgumentError(f"`{where}` has no `{name}`.", argument="factory")
    if not callable(found) or hasattr(found, "run_stream"):
        raise InvalidArgumentError(
            f"`{name}` in `{where}` is {a(type(found).__name__)}, not a function: the crash "
            "check builds the flow again in every fresh process, so give it a function "
            "`def build(*, checkpoint_store=None)` that passes the store to the team.",
            argument="factory",
        )
    try:
        parameters = inspect.signature(found).parameters
    except (TypeError, ValueError):
        parameters = {}  # type: ignore[assignment]
    takes = "checkpoint_store" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )
    if not takes:
        raise InvalidArgumentError(
            f"`{name}` takes no `checkpoint_store` argument, so the crash check cannot give "
            "its team a store to resume from: define it as `def build(*, checkpoint_store="
            "None)` and pass `checkpoint_store=checkpoint_store` to the team.",
            argument="factory",
        )
    return found  # type: ignore[no-any-return]


# --- one forked run -----------------------------------------------------------------


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class _KillingStore:
    """The job's store, killing the process right after its ``after``-th append."""

    def __init__(self, inner: SQLiteCheckpointStore, after: int) -> None:
        self._inner = inner
        self._left = after

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def append(self, record: Any, *, status: Any, lease_owner: str | None = None) -> None:
        await self._inner.append(record, status=status, lease_owner=lease_owner)
        self._left -= 1
        if self._left == 0:
            _die()


class _Interrupter:
    """Fires the job's interruption at its turn: watches the team's trace for the turn's
    start and wraps each agent's and function node's turn for the ``start`` and ``after``
    points."""

    def __init__(self, plan: dict[str, Any] | None, token: CancellationToken) -> None:
        self.plan = plan
        self.token = token
        self.fired = False
        self.model_calls: dict[str, list[int]] = {}  # scripted-model calls per agent turn
        self.current: dict[int, int] = {}  # plan node -> its running step
        self.steps: list[int] = []

    # trace observer
    def on_start(self, trace: RunTrace, step: int) -> None:
        node = trace.step_nodes[step]
        self.current[node] = step
        self.steps.append(node)
        plan = self.plan
        if plan is None or self.fired or plan["turn"] != step or plan["at"] != "inside":
            return
        self.fired = True
        action = _die if plan["kind"] == "sigkill" else self.token.cancel
        loop = asyncio.get_running_loop()

        def hop(left: int) -> None:
            if left <= 0:
                action()
            else:
                loop.call_soon(hop, left - 1)

        loop.call_soon(hop, int(plan["hops"]))

    def on_fire(self, trace: RunTrace, position: int) -> None:
        return None

    def on_clear(self, trace: RunTrace) -> None:
        return None

    def due(self, node: int, at: str) -> bool:
        plan = self.plan
        if plan is None or self.fired or plan["at"] != at:
            return False
        if self.current.get(node) != plan["turn"]:
            return False
        self.fired = True
        return True

    def fire(self) -> None:
        assert self.plan is not None
        if self.plan["kind"] == "sigkill":
            _die()
        if self.plan["kind"] == "cancel":
            self.token.cancel()
            return
        raise InjectedCrash(f"check --crash: interrupted turn {self.plan['turn']}")

    def wrap(self, team: Any) -> None:
        for node, participant in enumerate(team.participants):
            kind = as_node(participant).kind
            if kind == "agent" and hasattr(participant, "on_messages_stream"):
                participant.on_messages_stream = self._wrap_stream(
                    node, participant.on_messages_stream, _replay_client(participant)
                )
            elif kind == "function" and hasattr(participant, "call"):
                participant.call = self._wrap_call(node, participant.call)

    def _wrap_stream(
        self, node: int, original: Callable[..., Any], client: Any
    ) -> Callable[..., Any]:
        name = getattr(original, "__self__", None)
        agent = getattr(name, "name", str(node))

        async def stream(
            messages: Sequence[Any], cancellation_token: CancellationToken
        ) -> AsyncGenerator[Any, None]:
            if self.due(node, "start"):
                self.fire()
            before = len(client.requests) if client is not None else 0
            async for item in original(messages, cancellation_token):
                if isinstance(item, Response):
                    if client is not None:
                        calls = self.model_calls.setdefault(agent, [])
                        calls.append(len(client.requests) - before)
                    if self.due(node, "after"):
                        self.fire()
                yield item

        return stream

    def _wrap_call(self, node: int, original: Callable[..., Any]) -> Callable[..., Any]:
        async def call(messages: Sequence[Any]) -> Any:
            if self.due(node, "start"):
                self.fire()
            answer = await original(messages)
            if self.due(node, "after"):
                self.fire()
            return answer

        return call


def _replay_client(participant: Any) -> Any:
    """The participant's scripted model (a ``ReplayChatCompletionClient``), if it has one."""
    from ..models import ReplayChatCompletionClient

    client = getattr(participant, "model_client", None)
    return client if isinstance(client, ReplayChatCompletionClient) else None


async def _fast_forward(team: Any, records: list[Any], model_calls: dict[str, list[int]]) -> None:
    """Move each scripted model past the answers its agent's recorded turns used.

    A ``ReplayChatCompletionClient`` answers by position, which is process state: in a
    fresh process it would start its script again. The uninterrupted run counted each
    agent's model calls per turn; the store says how many turns of each agent are recorded.
    """
    from ..models import UserMessage

    if not records:
        return
    recorded = fold(records).bookkeeping.get("node_turns", {})
    skip: dict[int, tuple[Any, int]] = {}
    for participant in team.participants:
        client = _replay_client(participant)
        calls = model_calls.get(participant.name)
        if client is None or not calls:
            continue
        count = sum(calls[: int(recorded.get(participant.name, 0))])
        held = skip.get(id(client), (client, 0))
        skip[id(client)] = (client, held[1] + count)
    for client, count in skip.values():
        for _ in range(min(count, client.remaining)):
            await client.create(
                [UserMessage(content="(answered before the crash)", source="check")]
            )


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return json.dumps(content, sort_keys=True, default=str)


async def _job(factory: Callable[..., Any], job: dict[str, Any]) -> dict[str, Any]:
    plan = job.get("interrupt")
    inner = SQLiteCheckpointStore(job["db"])
    store: Any = inner
    if plan is not None and plan["at"] == "checkpoint":
        store = _KillingStore(inner, int(plan["turn"]))
    token = CancellationToken()
    interrupter = _Interrupter(plan, token)
    outcome: dict[str, Any] = {"error": None}
    try:
        team = factory(checkpoint_store=store)
        outcome["kinds"] = {p.name: as_node(p).kind for p in getattr(team, "participants", [])}
        team.trace.add_observer(interrupter)
        interrupter.wrap(team)
        if job["task"] is None and job.get("model_calls"):
            await _fast_forward(team, list(await inner.records(job["run_id"])), job["model_calls"])
        if job["task"] is not None:
            try:
                await team.run(task=job["task"], run_id=job["run_id"], cancellation_token=token)
            except (Exception, asyncio.CancelledError) as exc:
                if plan is None or not interrupter.fired:
                    raise
                outcome["interrupted"] = type(exc).__name__
        else:
            for _ in range(5):  # a cancelled stop resumes again
                result = await team.run(run_id=job["run_id"])
                run = await inner.get_run(job["run_id"])
                if run is None or run.status == "complete" or result.stop_reason != "cancelled":
                    break
        names = list(team.graph.nodes)
        outcome["steps"] = [names[node] for node in interrupter.steps]
        outcome["fired"] = interrupter.fired
        outcome["model_calls"] = interrupter.model_calls
        run = await inner.get_run(job["run_id"])
        records = list(await inner.records(job["run_id"]))
        folded = fold(records, run_id=job["run_id"])
        outcome["messages"] = [
            [node, str(message.get("source")), _text(message)]
            for message, node in zip(folded.messages, folded.message_nodes, strict=True)
            if node is not None
        ]
        outcome["stop_reason"] = run.stop_reason if run is not None else None
        outcome["status"] = run.status if run is not None else None
        outcome["records"] = [record.model_dump(mode="json") for record in records]
    except BaseException as exc:
        outcome["error"] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        outcome["traceback"] = traceback.format_exc()
    finally:
        await inner.close()
    return outcome


def _child(factory: Callable[..., Any], job: dict[str, Any]) -> None:
    log = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    code = 0
    try:
        outcome = asyncio.run(_job(factory, job))
        Path(job["out"]).write_text(json.dumps(outcome))
    except BaseException:
        traceback.print_exc()
        code = 2
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _wait(pid: int, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return {"status": "timeout"}
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    if os.WIFSIGNALED(status):
        return {"status": "signal", "signal": os.WTERMSIG(status)}
    return {"status": "exit", "code": os.WEXITSTATUS(status)}


def main(argv: Sequence[str]) -> int:
    """Serve forked runs of the factory ``argv[0]`` (see the module's docs)."""
    channel = sys.stdout
    sys.stdout = sys.stderr  # the factory's import may print; the channel stays clean
    try:
        factory = load_factory(argv[0])
    except BaseException as exc:
        channel.write(json.dumps({"ready": False, "error": str(exc)}) + "\n")
        channel.flush()
        return 1
    channel.write(json.dumps({"ready": True}) + "\n")
    channel.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(factory, job)
        answer = _wait(pid, float(job.get("timeout", 60.0)))
        channel.write(json.dumps(answer) + "\n")
        channel.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
