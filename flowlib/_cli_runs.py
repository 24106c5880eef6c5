"""The command line for stored runs: ``run --store``, ``runs list|show|resume|prune|delete``
and ``render --store --run``.

A store is named by a URL (see [`open_store`][flowlib.checkpoint.open_store]). To run or
resume a team with a store, ``FILE.py:OBJECT`` must be a function that accepts the keyword
``checkpoint_store`` and passes it to the team's constructor, so each command builds a
fresh team on the store::

    def build(checkpoint_store=None):
        return GraphFlow(participants, graph, checkpoint_store=checkpoint_store)
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO, TypeVar

from ._cli_common import CliError, load_object

__all__ = ["register", "render_stored", "run_stored", "task_of"]

T = TypeVar("T")

_STORE_HELP = "the checkpoint store: sqlite:///runs.db, postgresql://user@host/db"


def register(commands: Any) -> None:
    """Add ``runs`` and the ``--store`` options of ``run`` and ``render`` to the parser
    (``flowlib.cli`` hands those two commands to [`run_stored`][] and [`render_stored`][]
    when ``--store`` is given).

    Args:
        commands: The ``add_subparsers()`` object of the ``flowlib`` parser; its ``run``
            and ``render`` commands must already exist.
    """
    run = commands.choices["run"]
    run.add_argument("task_text", nargs="?", metavar="TASK", help="the task (or --task)")
    run.add_argument("--store", metavar="URL", help=_STORE_HELP)
    run.add_argument("--run-id", metavar="ID", help="the run's id (default: a new one)")

    render = commands.choices["render"]  # its --run is a task; with --store, a stored run
    render.add_argument(
        "--store", metavar="URL", help=_STORE_HELP + "; then --run ID draws that run's path"
    )

    runs = commands.add_parser("runs", help="list, show, resume, prune or delete stored runs")
    actions = runs.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="every stored run, newest first")
    listing.add_argument("--store", metavar="URL", required=True, help=_STORE_HELP)
    show = actions.add_parser("show", help="a run's status, checkpoints and messages")
    show.add_argument("run_id", metavar="ID")
    show.add_argument("--store", metavar="URL", required=True, help=_STORE_HELP)
    resume = actions.add_parser("resume", help="continue a run from its latest checkpoint")
    resume.add_argument("run_id", metavar="ID")
    resume.add_argument("target", metavar="FILE.py:OBJECT", help="the function building the team")
    resume.add_argument("--store", metavar="URL", required=True, help=_STORE_HELP)
    resume.add_argument("--task", help="deliver this as a new turn of the run (human input)")
    recover = actions.add_parser(
        "recover",
        help="resume, through flowlib.batch, every run whose executor died (lease expired)",
    )
    recover.add_argument("target", metavar="FILE.py:OBJECT", help="the function building the team")
    recover.add_argument("--store", metavar="URL", required=True, help=_STORE_HELP)
    recover.add_argument(
        "--max-concurrency", type=int, metavar="N", help="runs resumed at once (default: all)"
    )
    pending = actions.add_parser("pending", help="the human requests stored runs wait for")
    pending.add_argument("--store", metavar="URL", required=True, help=_STORE_HELP)
    prune = actions.add_parser("prune", help="fold all but the newest checkpoints into one")
    prune.add_argument("run_id", metavar="ID")
    prune.add_argument("--keep-last", type=int, required=True, metavar="N")
    prune.add_argument("--store", metavar="URL", required=True, help=_STORE_HELP)
    delete = actions.add_parser("delete", help="remove a run and all its checkpoints")
    delete.add_argument("run_id", metavar="ID")
    delete.add_argument("--store", metavar="URL", required=True, help=_STORE_HELP)
    runs.set_defaults(handler=_cmd_runs)


# --- plumbing -------------------------------------------------------------------------


def _open(url: str) -> Any:
    from .checkpoint import open_store

    return open_store(url)


def _with_store(url: str, work: Callable[[Any], Awaitable[T]]) -> T:
    """Open the store, run ``work(store)`` on a new event loop, close the store."""

    async def main() -> T:
        store = _open(url)
        try:
            return await work(store)
        finally:
            await store.close()

    return asyncio.run(main())


def _build_team(reference: str, store: Any) -> Any:
    """Build the team ``reference`` names with ``checkpoint_store=store`` (as batches do)."""
    from .batch import build_team, resolve_factory
    from .errors import FlowlibError

    try:
        return build_team(resolve_factory(reference), store)
    except FlowlibError as exc:  # a bad reference or a factory that cannot take a store
        raise CliError(str(exc)) from exc


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def _message_line(dumped: dict[str, Any], node: str | None) -> str:
    source = dumped.get("source") or node or "?"
    content = dumped.get("content")
    text = content if isinstance(content, str) else f"<{dumped.get('type', 'message')}>"
    first = text.strip().splitlines()[0] if text.strip() else ""
    if len(first) > 100:
        first = first[:97] + "..."
    return f"{source}: {first}"


async def _stream(team: Any, out: TextIO, **kwargs: Any) -> Any:
    from .base import TaskResult
    from .ui import Console

    result = await Console(team.run_stream(**kwargs), output=out, output_stats=True)
    if not isinstance(result, TaskResult):  # pragma: no cover - teams end with a TaskResult
        raise CliError("the run did not end with a TaskResult")
    return result


# --- run --store ----------------------------------------------------------------------


def task_of(args: argparse.Namespace) -> str | None:
    """The task of ``flowlib run``: ``TASK`` or ``--task`` (not both)."""
    if args.task is not None and args.task_text is not None:
        raise CliError("give the task once: as TASK or as --task, not both")
    task: str | None = args.task if args.task is not None else args.task_text
    if args.store is None and args.run_id is not None:
        raise CliError("--run-id needs --store URL (where the run is checkpointed)")
    if args.store is None and task is None:
        raise CliError("give the task: flowlib run FILE.py:OBJECT TASK")
    return task


async def run_stored(args: argparse.Namespace, out: TextIO) -> int:
    """``flowlib run TARGET TASK --store URL [--run-id ID]`` (awaited by ``flowlib.cli``)."""
    from . import render

    task = task_of(args)
    run_id = args.run_id or uuid.uuid4().hex
    store = _open(args.store)
    try:
        team = _build_team(args.target, store)
        started = time.perf_counter()
        result = await _stream(team, out, task=task, run_id=run_id)
        if args.trace:
            render.render(team, Path(args.trace), trace=True)
            print(f"wrote the path taken to {args.trace}", file=out)
        elapsed = time.perf_counter() - started
        print(f"done in {elapsed:.2f} s: {result.stop_reason}", file=out)
        print(f"run id: {result.run_id or run_id}", file=out)
        return 0
    finally:
        await store.close()


# --- runs -----------------------------------------------------------------------------


def _cmd_runs(args: argparse.Namespace, out: TextIO) -> int:
    handlers: dict[str, Callable[[Any, argparse.Namespace, TextIO], Awaitable[int]]] = {
        "list": _list,
        "show": _show,
        "resume": _resume,
        "recover": _recover,
        "pending": _pending,
        "prune": _prune,
        "delete": _delete,
    }
    handler = handlers[args.action]
    return _with_store(args.store, lambda store: handler(store, args, out))


async def _known(store: Any, run_id: str) -> Any:
    run = await store.get_run(run_id)
    if run is None:
        raise CliError(f"no run `{run_id}` in the store (see `flowlib runs list --store ...`)")
    return run


async def _list(store: Any, args: argparse.Namespace, out: TextIO) -> int:
    runs = await store.list_runs()
    if not runs:
        print("no runs", file=out)
        return 0
    rows = [("RUN", "TEAM", "STATUS", "TURNS", "CHECKPOINTS", "UPDATED", "STOP REASON")]
    for run in runs:
        rows.append(
            (
                run.run_id,
                run.team_type,
                run.status,
                str(run.turns),
                str(run.last_checkpoint),
                _when(run.updated_at),
                (run.stop_reason or "").splitlines()[0][:60] if run.stop_reason else "",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        print("  ".join([*cells, row[-1]]).rstrip(), file=out)
    return 0


async def _show(store: Any, args: argparse.Namespace, out: TextIO) -> int:
    from .checkpoint import fold

    run = await _known(store, args.run_id)
    print(f"run {run.run_id} ({run.team_type}): {run.status}, {run.turns} turns", file=out)
    if run.stop_reason:
        print(f"stop reason: {run.stop_reason}", file=out)
    if run.forked_from is not None:
        print(f"forked from {run.forked_from[0]} at checkpoint {run.forked_from[1]}", file=out)
    print(f"created {_when(run.created_at)}, updated {_when(run.updated_at)}", file=out)
    print("checkpoints:", file=out)
    for info in await store.history(run.run_id):
        what = info.node or info.stop_reason or ""
        print(
            f"  {info.checkpoint_id:>5}  {info.kind:<5} turn {info.turn:<4} "
            f"+{info.message_count} msg  {_when(info.created_at)}  {what}".rstrip(),
            file=out,
        )
    folded = fold(await store.records(run.run_id), run_id=run.run_id)
    print(f"messages ({len(folded.messages)}):", file=out)
    for dumped, node in zip(folded.messages, folded.message_nodes, strict=True):
        print(f"  {_message_line(dumped, node)}", file=out)
    return 0


async def _resume(store: Any, args: argparse.Namespace, out: TextIO) -> int:
    await _known(store, args.run_id)
    team = _build_team(args.target, store)
    started = time.perf_counter()
    result = await _stream(team, out, task=args.task, run_id=args.run_id)
    elapsed = time.perf_counter() - started
    print(f"done in {elapsed:.2f} s: {result.stop_reason}", file=out)
    print(f"run id: {args.run_id}", file=out)
    return 0


async def _recover(store: Any, args: argparse.Namespace, out: TextIO) -> int:
    """Resume every run stored as running whose lease expired (its executor died), as a
    batch: each run is resumed from its checkpoint by a team ``target`` builds."""
    from .batch import LocalRunner
    from .errors import RunFailedError
    from .teams import runs_to_recover

    runs = await runs_to_recover(store)
    if not runs:
        print("no run to recover", file=out)
        return 0
    ids = [run.run_id for run in runs]
    runner = LocalRunner(args.target, checkpoint_store=store, max_concurrency=args.max_concurrency)
    # The task of a stored run is in its first checkpoint; the batch resumes without it.
    results = await runner.run_many([""] * len(ids), run_ids=ids)
    failed = 0
    for run_id, result in zip(ids, results, strict=True):
        if isinstance(result, RunFailedError):
            failed += 1
            print(f"{run_id}: failed: {str(result).splitlines()[0]}", file=out)
        else:
            print(f"{run_id}: {result.stop_reason}", file=out)
    print(f"recovered {len(ids) - failed} of {len(ids)} run(s)", file=out)
    return 1 if failed else 0


async def _pending(store: Any, args: argparse.Namespace, out: TextIO) -> int:
    from .teams import pending_requests

    pending = await pending_requests(store)
    if not pending:
        print("no pending requests", file=out)
        return 0
    print("RUN  REQUEST  ASKED  BY  SINCE  QUESTION", file=out)
    for item in pending:
        request = item.request
        question = request.question.splitlines()[0][:60] if request.question else ""
        print(
            f"{item.run_id}  {request.request_id}  {request.asked}  {request.by or ''}  "
            f"{_when(request.created_at)}  {question}",
            file=out,
        )
    return 0


async def _prune(store: Any, args: argparse.Namespace, out: TextIO) -> int:
    await _known(store, args.run_id)
    folded = await store.prune(args.run_id, keep_last=args.keep_last)
    print(f"run {args.run_id}: {folded} checkpoint(s) pruned (folded into one base)", file=out)
    return 0


async def _delete(store: Any, args: argparse.Namespace, out: TextIO) -> int:
    await _known(store, args.run_id)
    await store.delete(args.run_id)
    print(f"deleted run {args.run_id}", file=out)
    return 0


# --- render --store --run -------------------------------------------------------------


def render_stored(args: argparse.Namespace, out: TextIO) -> int:
    """``flowlib render TARGET --store URL --run ID -o out.svg`` (or ``-o run.html``: the
    run page, a step per stored turn)."""
    if args.run is None:
        raise CliError("--store URL needs --run ID: the stored run to draw")
    if args.output is None:
        raise CliError("drawing a stored run needs an output file: -o path.svg")
    args.run_id = args.run
    return _with_store(args.store, lambda store: _render_run(store, args, out))


async def _render_run(store: Any, args: argparse.Namespace, out: TextIO) -> int:
    from . import render
    from .checkpoint import fold

    obj = load_object(args.target)
    graph = obj.graph if hasattr(obj, "graph") else obj
    run = await _known(store, args.run_id)
    records = list(await store.records(args.run_id))
    trace = _stored_trace(graph, records, run.stop_reason)
    if Path(args.output).suffix.lower() in (".html", ".htm"):
        # The run page: the drawing with the path, and a step per stored turn.
        render.write_run_page(
            obj,
            args.output,
            render.steps_from_records(obj, records),
            trace=trace,
            title=f"run {args.run_id}",
            stop_reason=run.stop_reason,
        )
        print(f"wrote {args.output} (the run page of run {args.run_id})", file=out)
        return 0
    if trace is None:  # no per-turn records (durability="exit", a fork, pruned): rebuild
        folded = fold(records, run_id=args.run_id)
        trace = _messages_result(folded.messages, run.stop_reason)
    render.render(obj, Path(args.output), format=args.format, trace=trace)
    print(f"wrote {args.output} (the path of run {args.run_id})", file=out)
    return 0


def _stored_trace(graph: Any, records: list[Any], stop_reason: str | None) -> Any:
    """The run's exact path from its ``turn`` records (one per turn, with the edges the
    turn fired), or None when the records do not hold every turn."""
    from .graph import RunTrace

    if any(r.kind == "base" and r.messages for r in records):
        return None  # turns folded into a snapshot: their order is gone
    if not any(r.kind == "turn" for r in records):
        return None
    names = list(graph.nodes)
    index = {name: i for i, name in enumerate(names)}
    ends = [(source, edge.target) for source, edge in graph.iter_edges()]
    trace = RunTrace(names=names, edge_ends=ends, stop_reason=stop_reason)
    for record in records:
        if record.kind == "turn" and record.node in index:
            trace.step_nodes.append(index[record.node])
        step = len(trace.step_nodes) - 1
        used: set[int] = set()
        for pair in record.bookkeeping.get("edges_fired", ()):
            source, target = pair
            for edge, end in enumerate(ends):
                if end == (source, target) and edge not in used:
                    used.add(edge)
                    trace.fired.append((max(step, 0), edge))
                    break
    return trace


def _messages_result(dumped: list[dict[str, Any]], stop_reason: str | None) -> Any:
    """The stored messages as a ``TaskResult`` (the renderer rebuilds the path from it)."""
    from .base import TaskResult
    from .messages import MessageFactory, TextMessage

    factory = MessageFactory()
    messages: list[Any] = []
    for item in dumped:
        try:
            messages.append(factory.create(item))
        except (ValueError, TypeError):  # a custom type: its text is enough to draw the path
            content = item.get("content")
            messages.append(
                TextMessage(
                    source=str(item.get("source", "?")),
                    content=content if isinstance(content, str) else str(content),
                )
            )
    return TaskResult(messages=messages, stop_reason=stop_reason)
