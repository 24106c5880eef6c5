"""A stored run's page: its steps, checkpoint timeline, pending requests and fork diff.

Everything here is read from a checkpoint store (no team needed): the steps from the
run's ``turn`` records (a fork's own records follow its parent's up to the fork point),
the timeline from ``store.history``, the pending human requests from the run state in
the latest record (``bookkeeping["run"]``, docs/state.md), and a fork's diff against its
parent from the two threads. ``flowlib render --store URL --run-id ID -o run.html``
writes it; the studio shows the same parts of one run live.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..checkpoint import CheckpointRecord, CheckpointStore, RunRecord
from ..graph import DiGraph, DiGraphEdge, DiGraphNode, RunTrace
from ._page import PageStep, run_page, steps_from_records, trace_from_steps
from ._page_parts import PageCheckpoint, PageDiffLine, PageFork, PageRequest
from ._scene import SupportsGraph, graph_of

__all__ = [
    "StoredRun",
    "fork_diff",
    "graph_from_description",
    "lineage_records",
    "pending_of_state",
    "read_stored_run",
    "write_stored_run_page",
]


@dataclass
class StoredRun:
    """What the page shows of one stored run (``read_stored_run``)."""

    run: RunRecord
    steps: list[PageStep]
    trace: RunTrace | None
    checkpoints: list[PageCheckpoint]
    pending: list[PageRequest]
    fork: PageFork | None


def graph_from_description(description: dict[str, Any]) -> DiGraph:
    """A drawable graph from a stored run's ``RunRecord.graph`` (nodes and edge lines).

    Conditions are not rebuilt (the lines only describe them); the drawing needs the
    nodes and edges alone, and fired edges come from the records' bookkeeping.
    """
    names = [str(name) for name in description.get("nodes", {})]
    nodes = {name: DiGraphNode(name=name) for name in names}
    # Longest names first, so a node named "a" does not claim "a b -> c".
    by_length = sorted(names, key=len, reverse=True)
    for line in description.get("edges", []):
        text = str(line)
        for source in by_length:
            head = source + " -> "
            if text.startswith(head):
                rest = text[len(head) :]
                target = rest.rsplit(" [", 1)[0] if rest.endswith("]") else rest
                if target in nodes:
                    nodes[source].edges.append(DiGraphEdge(target=target))
                break
    if not nodes:
        nodes = {"(no graph stored)": DiGraphNode(name="(no graph stored)")}
    return DiGraph(nodes=nodes)


def pending_of_state(bookkeeping: dict[str, Any]) -> list[PageRequest]:
    """The human requests not answered yet in a run state (``bookkeeping["run"]``)."""
    state = bookkeeping.get("run")
    if not isinstance(state, dict):
        return []
    answered = set(state.get("answered") or [])
    found = []
    for request in state.get("requests") or []:
        if not isinstance(request, dict) or request.get("request_id") in answered:
            continue
        when = request.get("created_at")
        found.append(
            PageRequest(
                request_id=str(request.get("request_id", "")),
                asked=str(request.get("asked", "")),
                by=None if request.get("by") is None else str(request.get("by")),
                question=str(request.get("question", "")),
                created_at=float(when) if isinstance(when, int | float) else None,
            )
        )
    return found


async def lineage_records(store: CheckpointStore, run: RunRecord) -> list[CheckpointRecord]:
    """The records a run's page shows: a fork's parent's records up to the fork point
    (recursively, for a fork of a fork), then its own after its ``base`` record."""
    own = list(await store.records(run.run_id))
    if run.forked_from is None:
        return own
    parent_id, checkpoint = run.forked_from
    parent = await store.get_run(parent_id)
    inherited: list[CheckpointRecord] = []
    if parent is not None:
        inherited = [r for r in await lineage_records(store, parent) if r.run_id != parent_id]
        inherited += list(await store.records(parent_id, upto=checkpoint))
    if own and own[0].kind == "base":
        own = own[1:]
    return inherited + own


def _text(dumped: dict[str, Any]) -> str:
    """A stored message's text as the page shows it (its ``to_text()``)."""
    from ..messages import MessageFactory

    try:
        return str(MessageFactory().create(dumped).to_text())
    except Exception:  # a message type this process cannot load: show its content
        content = dumped.get("content")
        return content if isinstance(content, str) else repr(content)


def _line(op: str, dumped: dict[str, Any]) -> PageDiffLine:
    return PageDiffLine(
        op, str(dumped.get("source", "?")), str(dumped.get("type", "message")), _text(dumped)
    )


