"""Mermaid flowchart output.

Mermaid ids must be plain words (``end`` or a leading ``o``/``x`` after an arrow break
the parser), so nodes get ids from their position: ``n0``, ``n1``, and ``n2_0`` for the
first node of the team at ``n2``; start points are ``s`` and ``n2_s``. Names and labels
go in quoted text with Mermaid's ``#code;`` entities. A nested team is a ``subgraph``
with its own start point; edges into and out of the team link the subgraph itself
(Mermaid's layout misplaces clusters whose inner nodes are linked from outside). Style
lines carry no trailing ``;``: Mermaid reads a colour followed by one (``#333333;``) as
an entity.
"""

from __future__ import annotations

import json
import re
import unicodedata

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
    START,
    VISITED,
    format_steps,
)

__all__ = ["mermaid_text", "to_mermaid"]

_INDENT = "    "
# Characters that could end a quoted label or be read as markup; a ``#`` only when it
# would start an entity (Mermaid decodes ``#word;`` anywhere in the source).
# ``%`` too: Mermaid strips ``%%{...}%%`` directives and ``%%`` comments anywhere.
_ENTITIES = set('"&<>|`\\%')  # a backslash too: Mermaid reads ``\\n`` as a line break
_ENTITY_START = re.compile(r"#(?=\w+;)")
# Mermaid drops the last ``;`` of any line matching ``style.*:\S*#.*;`` (or classDef),
# which would break the last entity of a label: the first letter of these words is
# written as an entity, so no label line matches.
_STYLE_WORDS = re.compile(r"[sc](?=tyle|lassDef)")


