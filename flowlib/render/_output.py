"""Images through Graphviz (SVG, PNG) and [`render`][flowlib.render.render], which writes any format
to a file.

The ``graphviz`` package and the ``dot`` program are only needed here, and are looked up
when an image is asked for, with an error that says how to install them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from ..errors import InvalidValueError
from ..graph import DiGraph
from ._dot import to_dot
from ._errors import INSTALL_HINT, GraphvizNotFoundError, RenderError
from ._mermaid import to_mermaid
from ._path import TraceArg
from ._scene import SupportsGraph

__all__ = ["FORMATS", "Format", "render", "to_svg"]

Format = Literal["svg", "png", "dot", "mermaid"]

FORMATS: dict[str, Format] = {
    "svg": "svg",
    "png": "png",
    "dot": "dot",
    "gv": "dot",
    "mmd": "mermaid",
    "mermaid": "mermaid",
}
"""Accepted ``format=`` values and file suffixes, and the format each means."""


def _graphviz() -> Any:
    try:
        import graphviz  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise GraphvizNotFoundError(
            "Drawing images needs the `graphviz` Python package: `pip install graphviz`. "
            + INSTALL_HINT
        ) from exc
    return graphviz


# Graphviz's scanner refuses a quoted string longer than this.
_GRAPHVIZ_MAX_STRING = 16_384
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def _pipe(dot_source: str, image: Literal["svg", "png"]) -> bytes:
    """Run ``dot -T<image>`` on ``dot_source``.

    Raises:
        GraphvizNotFoundError: If the ``dot`` program is not on PATH.
        RenderError: If ``dot`` fails.
    """
    graphviz = _graphviz()
    longest = max((len(m.group()) - 2 for m in _QUOTED.finditer(dot_source)), default=0)
    if longest > _GRAPHVIZ_MAX_STRING:
        # dot stops reading at such a string, and writing the rest of a large input to
        # it would fail with a BrokenPipeError (issue 21.6).
        raise RenderError(
            f"A node name, label or title of {longest:,} characters cannot be drawn: "
            f"Graphviz accepts at most {_GRAPHVIZ_MAX_STRING:,} characters in one. Shorten "
            "it (to_dot() and to_mermaid() still work)."
        )
    try:
        data = graphviz.Source(dot_source).pipe(format=image, quiet=True)
    except BrokenPipeError as exc:
        raise RenderError(
            f"Graphviz `dot -T{image}` stopped reading its input (a string too long for "
            "it, or it crashed). Check the DOT text from `to_dot()`."
        ) from exc
    except graphviz.ExecutableNotFound as exc:
        raise GraphvizNotFoundError(
            f"Graphviz's `dot` program was not found on PATH, and drawing {image.upper()} "
            f"needs it. {INSTALL_HINT}"
        ) from exc
    except graphviz.CalledProcessError as exc:
        detail = exc.stderr.decode(errors="replace").strip() if exc.stderr else ""
        raise RenderError(
            f"Graphviz `dot -T{image}` failed (exit code {exc.returncode})"
            + (f": {detail}" if detail else "")
            + ". Check the DOT text from `to_dot()`, or report it as a flowlib bug."
        ) from exc
    if not isinstance(data, bytes):  # pragma: no cover - pipe() without encoding
        raise RenderError(f"Graphviz returned {type(data).__name__} instead of bytes.")
    return data


def to_svg(
    obj: DiGraph | SupportsGraph,
    *,
    trace: TraceArg = None,
    title: str | None = None,
) -> str:
    """Draw a graph or a team as SVG, laid out by Graphviz ``dot``.

    Args:
        obj: A [`DiGraph`][flowlib.graph.DiGraph] or a team.
        trace: A run to overlay (see [`to_dot`][flowlib.render.to_dot]).
        title: The heading; defaults to the team's name and class.

    Returns:
        The SVG document.

    Raises:
        GraphvizNotFoundError: If Graphviz is not installed (the message says how to).
        RenderError: If Graphviz fails.
    """
    return _pipe(to_dot(obj, trace=trace, title=title), "svg").decode("utf-8")


def _format_of(path: Path, format: str | None) -> Format:
    key = (format if format is not None else path.suffix.removeprefix(".")).lower()
    found = FORMATS.get(key)
    if found is None:
        known = ", ".join(sorted(FORMATS))
        where = f"format={format!r}" if format is not None else f"the suffix of `{path}`"
        raise InvalidValueError(
            f"Cannot tell the drawing format from {where}; use one of {known} "
            "(e.g. `render(team, 'flow.svg')` or `format='mermaid'`)."
        )
    return found


def render(
    obj: DiGraph | SupportsGraph,
    path: str | os.PathLike[str],
    *,
    format: str | None = None,
    trace: TraceArg = None,
    title: str | None = None,
) -> Path:
    """Draw a graph or a team into a file.

    Args:
        obj: A [`DiGraph`][flowlib.graph.DiGraph] or a team.
        path: The file to write (parent folders must exist).
        format: ``svg``, ``png``, ``dot`` (or ``gv``), ``mermaid`` (or ``mmd``); by
            default taken from the file's suffix.
        trace: A run to overlay (see [`to_dot`][flowlib.render.to_dot]).
        title: The heading; defaults to the team's name and class.

    Returns:
        The path written.

    Raises:
        ValueError: If the format is unknown.
        GraphvizNotFoundError: For SVG or PNG when Graphviz is not installed.
        RenderError: If Graphviz fails.

    Examples:
        >>> import tempfile, pathlib
        >>> from flowlib.graph import DiGraph, DiGraphNode
        >>> graph = DiGraph(nodes={"a": DiGraphNode(name="a")})
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> render(graph, folder / "flow.mmd").read_text().splitlines()[0]
        'flowchart TB'
    """
    target = Path(path)
    kind = _format_of(target, format)
    if kind == "dot":
        target.write_text(to_dot(obj, trace=trace, title=title), encoding="utf-8")
    elif kind == "mermaid":
        target.write_text(to_mermaid(obj, trace=trace, title=title), encoding="utf-8")
    else:
        target.write_bytes(_pipe(to_dot(obj, trace=trace, title=title), kind))
    return target
