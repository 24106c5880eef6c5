"""The parser of the ``flowlib`` command and its ``render``, ``validate``, ``run`` and
``demo`` commands; the other families register themselves from their modules."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO, cast

from .._english import counted
from ._batch import register as register_batch
from ._check import register as register_check
from ._check import render_run, report_warnings
from ._common import (
    EXIT_OK,
    CliError,
    Command,
    ExitCode,
    Option,
    graph_of,
    load_object,
)
from ._errors import add_traceback_option
from ._runs import register as register_runs
from ._runs import render_stored, run_stored, task_of

__all__ = ["main"]


def _cmd_validate(args: argparse.Namespace, out: TextIO) -> int:
    from ..graph import validate_graph

    obj = load_object(args.target)
    analysis = validate_graph(graph_of(obj))
    edges = len(analysis.edges)
    loops = "with loops" if analysis.has_cycles else "acyclic"
    entry = ", ".join(analysis.names[i] for i in analysis.entry)
    report_warnings(graph_of(obj), analysis, strict=args.strict, out=out)
    nodes = counted(len(analysis.names), "node")
    print(f"ok: {nodes}, {counted(edges, 'edge')}, {loops}; starts at {entry}", file=out)
    return EXIT_OK


def _cmd_render(args: argparse.Namespace, out: TextIO) -> int:
    from .. import render

    # --run is the old spelling of both --task and, with --store, --run-id.
    if args.run is not None:
        if args.store is not None:
            args.run_id = args.run_id or args.run
        else:
            args.task = args.task or args.run
    if args.store is not None:  # --run-id names a stored run (_runs.py)
        args.run = args.run_id
        return render_stored(args, out)
    if args.target is None:
        raise CliError("name the flow to draw: flowlib render FILE.py:OBJECT")
    if args.task is not None:
        args.run = args.task
        return render_run(args, out)
    obj = load_object(args.target)
    fmt = args.format
    if args.output is None:
        text = render.to_mermaid(obj) if fmt == "mermaid" else render.to_dot(obj)
        if fmt not in (None, "dot", "mermaid"):
            raise CliError(f"--format {fmt} needs an output file (-o out.{fmt})")
        out.write(text if text.endswith("\n") else text + "\n")
        return EXIT_OK
    render.render(obj, Path(args.output), format=fmt)
    print(f"wrote {args.output}", file=out)
    return EXIT_OK


async def _run(args: argparse.Namespace, out: TextIO) -> int:
    from .. import render
    from ..base import TaskResult
    from ..ui import Console
    from ..ui.internal import escapes

    task = task_of(args)  # TASK or --task
    if args.store is not None:  # checkpointed to a store (_runs.py)
        return await run_stored(args, out)
    obj = load_object(args.target)
    if not hasattr(obj, "run_stream"):
        raise CliError(f"`{args.target}` is a graph, not a team; `run` needs a team")
    # Console's summary (messages, tokens, duration) is the run's one account of its time.
    result = await Console(
        obj.run_stream(task=task), output=out, output_stats=True, raw=not escapes(out)
    )
    if not isinstance(result, TaskResult):  # pragma: no cover - teams end with a TaskResult
        raise CliError("the run did not end with a TaskResult")
    if args.trace:
        render.render(obj, Path(args.trace), trace=True)
        print(f"wrote the path taken to {args.trace}", file=out)
    print(f"stop reason: {result.stop_reason}", file=out)
    return EXIT_OK


def _cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from .demo import DEFAULT_TASK, run_demo

    asyncio.run(run_demo(args.task or DEFAULT_TASK))
    return EXIT_OK


_COMMANDS = (
    Command(
        "render",
        help="draw a flow as SVG, PNG, DOT or Mermaid",
        description="Draw a flow without running it (DOT or Mermaid on stdout, or a file "
        "whose suffix picks the format); with --task, run it and write its run page; with "
        "--store and --run-id, draw a stored run's path or write its run page.",
        options=(
            Option(
                "target",
                nargs="?",
                help="FILE.py:OBJECT: the team or graph to draw (a stored run's page, "
                "-o run.html, draws the graph stored with the run when it is not given)",
            ),
            Option("-o", "--output", help="output file (format from its suffix)"),
            Option(
                "--format",
                choices=["svg", "png", "dot", "mermaid"],
                default=None,
                help="the format, when the output file's suffix does not say (default: DOT "
                "on stdout)",
            ),
            Option("--task", help="run the team on TASK and write its run page (-o run.html)"),
            Option("--run-id", metavar="ID", help="with --store: the stored run to draw"),
            Option(
                "--run",
                metavar="TASK|ID",
                help="old spelling of --task (or of --run-id with --store)",
            ),
        ),
    ),
    Command(
        "validate",
        help="check a flow's graph; exit 1 if invalid",
        description="Build the flow and validate its graph: exit 0 with a one-line summary "
        "when it is valid, 1 with the error (naming the nodes and edges and the fix) when not.",
        options=(
            Option("target", help="FILE.py:OBJECT: the team or graph to check"),
            Option("--strict", action="store_true", help="treat warnings as errors"),
        ),
    ),
    Command(
        "run",
        help="run a team on a task, streaming to the console",
        description="Run a team on a task and stream its messages to the console; with "
        "--store, checkpoint the run so that it can be resumed (flowlib runs resume).",
        options=(
            Option("target", help="FILE.py:OBJECT: the team to run"),
            Option("--task", help="the task"),
            Option("--trace", metavar="OUT.svg", help="also draw the path taken"),
        ),
    ),
    Command(
        "demo",
        help="run the built-in demo flow",
        description="Run the demo team (fan-out, join, a tool call and a review loop) and "
        "print its stream and the path taken: offline on scripted models, or on a real "
        "model when OPENAI_API_KEY or OPENAI_BASE_URL is set.",
        options=(Option("--task", default=None, help="the task (a default one is provided)"),),
    ),
)
"""The commands this module runs, as the parser shows them (in its command list, the
other families' commands stand between ``run`` and ``demo``)."""


def _parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="flowlib",
        description="Multi-agent LLM workflows, graph-first.",
        epilog="TARGET is FILE.py:OBJECT: a team, a DiGraph, a DiGraphBuilder, or a "
        "function returning one. Exit codes: docs/cli.md.",
    )
    parser.add_argument(
        "--version", action="version", version=f"flowlib {__version__}", help="print the version"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    register_batch(commands)  # flowlib batch

    render, validate, run, demo = _COMMANDS
    for command in (render, validate, run):
        command.add_to(commands)
    register_runs(commands)  # run --store, runs ..., render --store --run
    register_check(commands)
    from ..studio.internal import register as register_studio

    register_studio(commands)

    demo.add_to(commands)
    add_traceback_option(parser, commands)
    _add_raw_option(parser, commands)
    return parser


def _add_raw_option(parser: argparse.ArgumentParser, commands: object) -> None:
    """``--raw`` (before or after the subcommand): print text as it is."""
    text = (
        "print model, tool and stored text as it is; by default control characters in "
        "it (escape sequences, carriage returns) are shown escaped, not obeyed"
    )
    parser.add_argument("--raw", action="store_true", help=text)
    for sub in getattr(commands, "choices", {}).values():
        sub.add_argument("--raw", action="store_true", default=argparse.SUPPRESS, help=text)


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the command line; return the exit code (an `ExitCode`)."""
    from ..ui.internal import TerminalWriter
    from ._errors import report_error

    args = _parser().parse_args(argv)
    # Model, tool and stored text is printed with its control characters escaped
    # (issue 21.5): a reply cannot retitle the terminal, write its clipboard or erase
    # a line. --raw prints it as it is.
    stdout: TextIO = out or sys.stdout
    stderr: TextIO = sys.stderr
    if not args.raw:
        stdout = cast(TextIO, TerminalWriter(stdout))
        stderr = cast(TextIO, TerminalWriter(stderr))
    try:
        code = _dispatch(args, stdout)
        stdout.flush()  # here, where a closed pipe is caught, not at exit
        return code
    except BrokenPipeError:
        # The reader went away (`flowlib runs show ... | head`): stop quietly, and keep
        # Python from reporting the pipe again when it flushes stdout at exit.
        _silence_stdout()
        return ExitCode.BROKEN_PIPE
    except CliError as exc:
        print(f"flowlib {args.command}: {exc}", file=stderr)
        return exc.code
    except Exception as exc:
        # One line: FILE:LINE when the user's code raised, else the command (graph and
        # team errors name their nodes, edges and the fix); --traceback for the whole.
        return report_error(exc, command=args.command, show_traceback=args.traceback, stream=stderr)
    except KeyboardInterrupt:
        print(f"flowlib {args.command}: interrupted", file=stderr)
        return ExitCode.INTERRUPTED


def _dispatch(args: argparse.Namespace, stdout: TextIO) -> int:
    if getattr(args, "handler", None) is not None:  # commands registered by modules
        return int(args.handler(args, stdout))
    if args.command == "validate":
        return _cmd_validate(args, stdout)
    if args.command == "render":
        return _cmd_render(args, stdout)
    if args.command == "run":
        return asyncio.run(_run(args, stdout))
    return _cmd_demo(args, stdout)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (a test's StringIO)
        pass
