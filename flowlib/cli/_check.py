"""The ``flowlib check`` command, ``validate``'s warnings and ``render --run``'s run page.

``check FILE.py:OBJECT`` explores the flow with stand-ins
([`explore`][flowlib.testing.explore]), prints the findings and exits 1 when there is one,
writing the first counterexample as an SVG overlay and a run page. ``check --crash``
interrupts the flow's own runs and resumes them in fresh processes
([`check_crashes`][flowlib.testing.check_crashes]), drawing the resumed run of a finding.
``validate`` prints the static warnings of
[`graph_warnings`][flowlib.graph.graph_warnings]; ``--strict`` makes them errors.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from .._english import counted

__all__ = ["outcome_steps", "register", "render_run", "report_warnings"]


def report_warnings(graph: Any, analysis: Any, *, strict: bool, out: TextIO) -> int:
    """Print ``graph``'s static warnings; with ``strict``, raise on the first.

    Raises:
        GraphWarningError: With ``strict``, naming the warnings' nodes (exit code 1).
    """
    from ..errors import GraphWarningError
    from ..graph import graph_warnings

    warnings = graph_warnings(graph, analysis)
    for warning in warnings:
        print(f"warning [{warning.kind}]: {warning}", file=out)
    if strict and warnings:
        nodes = tuple(dict.fromkeys(n for w in warnings for n in w.nodes))
        edges = tuple(dict.fromkeys(e for w in warnings for e in w.edges))
        shown = ", ".join(f"`{n}`" for n in nodes)
        raise GraphWarningError(
            f"--strict: {len(warnings)} warning(s) above, about {shown}; fix them (or "
            "run without --strict).",
            nodes=nodes,
            edges=edges,
        )
    return 0


def register(commands: Any) -> None:
    """Add ``check`` to the command line's subparsers."""
    check = commands.add_parser(
        "check",
        help="property-test a flow with stand-ins; exit 1 on a finding",
        description="Explore many runs of a flow with stand-in agents whose replies "
        "hypothesis chooses, and report what can go wrong (a node never reached, a loop "
        "that does not end, a run that stops without an answer) with a counterexample "
        "drawn on the graph. Exit 1 on a finding, 0 when none is found.",
    )
    check.add_argument("target", help="FILE.py:OBJECT: the team or graph to check")
    check.add_argument("--max-turns", type=int, default=25, help="turn bound (default 25)")
    check.add_argument(
        "--max-examples",
        type=int,
        default=None,
        help="runs per search (default 100; with --crash, interruptions to try: default 30)",
    )
    check.add_argument(
        "--crash",
        action="store_true",
        help="crash-test the flow instead: interrupt its runs (exception, cancellation, "
        "SIGKILL), resume each in a fresh process, compare with the uninterrupted run; "
        "OBJECT must be a function taking checkpoint_store=",
    )
    check.add_argument("--task", default=None, help="with --crash: the task the runs start with")
    check.add_argument(
        "--time-budget",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="with --crash: try no new interruption after this long (default 120)",
    )
    check.add_argument(
        "-o",
        "--output",
        default=None,
        metavar="PREFIX",
        help="write the counterexample to PREFIX.svg and PREFIX.html (default: next to FILE)",
    )
    check.set_defaults(handler=_cmd_check)


def outcome_steps(outcome: Any) -> list[Any]:
    """Page steps of an exploration outcome; routers' choices become step notes."""
    from ..render import steps_from_run

    steps = steps_from_run(outcome.trace, outcome.messages)
    turns: dict[str, list[Any]] = {}
    for turn in outcome.turns:
        turns.setdefault(turn.node, []).append(turn)
    for step in steps:
        queue = turns.get(step.node)
        if queue:
            turn = queue.pop(0)
            step.note = str(turn)
    return steps


@contextmanager
def _hypothesis_files_in_tmp() -> Iterator[None]:
    """Hypothesis caches files (Unicode tables) in ``./.hypothesis``; while a command
    explores a user's flow they go to the temporary folder instead (restored after, so
    an in-process caller keeps its own setting)."""
    from hypothesis.configuration import set_hypothesis_home_dir, storage_directory

    previous = storage_directory(intent_to_write=False).home_directory
    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "flowlib-hypothesis")
    try:
        yield
    finally:
        set_hypothesis_home_dir(previous)


def _counterexample_prefix(args: argparse.Namespace) -> Path:
    from ._common import CliError

    if args.output is not None:
        prefix = Path(args.output)
    else:
        stem = Path(args.target.rpartition(":")[0]).stem
        prefix = Path.cwd() / f"{stem}.counterexample"
    if not prefix.parent.is_dir():
        raise CliError(f"{prefix.parent}: no such folder for the counterexample files")
    return prefix


