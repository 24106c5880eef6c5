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
import json
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO, TypeVar

from ._common import CliError, Command, Option, load_object

__all__ = ["register", "render_stored", "run_stored", "task_of"]

T = TypeVar("T")

_STORE_HELP = (
    "the checkpoint store: sqlite:///runs.db, postgresql://user@host/db (default: $FLOWLIB_STORE)"
)
_STATUSES = ("running", "stopped", "complete", "failed")


def _store(*, required: bool = True) -> Option:
    """``--store URL``, defaulting to ``$FLOWLIB_STORE`` (required when that is unset)."""
    default = os.environ.get("FLOWLIB_STORE") or None
    return Option(
        "--store",
        metavar="URL",
        default=default,
        required=required and default is None,
        help=_STORE_HELP,
    )


def _actions() -> tuple[Command, ...]:
    """The actions of ``flowlib runs`` (made when the parser is: ``--store`` defaults to
    ``$FLOWLIB_STORE`` as it is then)."""
    json = Option("--json", action="store_true", help="print JSON, for programs")
    factory = Option("target", metavar="FILE.py:OBJECT", help="the function building the team")
    return (
        Command(
            "list",
            help="the stored runs, newest first",
            description="List the store's runs, newest first: id, status, turns, last update; "
            "filtered by status, time or flow, a page at a time (--limit, --cursor).",
            options=(
                _store(),
                Option(
                    "--status",
                    action="append",
                    choices=_STATUSES,
                    help="only runs with this status (repeat for several)",
                ),
                Option(
                    "--updated-since",
                    metavar="TIME",
                    help="only runs updated since TIME (ISO 8601 such as 2026-11-27T09:00, in "
                    "local time unless it names a zone, or unix seconds)",
                ),
                Option("--flow", metavar="NAME", help="only runs of this team class"),
                Option("--limit", type=int, metavar="N", help="at most N runs"),
                Option(
                    "--cursor", metavar="C", help="continue a listing (the next_cursor of --json)"
                ),
                json,
            ),
        ),
        Command(
            "show",
            help="a run's status, checkpoints and messages",
            description="Show one run: its status, its checkpoints and its messages.",
            options=(
                Option("run_id", metavar="ID", help="the run's id (flowlib runs list)"),
                _store(),
                Option(
                    "--limit",
                    type=int,
                    default=50,
                    metavar="N",
                    help="show the newest N checkpoints and messages (default 50; 0: all)",
                ),
                json,
            ),
        ),
        Command(
            "resume",
            help="continue a run from its latest checkpoint",
            description="Build the team with the store and continue the run from its latest "
            "checkpoint, streaming to the console; --task delivers a person's answer as the "
            "run's next input.",
            options=(
                Option("run_id", metavar="ID", help="the run to continue"),
                factory,
                _store(),
                Option("--task", help="deliver this as a new turn of the run (human input)"),
            ),
        ),
        Command(
            "recover",
            help="resume, through flowlib.batch, every run whose executor died (lease expired)",
            description="Find every run of the store whose executor died (its lease expired, "
            "or its holder was a process of this machine that is gone) and resume them all "
            "through flowlib.batch, building each team with FILE.py:OBJECT.",
            options=(
                factory,
                _store(),
                Option(
                    "--max-concurrency",
                    type=int,
                    metavar="N",
                    help="runs resumed at once (default: all)",
                ),
            ),
        ),
        Command(
            "pending",
            help="the human requests stored runs wait for",
            description="List the requests for a person's answer that stored runs wait for: "
            "request id, run, who is asked, what was asked and when. Answer one with "
            "team.answer(...) or flowlib runs resume --task.",
            options=(_store(),),
        ),
        Command(
            "prune",
            help="fold all but the newest checkpoints into one; pruned turns no longer show "
            "on the run page (render -o run.html) and cannot be forked from",
            description="Fold all but the newest N checkpoints of a run into one base "
            "checkpoint. The thread and the state stay whole (the run resumes the same), but "
            "the pruned turns no longer show on the run page (flowlib render --store --run ID "
            "-o run.html) or in its drawn path, and their checkpoints cannot be forked from.",
            options=(
                Option("run_id", metavar="ID", help="the run to prune"),
                Option(
                    "--keep-last",
                    type=int,
                    required=True,
                    metavar="N",
                    help="how many checkpoints to keep",
                ),
                _store(),
            ),
        ),
        Command(
            "delete",
            help="remove a run and all its checkpoints",
            description="Remove a run and every checkpoint of it from the store.",
            options=(Option("run_id", metavar="ID", help="the run to delete"), _store()),
        ),
    )


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
    _store(required=False).add_to(run)
    run.add_argument("--run-id", metavar="ID", help="the run's id (default: a new one)")

    render = commands.choices["render"]  # its --run is a task; with --store, a stored run
    render.add_argument(
        "--store", metavar="URL", help=_STORE_HELP + "; then --run ID draws that run's path"
    )

    runs = commands.add_parser(
        "runs",
        help="list, show, resume, prune or delete stored runs",
        description="Work with the runs of a checkpoint store: list them, show one, resume "
        "one in this process, prune old checkpoints, delete a run.",
    )
    actions = runs.add_subparsers(dest="action", required=True)
    for action in _actions():
        action.add_to(actions)
    runs.set_defaults(handler=_cmd_runs)