def fork_diff(
    parent: Sequence[dict[str, Any]], fork: Sequence[dict[str, Any]]
) -> tuple[int, list[PageDiffLine]]:
    """The shared history of two threads and the diff after it: ``(shared, lines)``.

    Messages are compared by source, type and content; after the common start, the
    parent's and the fork's messages are matched like lines of two files (an edit of a
    message in the fork shows as the parent's message and the fork's)."""

    def key(dumped: dict[str, Any]) -> tuple[str, str, str]:
        return (str(dumped.get("source")), str(dumped.get("type")), repr(dumped.get("content")))

    left = [key(m) for m in parent]
    right = [key(m) for m in fork]
    shared = 0
    while shared < min(len(left), len(right)) and left[shared] == right[shared]:
        shared += 1
    lines: list[PageDiffLine] = []
    matcher = difflib.SequenceMatcher(a=left[shared:], b=right[shared:], autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            lines.extend(_line("same", m) for m in fork[shared + b0 : shared + b1])
            continue
        lines.extend(_line("parent", m) for m in parent[shared + a0 : shared + a1])
        lines.extend(_line("fork", m) for m in fork[shared + b0 : shared + b1])
    return shared, lines


async def read_stored_run(
    store: CheckpointStore, run_id: str, obj: DiGraph | SupportsGraph | None = None
) -> tuple[DiGraph | SupportsGraph, StoredRun]:
    """Read everything the page shows of ``run_id``.

    Args:
        store: The checkpoint store.
        run_id: The run.
        obj: The team or graph that stored it; None: the graph stored with the run
            (``RunRecord.graph``: nodes and edges, no conditions).

    Returns:
        The team or graph to draw, and the run's parts.

    Raises:
        RunNotFoundError: If the store has no run ``run_id``.
    """
    from ..errors import RunNotFoundError

    run = await store.get_run(run_id)
    if run is None:
        raise RunNotFoundError(f"no run `{run_id}` in the store", run_id=run_id)
    drawn: DiGraph | SupportsGraph = obj if obj is not None else graph_from_description(run.graph)
    graph = graph_of(drawn)
    records = await lineage_records(store, run)
    steps = steps_from_records(drawn, records)
    _fired_from_bookkeeping(graph, records, steps)
    trace = trace_from_steps(drawn, steps) if steps else None
    if trace is not None:
        trace.stop_reason = run.stop_reason
    checkpoints = await _timeline(store, run, records, graph)
    folded = await store.load(run_id)
    pending = pending_of_state(folded.bookkeeping) if run.status == "stopped" else []
    fork = None
    if run.forked_from is not None:
        parent_id, at = run.forked_from
        parent = await store.get_run(parent_id)
        if parent is not None:
            parent_thread = (await store.load(parent_id)).messages
            shared, lines = fork_diff(parent_thread, folded.messages)
        else:
            shared, lines = 0, [_line("fork", m) for m in folded.messages]
        fork = PageFork(
            parent_id=parent_id,
            checkpoint_id=at,
            shared=shared,
            parent_status=None if parent is None else parent.status,
            lines=lines,
        )
    parts = StoredRun(run, steps, trace, checkpoints, pending, fork)
    return drawn, parts


def _fired_from_bookkeeping(
    graph: DiGraph, records: Sequence[CheckpointRecord], steps: list[PageStep]
) -> None:
    """Where the records say which edges a turn fired (``edges_fired``), use that: it is
    exact where re-checking conditions (or a graph stored without them) is not."""
    ends = {(source, edge.target) for source, edge in graph.iter_edges()}
    position = -1
    for record in records:
        if record.kind != "turn" or record.node not in graph.nodes:
            continue
        position += 1
        fired = record.bookkeeping.get("edges_fired")
        if isinstance(fired, list) and position < len(steps):
            pairs = [(str(p[0]), str(p[1])) for p in fired if isinstance(p, list | tuple)]
            steps[position].edges = [pair for pair in pairs if pair in ends]


async def _timeline(
    store: CheckpointStore, run: RunRecord, records: Sequence[CheckpointRecord], graph: DiGraph
) -> list[PageCheckpoint]:
    """The run's own checkpoints, each with the page step it belongs to."""
    step_of: dict[int, int] = {}
    step = 0
    for record in records:
        if record.kind == "turn" and record.node in graph.nodes:
            step += 1
        if record.run_id == run.run_id and step:
            step_of[record.checkpoint_id] = step
    return [
        # A timeline entry is the checkpoint's CheckpointInfo and the step it belongs to.
        PageCheckpoint(**info.model_dump(), step=step_of.get(info.checkpoint_id))
        for info in await store.history(run.run_id)
    ]


async def write_stored_run_page(
    store: CheckpointStore,
    run_id: str,
    path: str | os.PathLike[str],
    *,
    obj: DiGraph | SupportsGraph | None = None,
) -> Path:
    """Write the self-contained run page of a stored run: its steps on the drawing, its
    checkpoint timeline, the human requests it waits for, and for a fork its diff
    against its parent.

    Args:
        store: The checkpoint store.
        run_id: The run.
        path: The HTML file to write.
        obj: The team or graph that stored it; None: draw the graph stored with the run.

    Returns:
        ``path``.

    Raises:
        RunNotFoundError: If the store has no run ``run_id``.
        GraphvizNotFoundError: If Graphviz is not installed.

    Examples:
        ```python
        store = SQLiteCheckpointStore("runs.db")
        await write_stored_run_page(store, "run-1", "run.html", obj=build())
        ```
    """
    drawn, parts = await read_stored_run(store, run_id, obj)
    page = run_page(
        drawn,
        parts.steps,
        trace=parts.trace,
        title=f"run {run_id}",
        stop_reason=parts.run.stop_reason,
        checkpoints=parts.checkpoints,
        pending=parts.pending,
        fork=parts.fork,
        status=parts.run.status,
    )
    target = Path(path)
    target.write_text(page, encoding="utf-8")
    return target
