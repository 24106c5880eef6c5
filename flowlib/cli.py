"""The ``flowlib`` command line."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flowlib", description="Multi-agent LLM workflows, graph-first."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run the built-in demo flow")
    demo.add_argument("--task", default=None, help="the task (a default one is provided)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    args = _parser().parse_args(argv)
    if args.command == "demo":
        from ._demo import DEFAULT_TASK, run_demo

        asyncio.run(run_demo(args.task or DEFAULT_TASK))
        return 0
    return 2  # pragma: no cover - argparse rejects unknown commands
