"""The visual conventions shared by the DOT and Mermaid output: shapes, colours, wording.

One place so that both formats draw the same things the same way (docs/render.md shows
the legend):

- node kinds: agent = rounded box, function = ellipse (Mermaid: stadium), router =
  hexagon, team = a cluster holding the team's own graph (box3d / subroutine when the
  nested graph is unknown);
- entry nodes: an arrow from a small filled start point;
- conditional edges: dashed, labelled with the condition (strings quoted, callables by
  name, ``edge.label`` instead when given);
- activation groups: a bracketed line under the edge label, ``[all]`` / ``[any: name]``
  for joins (a group with two or more incoming edges), ``[name]`` for a one-edge group
  the user named, ``[loop]`` for the default loop-back group when the target also has
  another group;
- loops: back edges (found by a depth-first walk from the entry nodes) in amber and not
  used for ranking, so the forward flow reads top to bottom;
- a run overlay: visited nodes with a thick blue outline and their step numbers, fired
  edges blue, thick and labelled ``#step`` (1-based), everything else grey.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..graph import NodeKind

__all__ = [
    "BACK_EDGE",
    "FIRED",
    "GREY",
    "GREY_FILL",
    "GREY_TEXT",
    "KIND_STYLES",
    "MAX_STEPS_SHOWN",
    "PLAIN_EDGE",
    "START",
    "VISITED",
    "EdgeStatus",
    "KindStyle",
    "NodeStatus",
    "format_steps",
]

NodeStatus = Literal["plain", "visited", "unvisited"]
"""``plain`` without a run overlay; otherwise whether the node ran."""

EdgeStatus = Literal["plain", "fired", "unfired"]
"""``plain`` without a run overlay; otherwise whether the edge fired."""


@dataclass(frozen=True)
class KindStyle:
    """How one node kind is drawn."""

    dot_shape: str
    dot_style: str
    mermaid_open: str
    mermaid_close: str
    fill: str
    line: str


KIND_STYLES: dict[NodeKind, KindStyle] = {
    "agent": KindStyle("box", "rounded,filled", "(", ")", "#e8f0fe", "#3b5b92"),
    "function": KindStyle("ellipse", "filled", "([", "])", "#e9f5e9", "#3f7f3f"),
    "router": KindStyle("hexagon", "filled", "{{", "}}", "#fff3dc", "#a86a12"),
    "team": KindStyle("box3d", "filled", "[[", "]]", "#f1e8fd", "#6d3fc0"),
}

START = "#333333"
PLAIN_EDGE = "#555555"
BACK_EDGE = "#b45309"
VISITED = "#1d4ed8"
FIRED = "#1d4ed8"
GREY = "#c4c7cc"
GREY_TEXT = "#9aa0a6"
GREY_FILL = "#f6f6f7"

MAX_STEPS_SHOWN = 8


def format_steps(steps: Sequence[str]) -> str:
    """``#1, #4, #7``; long lists are cut after ``MAX_STEPS_SHOWN`` numbers."""
    shown = ", ".join(f"#{step}" for step in steps[:MAX_STEPS_SHOWN])
    extra = len(steps) - MAX_STEPS_SHOWN
    return shown + (f", … (+{extra})" if extra > 0 else "")
