"""What the studio reads from and writes to a checkpoint store, as JSON-ready dicts.

Nothing here knows about HTTP: the server (``_app.py``) calls these functions and sends
their results. Every text that came from a model, a tool or a store is returned as data,
never as markup; the page inserts it with ``textContent``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..checkpoint import CheckpointRecord, CheckpointStore, RunRecord, base_record
from ..errors import CheckpointArgumentError, FlowlibError, InvalidArgumentError
from ..graph import DiGraph
from ..render.internal import graph_from_description, lineage_records, pending_of_state

__all__ = ["Flow", "Studio", "StudioError"]

_PAGE_LIMIT = 500
_TOKEN_CACHE = 20_000


class StudioError(FlowlibError, ValueError):
    """A studio request that cannot be done; ``status`` is its HTTP status."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Flow:
    """A flow named on the command line: it can be started, resumed and forked on."""

    name: str
    reference: str
    factory: Callable[..., Any]
    signature: str
    graph: DiGraph
    team_type: str
    findings: list[str] = field(default_factory=list)


def _message_text(dumped: dict[str, Any]) -> str:
    content = dumped.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, dict):
                name = item.get("name", "")
                body = item.get("arguments", item.get("content", ""))
                parts.append(f"{name}({body})" if "arguments" in item else f"{name} -> {body}")
            else:
                parts.append(str(item))
        return "\n".join(parts)
    return "" if content is None else str(content)


def _tokens_of(messages: Sequence[dict[str, Any]]) -> tuple[int, int]:
    prompt = completion = 0
    for message in messages:
        usage = message.get("models_usage")
        if isinstance(usage, dict):
            prompt += int(usage.get("prompt_tokens") or 0)
            completion += int(usage.get("completion_tokens") or 0)
    return prompt, completion


def _step(record: CheckpointRecord, previous: float | None) -> dict[str, Any]:
    """One page step of a ``turn`` record: node, messages, tool calls, tokens, timing and
    the edges it fired (from the record's bookkeeping when it has them)."""
    messages = []
    tool_calls: list[str] = []
    for dumped in record.messages:
        kind = str(dumped.get("type", "message"))
        text = _message_text(dumped)
        if kind in ("ToolCallRequestEvent", "ToolCallExecutionEvent"):
            tool_calls.extend(line for line in text.splitlines() if line)
        messages.append({"source": str(dumped.get("source", "?")), "kind": kind, "text": text})
    prompt, completion = _tokens_of(record.messages)
    fired = record.bookkeeping.get("edges_fired")
    edges: list[list[str]] = []
    if isinstance(fired, list):
        edges = [[str(pair[0]), str(pair[1])] for pair in fired if len(pair) == 2]
    return {
        "run_id": record.run_id,
        "checkpoint_id": record.checkpoint_id,
        "node": record.node,
        "turn": record.turn,
        "created_at": record.created_at,
        "seconds": None if previous is None else max(0.0, record.created_at - previous),
        "edges": edges,
        "messages": messages,
        "tool_calls": tool_calls,
        "prompt_tokens": prompt or None,
        "completion_tokens": completion or None,
    }