# --- plumbing -------------------------------------------------------------------------


def _open(url: str, *, create: bool = True) -> Any:
    from ..checkpoint import open_store

    return open_store(url, create=create)


def _with_store(url: str, work: Callable[[Any], Awaitable[T]]) -> T:
    """Open the existing store (nothing is created), run ``work(store)`` on a new event
    loop, close the store."""

    async def main() -> T:
        store = _open(url, create=False)
        try:
            return await work(store)
        finally:
            await store.close()

    return asyncio.run(main())


def _build_team(reference: str, store: Any) -> Any:
    """Build the team ``reference`` names with ``checkpoint_store=store`` (as batches do)."""
    from ..batch import build_team, resolve_factory
    from ..errors import FlowlibError

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
    from ..base import TaskResult
    from ..ui import Console
    from ..ui.internal import escapes

    result = await Console(
        team.run_stream(**kwargs), output=out, output_stats=True, raw=not escapes(out)
    )
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
    from .. import render

    task = task_of(args)
    run_id = args.run_id or uuid.uuid4().hex
    store = _open(args.store)
    try:
        team = _build_team(args.target, store)
        result = await _stream(team, out, task=task, run_id=run_id)
        if args.trace:
            render.render(team, Path(args.trace), trace=True)
            print(f"wrote the path taken to {args.trace}", file=out)
        print(f"stop reason: {result.stop_reason}", file=out)
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


def _since(text: str | None) -> float | None:
    """``--updated-since``: unix seconds, or an ISO 8601 time (local unless zoned)."""
    from datetime import datetime

    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise CliError(
            f"--updated-since {text!r} is not a time: give ISO 8601 (2026-11-27T09:00) or "
            "unix seconds"
        ) from None


