"""How the command line reports an error (issue 11.8).

An exception is one line on stderr. When the user's own code raised it (their flow
file, or an agent, tool or factory it defines) the line starts with that file and
line, like a compiler's: ``flow.py:12: ValueError: no such city``. Otherwise it names
the command: ``flowlib validate: CycleWithoutExitError: ...``. ``--traceback`` prints
the whole traceback instead, for any error.
"""

from __future__ import annotations

import argparse
import sys
import sysconfig
import traceback
from pathlib import Path
from types import TracebackType
from typing import TextIO

__all__ = ["add_traceback_option", "report_error", "user_location"]

_FLOWLIB = Path(__file__).resolve().parent.parent


def _library_roots() -> list[Path]:
    roots = {_FLOWLIB}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(Path(path).resolve())
    return sorted(roots)


def _is_user_file(filename: str) -> bool:
    if filename.startswith("<"):  # <frozen ...>, <string>
        return False
    path = Path(filename).resolve()
    return not any(root == path or root in path.parents for root in _library_roots())


def _innermost_user_frame(tb: TracebackType | None) -> tuple[str, int] | None:
    found: tuple[str, int] | None = None
    for frame, line in traceback.walk_tb(tb):
        if _is_user_file(frame.f_code.co_filename):
            found = (frame.f_code.co_filename, line)
    return found


def user_location(exc: BaseException) -> tuple[str, int] | None:
    """The file and line in the user's code where ``exc`` (or the error it wraps, e.g.
    the cause of a ``NodeExecutionError``) was raised; None if it came from a library."""
    if isinstance(exc, SyntaxError) and exc.filename and _is_user_file(exc.filename):
        return exc.filename, exc.lineno or 0
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    for error in reversed(chain):  # the innermost error first: that is where it began
        if isinstance(error, SyntaxError) and error.filename and _is_user_file(error.filename):
            return error.filename, error.lineno or 0
        found = _innermost_user_frame(error.__traceback__)
        if found is not None:
            return found
    return None


def _one_line(exc: BaseException) -> str:
    text = str(exc) if not isinstance(exc, SyntaxError) else (exc.msg or str(exc))
    return " ".join(text.split()) or "(no message)"


def _shown_path(filename: str) -> str:
    path = Path(filename)
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return filename


def report_error(
    exc: BaseException, *, command: str, show_traceback: bool, stream: TextIO | None = None
) -> int:
    """Print ``exc`` for the command line and return the exit code (1).

    Args:
        exc: The error.
        command: The subcommand, for errors that did not come from the user's code.
        show_traceback: Print the whole traceback instead of one line.
        stream: Where to print; stderr by default.
    """
    err = stream or sys.stderr
    if show_traceback:
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=err)
        return 1
    where = user_location(exc)
    message = f"{type(exc).__name__}: {_one_line(exc)}"
    if where is None:
        print(f"flowlib {command}: {message}", file=err)
    else:
        filename, line = where
        print(f"{_shown_path(filename)}:{line}: {message}", file=err)
    return 1


def add_traceback_option(parser: argparse.ArgumentParser, commands: object) -> None:
    """Add ``--traceback`` to ``parser`` and to each of its subcommands (either place
    works: ``flowlib --traceback run ...`` or ``flowlib run ... --traceback``)."""
    text = "on an error, print the whole traceback instead of one line"
    parser.add_argument("--traceback", action="store_true", help=text)
    for sub in getattr(commands, "choices", {}).values():
        sub.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS, help=text)