def _cmd_crash(args: argparse.Namespace, out: TextIO) -> int:
    """``check --crash``: [`check_crashes`][flowlib.testing.check_crashes], printed; the
    finding's resumed run drawn on the graph (exit 1), or exit 0."""
    from ..checkpoint import CheckpointRecord
    from ..errors import InvalidArgumentError
    from ..render import steps_from_records, trace_from_steps
    from ..testing import check_crashes
    from ..testing.internal import DEFAULT_TASK, load_factory
    from ._common import CliError

    if args.time_budget is not None and args.time_budget <= 0:
        raise CliError("--time-budget must be a number of seconds > 0")
    max_examples = 30 if args.max_examples is None else args.max_examples
    try:
        factory = load_factory(args.target)
        with _hypothesis_files_in_tmp():
            report = check_crashes(
                args.target,
                task=args.task or DEFAULT_TASK,
                max_examples=max_examples,
                time_budget=args.time_budget,
            )
    except InvalidArgumentError as exc:
        raise CliError(str(exc)) from exc
    print(report, file=out)
    if report.ok:
        return 0
    finding = report.findings[0]
    outcome = finding.outcome
    if outcome is None or not outcome.records:
        return 1
    prefix = _counterexample_prefix(args)
    team = factory(checkpoint_store=None)
    records = [CheckpointRecord.model_validate(r) for r in outcome.records]
    steps = steps_from_records(team, records)
    trace = trace_from_steps(team, steps)
    trace.stop_reason = outcome.stop_reason
    title = f"[{finding.rule}] after {finding.interruption}"
    return _draw_finding(
        team,
        prefix,
        steps,
        trace,
        title=title,
        page_title=f"{report.flow}: {title}",
        stop_reason=outcome.stop_reason,
        flagged=finding.nodes,
        what=f"the resumed run of [{finding.rule}]",
        out=out,
    )


def _cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    from ..testing import explore
    from ._common import load_object

    if args.crash:
        return _cmd_crash(args, out)
    max_examples = 100 if args.max_examples is None else args.max_examples
    obj = load_object(args.target)
    with _hypothesis_files_in_tmp():
        report = explore(obj, max_turns=args.max_turns, max_examples=max_examples)
    print(report, file=out)
    if report.ok:
        return 0
    shown = next((f for f in report.findings if f.outcome is not None), None)
    if shown is None or shown.outcome is None:
        return 1
    prefix = _counterexample_prefix(args)
    outcome = shown.outcome
    return _draw_finding(
        obj,
        prefix,
        outcome_steps(outcome),
        outcome.trace,
        title=f"[{shown.rule}] counterexample",
        page_title=f"{report.flow}: [{shown.rule}] {', '.join(shown.nodes)}",
        stop_reason=outcome.stop_reason,
        flagged=shown.nodes,
        what=f"the counterexample of [{shown.rule}]",
        out=out,
    )


def _draw_finding(
    flow: Any,
    prefix: Path,
    steps: list[Any],
    trace: Any,
    *,
    title: str,
    page_title: str,
    stop_reason: str | None,
    flagged: Sequence[str],
    what: str,
    out: TextIO,
) -> int:
    """Draw a finding's run on the graph (PREFIX.svg) and as a run page (PREFIX.html);
    return the exit code of a check that found something, 1."""
    from ..render import GraphvizNotFoundError, render, write_run_page

    svg, page = prefix.with_name(prefix.name + ".svg"), prefix.with_name(prefix.name + ".html")
    try:
        render(flow, svg, trace=trace, title=title)
        write_run_page(
            flow,
            page,
            steps,
            trace=trace,
            title=page_title,
            stop_reason=stop_reason,
            flagged=flagged,
        )
    except GraphvizNotFoundError as exc:
        print(f"(no drawing: {exc})", file=out)
        return 1
    print(f"wrote {what} to {svg} and {page}", file=out)
    return 1


def render_run(args: argparse.Namespace, out: TextIO) -> int:
    """``flowlib render TARGET --run TASK -o run.html``: run the team, write its run page."""
    from ._common import CliError, load_object

    output = args.output
    if output is None or Path(output).suffix.lower() not in (".html", ".htm"):
        raise CliError("--run writes a run page: give an HTML output file, e.g. -o run.html")
    obj = load_object(args.target)
    if not hasattr(obj, "run_stream"):
        raise CliError(f"`{args.target}` is a graph, not a team; --run needs a team")
    return asyncio.run(_render_run(obj, args.run, Path(output), out))


async def _render_run(team: Any, task: str, output: Path, out: TextIO) -> int:
    from ..base import TaskResult
    from ..messages import ModelClientStreamingChunkEvent
    from ..render import steps_from_run, write_run_page

    items: list[Any] = []
    arrivals: list[float] = []
    started = time.perf_counter()
    result: TaskResult | None = None
    async for item in team.run_stream(task=task):
        if isinstance(item, TaskResult):
            result = item
        elif not isinstance(item, ModelClientStreamingChunkEvent):
            items.append(item)
            arrivals.append(time.perf_counter() - started)
    stop_reason = result.stop_reason if result is not None else None
    steps = steps_from_run(team.trace, items, arrivals=arrivals)
    write_run_page(team, output, steps, trace=team.trace, stop_reason=stop_reason)
    print(f"wrote the run page ({counted(len(steps), 'step')}) to {output}", file=out)
    return 0