async def _list(store: Any, args: argparse.Namespace, out: TextIO) -> int:
    if args.limit is not None and args.limit < 1:
        raise CliError(f"--limit must be 1 or more, got {args.limit}")
    runs = await store.list_runs(
        status=args.status,
        updated_since=_since(args.updated_since),
        flow=args.flow,
        limit=args.limit,
        cursor=args.cursor,
    )
    if args.json:
        more = args.limit is not None and len(runs) == args.limit
        listing = {
            "runs": [run.model_dump(mode="json") for run in runs],
            "next_cursor": runs[-1].cursor if more else None,
        }
        print(json.dumps(listing, indent=2), file=out)
        return 0
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
    if args.limit < 0:
        raise CliError(f"--limit must be 0 (all) or more, got {args.limit}")
    run = await _known(store, args.run_id)
    history = list(await store.history(run.run_id))
    folded = await store.load(run.run_id)
    shown = len(history) if args.limit == 0 else min(args.limit, len(history))
    messages = list(zip(folded.messages, folded.message_nodes, strict=True))
    said = len(messages) if args.limit == 0 else min(args.limit, len(messages))
    if args.json:
        page = {
            "run": run.model_dump(mode="json"),
            "checkpoints": [
                info.model_dump(mode="json") for info in history[len(history) - shown :]
            ],
            "checkpoints_omitted": len(history) - shown,
            "messages": [
                {"node": node, "message": m} for m, node in messages[len(messages) - said :]
            ],
            "messages_omitted": len(messages) - said,
        }
        print(json.dumps(page, indent=2), file=out)
        return 0
    print(f"run {run.run_id} ({run.team_type}): {run.status}, {run.turns} turns", file=out)
    if run.stop_reason:
        print(f"stop reason: {run.stop_reason}", file=out)
    if run.forked_from is not None:
        print(f"forked from {run.forked_from[0]} at checkpoint {run.forked_from[1]}", file=out)
    print(f"created {_when(run.created_at)}, updated {_when(run.updated_at)}", file=out)
    print("checkpoints:", file=out)
    if shown < len(history):
        print(f"  ... {len(history) - shown} earlier (--limit 0 shows all)", file=out)
    for info in history[len(history) - shown :]:
        what = info.node or info.stop_reason or ""
        print(
            f"  {info.checkpoint_id:>5}  {info.kind:<5} turn {info.turn:<4} "
            f"+{info.message_count} msg  {_when(info.created_at)}  {what}".rstrip(),
            file=out,
        )
    print(f"messages ({len(messages)}):", file=out)
    if said < len(messages):
        print(f"  ... {len(messages) - said} earlier (--limit 0 shows all)", file=out)
    for dumped, node in messages[len(messages) - said :]:
        print(f"  {_message_line(dumped, node)}", file=out)
    return 0


async def _resume(store: Any, args: argparse.Namespace, out: TextIO) -> int:
    await _known(store, args.run_id)
    team = _build_team(args.target, store)
    result = await _stream(team, out, task=args.task, run_id=args.run_id)
    print(f"stop reason: {result.stop_reason}", file=out)
    print(f"run id: {args.run_id}", file=out)
    return 0


async def _recover(store: Any, args: argparse.Namespace, out: TextIO) -> int:
    """Resume every run stored as running whose lease expired (its executor died), as a
    batch: each run is resumed from its checkpoint by a team ``target`` builds."""
    from ..batch import LocalRunner
    from ..errors import RunFailedError
    from ..teams import runs_to_recover

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
    pending = await store.list_pending()
    if not pending:
        print("no pending requests", file=out)
        return 0
    print("RUN  REQUEST  ASKED  BY  SINCE  QUESTION", file=out)
    for request in pending:
        question = request.question.splitlines()[0][:60] if request.question else ""
        print(
            f"{request.run_id}  {request.request_id}  {request.asked}  {request.by or ''}  "
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
    from .. import render
    from ..checkpoint import fold

    run = await _known(store, args.run_id)
    if Path(args.output).suffix.lower() in (".html", ".htm"):
        # The run page: the drawing with the path, a step per stored turn, the checkpoint
        # timeline, pending requests and a fork's diff (without TARGET: the stored graph).
        obj = None if args.target is None else load_object(args.target)
        await render.write_stored_run_page(store, args.run_id, args.output, obj=obj)
        print(f"wrote {args.output} (the run page of run {args.run_id})", file=out)
        return 0
    if args.target is None:
        raise CliError("drawing a stored run's path needs the flow: name FILE.py:OBJECT")
    obj = load_object(args.target)
    graph = obj.graph if hasattr(obj, "graph") else obj
    records = list(await store.records(args.run_id))
    trace = _stored_trace(graph, records, run.stop_reason)
    if trace is None:  # no per-turn records (durability="exit", a fork, pruned): rebuild
        folded = fold(records, run_id=args.run_id)
        trace = _messages_result(folded.messages, run.stop_reason)
    render.render(obj, Path(args.output), format=args.format, trace=trace)
    print(f"wrote {args.output} (the path of run {args.run_id})", file=out)
    return 0


def _stored_trace(graph: Any, records: list[Any], stop_reason: str | None) -> Any:
    """The run's exact path from its ``turn`` records (one per turn, with the edges the
    turn fired), or None when the records do not hold every turn."""
    from ..graph import RunTrace

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
    from ..base import TaskResult
    from ..messages import MessageFactory, TextMessage

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