def mermaid_text(text: str) -> str:
    """``text`` as the inside of a quoted Mermaid label, shown verbatim.

    Markup characters (and ``%``, which starts directives and comments) become
    ``#code;`` entities, line breaks ``<br/>``, other control characters spaces,
    unpaired surrogates U+FFFD.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    hashes = {match.start() for match in _ENTITY_START.finditer(text)}
    hashes.update(match.start() for match in _STYLE_WORDS.finditer(text))
    out: list[str] = []
    for position, char in enumerate(text):
        if char == "\n":
            out.append("<br/>")
        elif char in _ENTITIES or position in hashes or _is_unicode_space(char):
            # Unicode spaces too: the sanitizer Mermaid runs on labels turns a raw
            # no-break space (U+00A0) into the text "&nbsp;".
            out.append(f"#{ord(char)};")
        else:
            out.append(_plain(char))
    # Mermaid trims a label (JavaScript's trim) and cannot read an empty one: whitespace
    # at either end, and an empty text, are written as entities, which it keeps.
    for order in (range(len(out)), range(len(out) - 1, -1, -1)):
        for index in order:
            if not _trimmed(out[index]):
                break
            out[index] = f"#{ord(out[index])};"
    return "".join(out) or "#32;"


def _is_unicode_space(char: str) -> bool:
    """A space separator other than the ASCII space (U+00A0, U+2003, ...)."""
    return char != " " and unicodedata.category(char) in ("Zs", "Zl", "Zp")


def _plain(char: str) -> str:
    """A control character as a space, an unpaired surrogate (which cannot be written
    as UTF-8) as U+FFFD, anything else as itself."""
    code = ord(char)
    if char != "\n" and (code < 32 or 127 <= code < 160):
        return " "
    if 0xD800 <= code < 0xE000:
        return "\ufffd"
    return char


def _trimmed(char: str) -> bool:
    return len(char) == 1 and (char.isspace() or char == "\ufeff")


_YAML_BREAKS = frozenset({0x2028, 0x2029, 0xFEFF})


def _yaml_text(text: str) -> str:
    """``text`` as a YAML double-quoted scalar for the front matter, with ``%`` as
    ``\\x25`` (so no ``%%{...}%%`` directive appears in the file) and no raw control
    characters or surrogates."""
    text = "".join(map(_plain, text.replace("\r\n", "\n").replace("\r", "\n")))
    quoted = json.dumps(text, ensure_ascii=False).replace("%", "\\x25")
    # YAML 1.1 readers take NEL, LS and PS for line breaks: escape them (and C1, BOM).
    return "".join(
        f"\\u{ord(char):04x}" if 0x7F <= ord(char) < 0xA0 or ord(char) in _YAML_BREAKS else char
        for char in quoted
    )


def _label(lines: list[str]) -> str:
    return '"' + mermaid_text("\n".join(lines)) + '"'


def _id(node: SceneNode) -> str:
    return "n" + "_".join(str(position) for position in node.index)


def _start_id(outer: SceneNode | None) -> str:
    return "s" if outer is None else _id(outer) + "_s"


def _node_class(node: SceneNode) -> str:
    if node.status == "unvisited":
        return "unvisited"
    return node.kind if node.status == "plain" else f"{node.kind}_visited"


def _class_defs(used: set[str]) -> list[str]:
    defs: list[str] = []
    for kind, style in KIND_STYLES.items():
        if kind in used:
            defs.append(f"classDef {kind} fill:{style.fill},stroke:{style.line},color:#111111")
        if f"{kind}_visited" in used:
            defs.append(
                f"classDef {kind}_visited fill:{style.fill},stroke:{VISITED},"
                "stroke-width:2.5px,color:#111111"
            )
    if "unvisited" in used:
        defs.append(f"classDef unvisited fill:{GREY_FILL},stroke:{GREY},color:{GREY_TEXT}")
    if "start" in used:
        defs.append(f"classDef start fill:{START},stroke:{START}")
    return defs


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.links: list[str] = []
        self.link_styles: dict[str, list[int]] = {}
        self.classes: dict[str, list[str]] = {}
        self.cluster_styles: list[str] = []

    def add(self, depth: int, text: str) -> None:
        self.lines.append(_INDENT * depth + text)

    def link(self, text: str, style: str | None) -> None:
        if style is not None:
            self.link_styles.setdefault(style, []).append(len(self.links))
        self.links.append(text)

    def tag(self, node_id: str, name: str) -> None:
        self.classes.setdefault(name, []).append(node_id)

    def node(self, depth: int, node: SceneNode) -> None:
        if node.inner is not None:
            self.cluster(depth, node, node.inner)
            return
        style = KIND_STYLES[node.kind]
        label = _label(node.label_lines)
        self.add(depth, f"{_id(node)}{style.mermaid_open}{label}{style.mermaid_close}")
        self.tag(_id(node), _node_class(node))

    def cluster(self, depth: int, node: SceneNode, scene: Scene) -> None:
        # One line: Mermaid does not make room for a multi-line cluster title.
        parts = list(scene.title[:2]) or [node.name]
        if node.steps:
            parts[0] += "  " + format_steps(node.steps)
        self.add(depth, f"subgraph {_id(node)}[{_label([' — '.join(parts)])}]")
        self.add(depth + 1, "direction TB")
        self.body(depth + 1, scene, node)
        self.add(depth, "end")
        team = KIND_STYLES["team"]
        stroke, text, width = team.line, team.line, "1px"
        if node.status == "visited":
            stroke, width = VISITED, "2.5px"
        elif node.status == "unvisited":
            stroke, text = GREY, GREY_TEXT
        self.cluster_styles.append(
            f"style {_id(node)} fill:#fbf8ff,stroke:{stroke},stroke-width:{width},"
            f"stroke-dasharray:5 3,color:{text}"
        )

    def start(self, depth: int, scene: Scene, outer: SceneNode | None) -> None:
        if not scene.entries:
            return
        start = _start_id(outer)
        self.add(depth, f'{start}((" "))')
        self.tag(start, "start")
        for entry in scene.entries:
            grey = entry.status == "unvisited"
            self.link(f"{start} --> {_id(entry)}", "grey" if grey else "start")

    def edge(self, edge: SceneEdge) -> None:
        # A map edge (one instance per item) is a thick arrow.
        arrow = "==>" if edge.mapped else "-.->" if edge.conditional else "-->"
        lines = edge.label_lines
        label = f"|{_label(lines)}|" if lines else ""
        style: str | None = None
        if edge.status == "fired":
            style = "fired"
        elif edge.status == "unfired":
            style = "grey"
        elif edge.back:
            style = "back"
        self.link(f"{_id(edge.source)} {arrow}{label} {_id(edge.target)}", style)

    def body(self, depth: int, scene: Scene, outer: SceneNode | None) -> None:
        self.start(depth, scene, outer)
        for node in scene.nodes:
            self.node(depth, node)
        for edge in scene.edges:
            self.edge(edge)


_LINK_STYLES = {
    "start": f"stroke:{START}",
    "back": f"stroke:{BACK_EDGE},color:{BACK_EDGE}",
    "fired": f"stroke:{FIRED},stroke-width:2.5px,color:{FIRED}",
    "grey": f"stroke:{GREY},color:{GREY_TEXT}",
}


def to_mermaid(
    obj: DiGraph | SupportsGraph,
    *,
    trace: TraceArg = None,
    title: str | None = None,
) -> str:
    """Draw a graph or a team as a Mermaid flowchart.

    Same content and conventions as [`to_dot`][flowlib.render.to_dot]; the title goes in the front
    matter (its lines joined by `` — ``). The text is deterministic.

    Args:
        obj: A [`DiGraph`][flowlib.graph.DiGraph] or a team.
        trace: A run to overlay (see [`to_dot`][flowlib.render.to_dot]).
        title: The heading; defaults to the team's name and class.

    Returns:
        The Mermaid source, ending with a newline.

    Raises:
        TypeError: If ``obj`` is not drawable or ``trace`` has the wrong type.
        ValueError: If the trace was recorded on another graph.

    Examples:
        >>> from flowlib.graph import DiGraph, DiGraphEdge, DiGraphNode
        >>> graph = DiGraph(nodes={
        ...     "a": DiGraphNode(name="a", edges=[DiGraphEdge(target="b", condition="OK")]),
        ...     "b": DiGraphNode(name="b"),
        ... })
        >>> print(to_mermaid(graph))  # doctest: +ELLIPSIS
        flowchart TB
        ...
            n0 -.->|"'OK'"| n1
        ...
    """
    scene = build_scene(obj, trace=trace, title=title)
    writer = _Writer()
    writer.body(1, scene, None)
    out: list[str] = []
    if scene.title:
        out += ["---", "title: " + _yaml_text(" — ".join(scene.title)), "---"]
    out.append("flowchart TB")
    out.extend(writer.lines)
    out.extend(_INDENT + link for link in writer.links)
    used = set(writer.classes)
    out.extend(_INDENT + line for line in _class_defs(used))
    for name, ids in writer.classes.items():
        out.append(f"{_INDENT}class {','.join(ids)} {name}")
    out.extend(_INDENT + line for line in writer.cluster_styles)
    for name, indices in writer.link_styles.items():
        out.append(f"{_INDENT}linkStyle {','.join(map(str, indices))} {_LINK_STYLES[name]}")
    return "\n".join(out) + "\n"
