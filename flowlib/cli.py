"""The ``flowlib`` command line: render, validate and run flows, and the demo.

``FILE.py:OBJECT`` names a team, a ``DiGraph``, a ``DiGraphBuilder``, or a function
taking no arguments that returns one of those (a factory, so a module can build a fresh
team per run). Errors are one clear line on stderr and a non-zero exit code.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

__all__ = ["CliError", "load_object", "main"]

EXIT_OK, EXIT_ERROR, EXIT_INVALID = 0, 1, 2


class CliError(Exception):
    """A command-line failure: printed as one line, exit code ``code``."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


def _import_file(path: Path) -> Any:
    if not path.is_file():
        raise CliError(f"{path}: no such file")
    name = f"_flowlib_cli_{path.stem}_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CliError(f"{path}: not an importable Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent.resolve()))
    return module


def load_object(reference: str) -> Any:
    """Load ``FILE.py:OBJECT``; call it if it is a factory; build it if it is a builder.

    Raises:
        CliError: If the file or object is missing or is not a graph or team.
        GraphError: If building or validating the graph fails (from the module itself).
    """
    from .graph import DiGraph
    from .teams import DiGraphBuilder

    file_part, sep, attribute = reference.rpartition(":")
    if not sep or not file_part or not attribute:
        raise CliError(f"{reference!r}: expected FILE.py:OBJECT, e.g. examples/flow.py:team")
    module = _import_file(Path(file_part))
    if not hasattr(module, attribute):
        public = sorted(n for n in vars(module) if not n.startswith("_"))
        raise CliError(f"{file_part} has no `{attribute}`; it defines: {', '.join(public)}")
    obj = getattr(module, attribute)
    is_factory = callable(obj) and not isinstance(obj, (type, DiGraph, DiGraphBuilder))
    if is_factory and not hasattr(obj, "graph"):
        obj = obj()
    if isinstance(obj, DiGraphBuilder):
        obj = obj.build()
    if not isinstance(obj, DiGraph) and not hasattr(obj, "graph"):
        raise CliError(
            f"`{attribute}` is a {type(obj).__name__}, not a team, DiGraph, DiGraphBuilder "
            "or a function returning one"
        )
    return obj


def _graph_of(obj: Any) -> Any:
    from .graph import DiGraph

    return obj if isinstance(obj, DiGraph) else obj.graph


def _cmd_validate(args: argparse.Namespace, out: TextIO) -> int:
    from .graph import validate_graph

    obj = load_object(args.target)
    analysis = validate_graph(_graph_of(obj))
    edges = len(analysis.edges)
    loops = "with loops" if analysis.has_cycles else "acyclic"
    entry = ", ".join(analysis.names[i] for i in analysis.entry)
    print(f"ok: {len(analysis.names)} nodes, {edges} edges, {loops}; starts at {entry}", file=out)
    return EXIT_OK


def _cmd_render(args: argparse.Namespace, out: TextIO) -> int:
    from . import render

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

    obj = load_object(args.target)
    if not hasattr(obj, "run_stream"):
        raise CliError(f"`{args.target}` is a graph, not a team; `run` needs a team")
    started = time.perf_counter()
    result = await Console(obj.run_stream(task=args.task), output=out, output_stats=True)
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
    from ._cli_runs import register as register_runs

    parser = argparse.ArgumentParser(
        prog="flowlib",
        description="Multi-agent LLM workflows, graph-first.",
        epilog="TARGET is FILE.py:OBJECT: a team, a DiGraph, a DiGraphBuilder, or a "
        "function returning one.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    render = commands.add_parser("render", help="draw a flow as SVG, PNG, DOT or Mermaid")
    render.add_argument("target", help="FILE.py:OBJECT")
    render.add_argument("-o", "--output", help="output file (format from its suffix)")
    render.add_argument("--format", choices=["svg", "png", "dot", "mermaid"], default=None)

    validate = commands.add_parser("validate", help="check a flow's graph; exit 1 if invalid")
    validate.add_argument("target", help="FILE.py:OBJECT")

    run = commands.add_parser("run", help="run a team on a task, streaming to the console")
    run.add_argument("target", help="FILE.py:OBJECT")
    run.add_argument("--task", help="the task")
    run.add_argument("--trace", metavar="OUT.svg", help="also draw the path taken")

    register_runs(commands)  # run --store, runs ..., render --store --run (_cli_runs.py)
    demo = commands.add_parser("demo", help="run the built-in demo flow")
    demo.add_argument("--task", default=None, help="the task (a default one is provided)")
    return parser


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the command line; return the exit code."""
    from .errors import FlowlibError

    stdout = out or sys.stdout
    args = _parser().parse_args(argv)
    try:
        handler = getattr(args, "handler", None)  # commands registered by other modules
        if handler is not None:
            return int(handler(args, stdout))
        if args.command == "validate":
            return _cmd_validate(args, stdout)
        if args.command == "render":
            return _cmd_render(args, stdout)
        if args.command == "run":
            return asyncio.run(_run(args, stdout))
        return _cmd_demo(args, stdout)
    except CliError as exc:
        print(f"flowlib {args.command}: {exc}", file=sys.stderr)
        return exc.code
    except (FlowlibError, ValueError) as exc:
        # Graph and team errors (ValueErrors that name nodes, edges and the fix).
        print(f"flowlib {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(f"flowlib {args.command}: interrupted", file=sys.stderr)
        return 130