class Studio:
    """The studio's view of one store and the flows named on the command line.

    Args:
        store: The checkpoint store.
        flows: The flows that can be started, resumed and forked on.
        draw: Draws a graph as an SVG document (Graphviz), or raises.
    """

    def __init__(
        self,
        store: CheckpointStore,
        flows: Sequence[Flow] = (),
        *,
        draw: Callable[[DiGraph], str] | None = None,
    ) -> None:
        self.store = store
        self.flows = {flow.name: flow for flow in flows}
        self._by_signature = {flow.signature: flow for flow in flows}
        self._draw = draw
        self._drawings: dict[str, str] = {}
        self._tokens: dict[tuple[str, int], tuple[int, int]] = {}
        self.tasks: dict[str, asyncio.Task[Any]] = {}
        self.errors: dict[str, str] = {}
        self._answered: set[tuple[str, str]] = set()

    # --- reading ------------------------------------------------------------------------

    def flow_of(self, run: RunRecord) -> Flow | None:
        """The named flow that stored ``run`` (same graph signature), if any."""
        return self._by_signature.get(run.graph_signature)

    async def _known(self, run_id: str) -> RunRecord:
        run = await self.store.get_run(run_id)
        if run is None:
            raise StudioError(f"no run `{run_id}` in the store", status=404)
        return run

    async def _tokens_of_run(self, run: RunRecord) -> tuple[int, int]:
        key = (run.run_id, run.last_checkpoint)
        found = self._tokens.get(key)
        if found is None:
            records = await self.store.records(run.run_id)
            totals = [_tokens_of(r.messages) for r in records]
            found = (sum(t[0] for t in totals), sum(t[1] for t in totals))
            if len(self._tokens) >= _TOKEN_CACHE:
                self._tokens.clear()
            self._tokens[key] = found
        return found

    def _summary(self, run: RunRecord, tokens: tuple[int, int]) -> dict[str, Any]:
        flow = self.flow_of(run)
        return {
            "run_id": run.run_id,
            "status": run.status,
            "flow": flow.name if flow is not None else run.team_type,
            "team_type": run.team_type,
            "turns": run.turns,
            "checkpoints": run.last_checkpoint,
            "created": run.created_at,
            "updated": run.updated_at,
            "stop_reason": run.stop_reason,
            "forked_from": list(run.forked_from) if run.forked_from else None,
            "prompt_tokens": tokens[0],
            "completion_tokens": tokens[1],
            "tokens": tokens[0] + tokens[1],
            "running_here": run.run_id in self.tasks and not self.tasks[run.run_id].done(),
        }

    async def list_runs(
        self,
        *,
        status: Sequence[str] = (),
        flow: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """One page of runs, newest first, and the cursor of the next page (None: last)."""
        if not 1 <= limit <= _PAGE_LIMIT:
            raise StudioError(f"limit must be 1 to {_PAGE_LIMIT}, got {limit}")
        if flow is not None and flow in self.flows:
            flow = self.flows[flow].signature
        try:
            runs = await self.store.list_runs(
                status=list(status) or None,  # type: ignore[arg-type]
                flow=flow or None,
                limit=limit + 1,
                cursor=cursor or None,
            )
        except CheckpointArgumentError as exc:
            raise StudioError(str(exc)) from exc
        page = list(runs[:limit])
        listed = []
        for run in page:
            listed.append(self._summary(run, await self._tokens_of_run(run)))
        more = len(runs) > limit
        return {"runs": listed, "next_cursor": page[-1].cursor if more and page else None}

    def drawing(self, key: str, graph: DiGraph) -> str | None:
        """The graph's SVG (cached by ``key``), or None when it cannot be drawn."""
        if self._draw is None:
            return None
        if key not in self._drawings:
            try:
                self._drawings[key] = self._draw(graph)
            except FlowlibError as exc:
                self.errors[f"drawing:{key}"] = str(exc)
                return None
        return self._drawings[key]

    async def run_detail(self, run_id: str) -> dict[str, Any]:
        """Everything the run view shows: the run, its steps (node, messages, tool calls,
        fired edges, tokens, timing), checkpoints, thread, pending requests, drawing."""
        run = await self._known(run_id)
        flow = self.flow_of(run)
        graph = flow.graph if flow is not None else graph_from_description(run.graph)
        records = await lineage_records(self.store, run)
        steps = []
        previous: float | None = None
        for record in records:
            if record.kind == "turn" and record.node is not None:
                steps.append(_step(record, previous))
            previous = record.created_at
        history = await self.store.history(run_id)
        folded = await self.store.load(run_id)
        thread = [
            {
                "node": node,
                "source": str(m.get("source", "?")),
                "kind": str(m.get("type", "message")),
                "text": _message_text(m),
            }
            for m, node in zip(folded.messages, folded.message_nodes, strict=False)
        ]
        tokens = _tokens_of([m for r in records for m in r.messages])
        key = flow.signature if flow is not None else run.graph_signature
        return {
            "run": self._summary(run, tokens),
            "flow_named": flow is not None,
            "nodes": list(graph.nodes),
            "steps": steps,
            "checkpoints": [info.model_dump(mode="json") for info in history],
            "messages": thread,
            "pending": [asdict(r) for r in pending_of_state(folded.bookkeeping)],
            "error": self.errors.get(run_id),
            "svg": self.drawing(key, graph),
        }

    async def flow_list(self) -> list[dict[str, Any]]:
        """The named flows: name, reference, nodes, findings, drawing."""
        return [
            {
                "name": flow.name,
                "reference": flow.reference,
                "team_type": flow.team_type,
                "nodes": list(flow.graph.nodes),
                "findings": flow.findings,
                "svg": self.drawing(flow.signature, flow.graph),
            }
            for flow in self.flows.values()
        ]

    # --- acting -------------------------------------------------------------------------

    def _flow_for(self, run: RunRecord) -> Flow:
        flow = self.flow_of(run)
        if flow is None:
            raise StudioError(
                f"run `{run.run_id}` was stored by a flow the studio was not started with "
                "(another graph): start it with `flowlib studio --store URL FILE.py:build` "
                "naming that flow",
                status=409,
            )
        return flow

    def _busy(self, run_id: str) -> None:
        task = self.tasks.get(run_id)
        if task is not None and not task.done():
            raise StudioError(f"run `{run_id}` is running in this studio already", status=409)

    def _launch(
        self, flow: Flow, key: str, how: str, /, *args: Any, **kwargs: Any
    ) -> asyncio.Task[Any]:
        """Run ``team.<how>(*args, **kwargs)`` (an entry point of the stored run) on a
        fresh team of ``flow`` in the studio's process."""
        from ..batch import build_team

        team = build_team(flow.factory, self.store)
        entry = getattr(team, how)

        async def go() -> None:
            try:
                await entry(*args, **kwargs)
                self.errors.pop(key, None)
            except Exception as exc:  # shown on the run's page; the store has the state
                self.errors[key] = f"{type(exc).__name__}: {exc}"
                raise

        task = asyncio.get_running_loop().create_task(go(), name=f"studio run {key}")
        task.add_done_callback(_retrieved)
        self.tasks[key] = task
        return task

    async def _settle(self, run_id: str, task: asyncio.Task[Any], *, since: int) -> None:
        """Wait until the run wrote a checkpoint after ``since`` (or its task ended), so
        the reply can link to it and an entry point's refusal (a lease held elsewhere, a
        request answered already) is the reply's error."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not task.done():
            run = await self.store.get_run(run_id)
            if run is not None and run.last_checkpoint > since:
                return
            await asyncio.sleep(0.02)
        if task.done() and not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            status = 409 if isinstance(exc, FlowlibError) else 500
            raise StudioError(f"{type(exc).__name__}: {exc}", status=status)

    async def start(self, flow_name: str, task: str, run_id: str | None = None) -> str:
        """Start a run of a named flow on ``task``; returns its id."""
        flow = self.flows.get(flow_name)
        if flow is None:
            known = ", ".join(f"`{n}`" for n in self.flows) or "none"
            raise StudioError(f"no flow `{flow_name}` (named flows: {known})", status=404)
        if not task.strip():
            raise StudioError("give the task: a non-empty text")
        run_id = run_id or uuid.uuid4().hex
        if await self.store.get_run(run_id) is not None:
            raise StudioError(f"run `{run_id}` exists already; pick another id", status=409)
        launched = self._launch(flow, run_id, "start_run", task, run_id=run_id)
        await self._settle(run_id, launched, since=0)
        return run_id

    async def resume(self, run_id: str, task: str | None = None) -> str:
        """Go on with a stored run: an interrupted or failed one resumes from its latest
        checkpoint (``resume_run``); a stopped or complete one continues with ``task``
        as new input (``continue_run``)."""
        run = await self._known(run_id)
        flow = self._flow_for(run)
        self._busy(run_id)
        state = (await self.store.load(run_id)).bookkeeping.get("run")
        still_open = isinstance(state, dict) and bool(state.get("open"))
        if run.status in ("running", "failed") or still_open:
            if task:
                raise StudioError(
                    f"run `{run_id}` was interrupted mid-run: resume it without new input first",
                    status=409,
                )
            launched = self._launch(flow, run_id, "resume_run", run_id)
        else:
            launched = self._launch(flow, run_id, "continue_run", run_id, task or None)
        await self._settle(run_id, launched, since=run.last_checkpoint)
        return run_id

    async def fork(self, run_id: str, checkpoint_id: int, new_id: str | None = None) -> str:
        """Fork ``run_id`` at ``checkpoint_id`` into a new stopped run (resume it to run
        on); needs no flow: the fork's first record is the folded state."""
        run = await self._known(run_id)
        if not 1 <= checkpoint_id <= run.last_checkpoint:
            raise StudioError(
                f"run `{run_id}` has checkpoints 1 to {run.last_checkpoint}, not {checkpoint_id}"
            )
        new_id = new_id or uuid.uuid4().hex
        if await self.store.get_run(new_id) is not None:
            raise StudioError(f"run `{new_id}` exists already; pick another id", status=409)
        folded = await self.store.load(run_id, upto=checkpoint_id)
        first = base_record(folded, run_id=new_id, checkpoint_id=1)
        now = time.time()
        record = run.model_copy(
            update={
                "run_id": new_id,
                "status": "stopped",
                "created_at": now,
                "updated_at": now,
                "forked_from": (run_id, checkpoint_id),
                "lease_owner": None,
                "lease_expires_at": None,
                "last_checkpoint": 0,
                "turns": 0,
                "stop_reason": None,
            }
        )
        await self.store.create_run(record, first=first)
        return new_id

    async def delete(self, run_id: str) -> None:
        """Remove a run (refused while this studio runs it)."""
        await self._known(run_id)
        self._busy(run_id)
        await self.store.delete(run_id)

    async def edit(
        self,
        run_id: str,
        *,
        append: Sequence[str] = (),
        replace: dict[int, str] | None = None,
        author: str,
        reason: str,
        go_on: bool = False,
    ) -> int:
        """Edit the run's thread at its latest checkpoint (``team.edit_run``: appended
        texts come from ``author``; a replaced message keeps its source), then, with
        ``go_on``, resume or continue it. Returns the edit's checkpoint id."""
        from ..batch import build_team
        from ..messages import TextMessage

        run = await self._known(run_id)
        flow = self._flow_for(run)
        self._busy(run_id)
        thread = (await self.store.load(run_id)).messages
        replaced = {}
        for index, text in (replace or {}).items():
            if not 0 <= index < len(thread):
                raise StudioError(f"the thread has messages 0 to {len(thread) - 1}, not {index}")
            source = str(thread[index].get("source") or author)
            replaced[index] = TextMessage(content=text, source=source)
        team = build_team(flow.factory, self.store)
        checkpoint: int = await team.edit_run(
            run_id,
            append=[TextMessage(content=text, source=author) for text in append],
            replace=replaced,
            author=author,
            reason=reason,
        )
        if go_on:
            await self.resume(run_id)
        return checkpoint

    async def answer(self, run_id: str, request_id: str, text: str) -> str:
        """Answer a pending human request by its id (``team.answer``); the run goes on.
        A request answered already (here or by any other process) is refused."""
        run = await self._known(run_id)
        flow = self._flow_for(run)
        if not text.strip():
            raise StudioError("give the answer: a non-empty text")
        if (run_id, request_id) in self._answered:
            raise StudioError(f"request `{request_id}` was answered already", status=409)
        self._busy(run_id)
        self._answered.add((run_id, request_id))
        launched = self._launch(flow, run_id, "answer", run_id, request_id, text)
        try:
            await self._settle(run_id, launched, since=run.last_checkpoint)
        except StudioError:
            self._answered.discard((run_id, request_id))
            raise
        return run_id


def _retrieved(task: asyncio.Task[Any]) -> None:
    """Mark a run task's exception as seen (it is kept in ``Studio.errors``)."""
    if not task.cancelled():
        task.exception()


def step_dict(step: Any) -> dict[str, Any]:
    """A ``PageStep`` as JSON (for tests and the static page)."""
    return asdict(step)


def check_limit(text: str | None, default: int = 50) -> int:
    """The ``limit`` query parameter as an int."""
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise InvalidArgumentError(
            f"limit must be a whole number, got {text!r}", argument="limit"
        ) from None
