"""The ``flowlib`` command line: render, validate and run flows, and the demo.

``FILE.py:OBJECT`` names a team, a ``DiGraph``, a ``DiGraphBuilder``, or a function
taking no arguments that returns one of those (a factory, so a module can build a fresh
team per run). Errors are one clear line on stderr (``FILE:LINE: Error: message`` when
the user's own code raised) and a non-zero exit code; ``--traceback`` shows the whole.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO, cast

from . import _cli_batch, _cli_check, _cli_runs
from ._cli_common import (
    EXIT_OK,
    CliError,
    ExitCode,
    graph_of,
    load_object,
)
from ._cli_errors import add_traceback_option

__all__ = ["CliError", "ExitCode", "load_object", "main"]


def _cmd_validate(args: argparse.Namespace, out: TextIO) -> int:
    from .graph import validate_graph

    obj = load_object(args.target)
    analysis = validate_graph(graph_of(obj))
    edges = len(analysis.edges)
    loops = "with loops" if analysis.has_cycles else "acyclic"
    entry = ", ".join(analysis.names[i] for i in analysis.entry)
    _cli_check.report_warnings(graph_of(obj), analysis, strict=args.strict, out=out)
    print(f"ok: {len(analysis.names)} nodes, {edges} edges, {loops}; starts at {entry}", file=out)
    return EXIT_OK


def _cmd_render(args: argparse.Namespace, out: TextIO) -> int:
    from . import render

    if args.store is not None:  # --run names a stored run (_cli_runs.py)
        return _cli_runs.render_stored(args, out)
    if args.run is not None:
        return _cli_check.render_run(args, out)
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
    from . import render
    from .base import TaskResult
    from .ui import Console
    from .ui._escape import escapes

    task = _cli_runs.task_of(args)  # TASK or --task
    if args.store is not None:  # checkpointed to a store (_cli_runs.py)
        return await _cli_runs.run_stored(args, out)
    obj = load_object(args.target)
    if not hasattr(obj, "run_stream"):
        raise CliError(f"`{args.target}` is a graph, not a team; `run` needs a team")
    started = time.perf_counter()
    result = await Console(
        obj.run_stream(task=task), output=out, output_stats=True, raw=not escapes(out)
    )
    if not isinstance(result, TaskResult):  # pragma: no cover - teams end with a TaskResult
        raise CliError("the run did not end with a TaskResult")
    if args.trace:
        render.render(obj, Path(args.trace), trace=True)
        print(f"wrote the path taken to {args.trace}", file=out)
    elapsed = time.perf_counter() - started
    print(f"done in {elapsed:.2f} s: {result.stop_reason}", file=out)
    return EXIT_OK


def _cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from ._demo import DEFAULT_TASK, run_demo

    asyncio.run(run_demo(args.task or DEFAULT_TASK))
    return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flowlib",
        description="Multi-agent LLM workflows, graph-first.",
        epilog="TARGET is FILE.py:OBJECT: a team, a DiGraph, a DiGraphBuilder, or a "
        "function returning one.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    _cli_batch.register(commands)  # flowlib batch

    render = commands.add_parser("render", help="draw a flow as SVG, PNG, DOT or Mermaid")
    render.add_argument("target", help="FILE.py:OBJECT")
    render.add_argument("-o", "--output", help="output file (format from its suffix)")
    render.add_argument("--format", choices=["svg", "png", "dot", "mermaid"], default=None)
    render.add_argument("--run", metavar="TASK", help="run the team on TASK; -o run.html page")

    validate = commands.add_parser("validate", help="check a flow's graph; exit 1 if invalid")
    validate.add_argument("target", help="FILE.py:OBJECT")
    validate.add_argument("--strict", action="store_true", help="treat warnings as errors")

    run = commands.add_parser("run", help="run a team on a task, streaming to the console")
    run.add_argument("target", help="FILE.py:OBJECT")
    run.add_argument("--task", help="the task")
    run.add_argument("--trace", metavar="OUT.svg", help="also draw the path taken")

    _cli_runs.register(commands)  # run --store, runs ..., render --store --run
    _cli_check.register(commands)

    demo = commands.add_parser("demo", help="run the built-in demo flow")
    demo.add_argument("--task", default=None, help="the task (a default one is provided)")
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
    from ._cli_errors import report_error
    from .ui._escape import TerminalWriter

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
