"""What every ``flowlib`` subcommand shares: exit codes, the one-line error, loading
``FILE.py:OBJECT`` (a team, a graph, a builder, or a factory of one), and declaring a
command and its options as data (``Command``, ``Option``)."""

from __future__ import annotations

import importlib.util
import sys
import uuid
from enum import IntEnum
from pathlib import Path
from typing import Any

from .._english import a
from ..errors import FlowlibError

__all__ = [
    "EXIT_ERROR",
    "EXIT_INVALID",
    "EXIT_OK",
    "CliError",
    "Command",
    "ExitCode",
    "Option",
    "graph_of",
    "load_object",
]


class ExitCode(IntEnum):
    """The exit codes of ``flowlib`` commands."""

    OK = 0
    ERROR = 1
    """The command failed (a missing file, an invalid graph, a failed run)."""
    INVALID = 2
    """The command line itself is wrong."""
    INTERRUPTED = 130
    """Ctrl-C (128 + SIGINT)."""
    BROKEN_PIPE = 141
    """The reader of the output went away (``| head``): 128 + SIGPIPE, as a shell tool."""


EXIT_OK, EXIT_ERROR, EXIT_INVALID = ExitCode.OK, ExitCode.ERROR, ExitCode.INVALID


class CliError(FlowlibError):
    """A command-line failure: printed as one line, exit code ``code``."""

    def __init__(self, message: str, code: int = ExitCode.ERROR) -> None:
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
    except SystemExit as exc:
        raise _exited(path, exc) from None
    finally:
        sys.path.remove(str(path.parent.resolve()))
    return module


def _exited(path: Path, exc: SystemExit) -> CliError:
    """A file or factory called ``sys.exit()`` while flowlib loaded it: an error, never
    the exit code it chose (``sys.exit(0)`` would pass for a successful validation)."""
    return CliError(
        f"{path} called sys.exit({exc.code!r}) while flowlib was loading it, so there is "
        "nothing to check or run; move the script part under `if __name__ == '__main__':`"
    )


def load_object(reference: str) -> Any:
    """Load ``FILE.py:OBJECT``; call it if it is a factory; build it if it is a builder.

    Raises:
        CliError: If the file or object is missing or is not a graph or team.
        GraphError: If building or validating the graph fails (from the module itself).
    """
    from ..graph import DiGraph
    from ..teams import DiGraphBuilder

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
        try:
            obj = obj()
        except SystemExit as exc:
            raise _exited(Path(file_part), exc) from None
    if isinstance(obj, DiGraphBuilder):
        obj = obj.build()
    if not isinstance(obj, DiGraph) and not hasattr(obj, "graph"):
        raise CliError(
            f"`{attribute}` is {a(type(obj).__name__)}, not a team, DiGraph, DiGraphBuilder "
            "or a function returning one"
        )
    return obj


def graph_of(obj: Any) -> Any:
    """The graph of a team, or the graph itself."""
    from ..graph import DiGraph

    return obj if isinstance(obj, DiGraph) else obj.graph


class Option:
    """One argument of a command: its names, its help and argparse's other keywords
    (``action``, ``metavar``, ``default``, ``type``, ``choices``, ``nargs``, ...)."""

    __slots__ = ("flags", "keywords")

    def __init__(self, *flags: str, help: str, **keywords: Any) -> None:
        self.flags = flags
        self.keywords = {"help": help, **keywords}

    def add_to(self, parser: Any) -> None:
        """Add the argument to ``parser``."""
        parser.add_argument(*self.flags, **self.keywords)


class Command:
    """One subcommand as its parser shows it: its name, its one-line ``help`` (in the
    command list), its ``description`` (its own ``--help``) and its ``options``."""

    __slots__ = ("description", "help", "name", "options")

    def __init__(
        self, name: str, *, help: str, description: str, options: tuple[Option, ...] = ()
    ) -> None:
        self.name = name
        self.help = help
        self.description = description
        self.options = options

    def add_to(self, commands: Any) -> Any:
        """Add the command to ``commands`` (an ``add_subparsers()`` object); return its
        parser."""
        parser = commands.add_parser(self.name, help=self.help, description=self.description)
        for option in self.options:
            option.add_to(parser)
        return parser
