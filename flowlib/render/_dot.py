"""Graphviz DOT output.

Node ids are the node's path of names joined by ``/`` (``writer``, ``inner/writer``),
start points are ``@start`` (``inner/@start``). Names are arbitrary text (a model or a
user may supply them), so each name is percent-escaped in ids where it could collide or
be changed on the way (see ``dot_id_part``): ``%``, ``/``, a leading ``@``, control
characters, backslashes and unpaired surrogates. A plain name is its own id.
A nested team is a ``cluster_<path>`` subgraph; edges into it end at
its border (``lhead``) and come from its start point, edges out of it leave its border
(``ltail``) from its first leaf (or last node).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..graph import DiGraph
from ._path import TraceArg
from ._scene import Scene, SceneEdge, SceneNode, SupportsGraph, build_scene
from ._style import (
    BACK_EDGE,
    FIRED,
    GREY,
    GREY_FILL,
    GREY_TEXT,
    KIND_STYLES,
    PLAIN_EDGE,
    START,
    VISITED,
    format_steps,
)

__all__ = ["dot_quote", "to_dot"]

_INDENT = "    "
_FONT = "Helvetica"

Attrs = Sequence[tuple[str, str]]


def dot_quote(text: str) -> str:
    """``text`` as a DOT quoted string that Graphviz shows verbatim.

    Backslashes are doubled (so ``\\N`` and friends stay literal), quotes escaped, ``&``
    written as ``&amp;`` (Graphviz decodes entities), line breaks become centred line
    breaks, other control characters spaces, unpaired surrogates U+FFFD.
    """
    out: list[str] = []
    for char in text.replace("\r\n", "\n").replace("\r", "\n"):
        if char == "\\":
            out.append("\\\\")
        elif char == '"':
            out.append('\\"')
        elif char == "&":
            out.append("&amp;")  # Graphviz decodes entities (``&lt;``) in labels
        elif char == "\n":
            out.append("\\n")
        elif ord(char) < 32 or 127 <= ord(char) < 160:
            out.append(" ")
        elif 0xD800 <= ord(char) < 0xE000:
            out.append("\ufffd")  # an unpaired surrogate cannot be written as UTF-8
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def dot_id_part(name: str) -> str:
    """One node name as a segment of a DOT id: injective, and unchanged by ``dot_quote``.

    ``/`` separates path segments and ``@start`` names start points, so both are escaped
    in names; control characters and backslashes would be changed by quoting (two names
    differing only there would merge), so they are escaped too, as ``%XX``.
    """
    out: list[str] = []
    for position, char in enumerate(name):
        code = ord(char)
        if (
            char in "%/\\"
            or (char == "@" and position == 0)
            or code < 32
            or 127 <= code < 160
            or 0xD800 <= code < 0xE000
        ):
            out.append(f"%{code:02X}")
        else:
            out.append(char)
    return "".join(out)


def _attrs(attrs: Attrs) -> str:
    return "[" + ", ".join(f"{key}={value}" for key, value in attrs) + "]"


def _node_id(node: SceneNode) -> str:
    return "/".join(map(dot_id_part, node.path))


def _start_id(outer: tuple[str, ...]) -> str:
    return "/".join((*map(dot_id_part, outer), "@start"))


def _cluster_id(node: SceneNode) -> str:
    return "cluster_" + _node_id(node)


def _head(node: SceneNode) -> tuple[str, str | None]:
    """Where an edge into ``node`` ends, and the cluster it is clipped at."""
    if node.inner is None:
        return _node_id(node), None
    if node.inner.entries:
        return _start_id(node.path), _cluster_id(node)
    head, _ = _head(node.inner.nodes[0])
    return head, _cluster_id(node)


def _tail(node: SceneNode) -> tuple[str, str | None]:
    """Where an edge out of ``node`` starts, and the cluster it is clipped at."""
    if node.inner is None:
        return _node_id(node), None
    tail, _ = _tail(node.inner.exit)
    return tail, _cluster_id(node)


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, depth: int, text: str) -> None:
        self.lines.append(_INDENT * depth + text)

    def node(self, depth: int, node: SceneNode) -> None:
        if node.inner is not None:
            self.cluster(depth, node, node.inner)
            return
        style = KIND_STYLES[node.kind]
        attrs: list[tuple[str, str]] = [
            ("label", dot_quote("\n".join(node.label_lines))),
            ("shape", style.dot_shape),
            ("style", dot_quote(style.dot_style)),
        ]
        if node.status == "unvisited":
            attrs += [
                ("color", dot_quote(GREY)),
                ("fillcolor", dot_quote(GREY_FILL)),
                ("fontcolor", dot_quote(GREY_TEXT)),
            ]
        else:
            color = VISITED if node.status == "visited" else style.line
            attrs += [("color", dot_quote(color)), ("fillcolor", dot_quote(style.fill))]
            if node.status == "visited":
                attrs.append(("penwidth", "2.2"))
        self.add(depth, f"{dot_quote(_node_id(node))} {_attrs(attrs)};")

    def cluster(self, depth: int, node: SceneNode, scene: Scene) -> None:
        style = KIND_STYLES["team"]
        lines = list(scene.title) or [node.name]
        if node.steps:
            lines[0] += "  " + format_steps(node.steps)
        color, font, width = style.line, style.line, "1.2"
        if node.status == "visited":
            color, width = VISITED, "2.2"
        elif node.status == "unvisited":
            color, font = GREY, GREY_TEXT
        self.add(depth, f"subgraph {dot_quote(_cluster_id(node))} {{")
        attrs = [
            ("label", dot_quote("\n".join(lines))),
            ("style", dot_quote("rounded,dashed")),
            ("color", dot_quote(color)),
            ("fontcolor", dot_quote(font)),
            ("penwidth", width),
            ("fontsize", "10"),
        ]
        self.add(depth + 1, f"graph {_attrs(attrs)};")
        self.body(depth + 1, scene, node.path)
        self.add(depth, "}")

    def start_edges(self, depth: int, scene: Scene, outer: tuple[str, ...]) -> None:
        if not scene.entries:
            return
        start = _start_id(outer)
        self.add(
            depth,
            f'{dot_quote(start)} [shape=point, width=0.12, label="", color={dot_quote(START)}];',
        )
        for entry in scene.entries:
            head, lhead = _head(entry)
            attrs: list[tuple[str, str]] = [("color", dot_quote(START))]
            if entry.status == "unvisited":
                attrs = [("color", dot_quote(GREY))]
            if lhead is not None:
                attrs.append(("lhead", dot_quote(lhead)))
            self.add(depth, f"{dot_quote(start)} -> {dot_quote(head)} {_attrs(attrs)};")

    def edge(self, depth: int, edge: SceneEdge) -> None:
        tail, ltail = _tail(edge.source)
        head, lhead = _head(edge.target)
        if edge.source is edge.target:  # a team's self-loop stays inside its cluster
            ltail = lhead = None
        attrs: list[tuple[str, str]] = []
        lines = edge.label_lines
        if lines:
            attrs.append(("label", dot_quote("\n".join(lines))))
        if edge.mapped:  # one instance per item: a bold edge with a crow's foot
            attrs.append(("style", dot_quote("dashed,bold") if edge.conditional else "bold"))
            attrs.append(("arrowhead", "crow"))
        elif edge.conditional:
            attrs.append(("style", "dashed"))
        if edge.back:
            attrs.append(("constraint", "false"))
        if edge.status == "fired":
            attrs += [
                ("color", dot_quote(FIRED)),
                ("fontcolor", dot_quote(FIRED)),
                ("penwidth", "2"),
            ]
        elif edge.status == "unfired":
            attrs += [("color", dot_quote(GREY)), ("fontcolor", dot_quote(GREY_TEXT))]
        elif edge.back:
            attrs += [("color", dot_quote(BACK_EDGE)), ("fontcolor", dot_quote(BACK_EDGE))]
        if ltail is not None:
            attrs.append(("ltail", dot_quote(ltail)))
        if lhead is not None:
            attrs.append(("lhead", dot_quote(lhead)))
        suffix = f" {_attrs(attrs)}" if attrs else ""
        self.add(depth, f"{dot_quote(tail)} -> {dot_quote(head)}{suffix};")

    def body(self, depth: int, scene: Scene, outer: tuple[str, ...]) -> None:
        for node in scene.nodes:
            self.node(depth, node)
        self.start_edges(depth, scene, outer)
        for edge in scene.edges:
            self.edge(depth, edge)


def to_dot(
    obj: DiGraph | SupportsGraph,
    *,
    trace: TraceArg = None,
    title: str | None = None,
) -> str:
    """Draw a graph or a team as Graphviz DOT text.

    The text is deterministic (graph insertion order, no memory addresses), so it can be
    compared exactly; feed it to ``dot -Tsvg`` or use [`to_svg`][flowlib.render.to_svg].

    Args:
        obj: A [`DiGraph`][flowlib.graph.DiGraph] or a team (anything with ``.graph``);
            nested teams are drawn as clusters holding their own graph.
        trace: A run to overlay: a [`RunTrace`][flowlib.graph.RunTrace], a
            [`TaskResult`][flowlib.base.TaskResult] (the path is rebuilt from its messages) or
            ``True`` for the team's own last run (nested teams with their own last run).
        title: The heading; defaults to the team's name and class (none for a bare graph).
            The team pattern and the run summary are added below it.

    Returns:
        The DOT source, ending with a newline.

    Raises:
        TypeError: If ``obj`` is not drawable or ``trace`` has the wrong type.
        ValueError: If the trace was recorded on another graph.

    Examples:
        >>> from flowlib.graph import DiGraph, DiGraphEdge, DiGraphNode
        >>> graph = DiGraph(nodes={
        ...     "a": DiGraphNode(name="a", edges=[DiGraphEdge(target="b", condition="OK")]),
        ...     "b": DiGraphNode(name="b"),
        ... })
        >>> print(to_dot(graph))  # doctest: +ELLIPSIS
        digraph flowlib {
        ...
            "a" -> "b" [label="'OK'", style=dashed];
        }
        <BLANKLINE>
    """
    scene = build_scene(obj, trace=trace, title=title)
    writer = _Writer()
    writer.add(0, "digraph flowlib {")
    graph_attrs: list[tuple[str, str]] = [
        ("compound", "true"),
        ("rankdir", "TB"),
        ("fontname", dot_quote(_FONT)),
        ("fontsize", "12"),
        ("labelloc", "t"),
    ]
    if scene.title:
        graph_attrs.append(("label", dot_quote("\n".join(scene.title))))
    writer.add(1, f"graph {_attrs(graph_attrs)};")
    writer.add(1, f'node [fontname={dot_quote(_FONT)}, fontsize=11, margin="0.15,0.06"];')
    writer.add(
        1,
        f"edge [fontname={dot_quote(_FONT)}, fontsize=9, arrowsize=0.7, "
        f"color={dot_quote(PLAIN_EDGE)}];",
    )
    writer.body(1, scene, ())
    writer.add(0, "}")
    return "\n".join(writer.lines) + "\n"
