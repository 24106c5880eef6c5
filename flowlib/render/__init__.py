"""Drawing: any graph IR, and so any team, as Graphviz DOT, SVG, PNG or Mermaid.

The drawing shows entry nodes (an arrow from a start point), node kinds (agent box,
function ellipse, router hexagon, nested team as a cluster with its own graph),
conditional edges (dashed, labelled), activation groups and joins (``[all]``,
``[any: loop]``), loops (back edges in amber) and the team pattern in the title. Given a
finished run it overlays the path taken: visited nodes and fired edges in blue with their
step numbers, the rest grey. DOT and Mermaid text are deterministic.

Examples:
    >>> from flowlib.teams import DiGraphBuilder
    >>> def draft(messages): return "a draft"
    >>> def review(messages): return "APPROVE"
    >>> builder = DiGraphBuilder().add_node(draft).add_node(review)
    >>> graph = builder.add_edge("draft", "review").build()
    >>> print(to_mermaid(graph))
    flowchart TB
        s((" "))
        n0(["draft"])
        n1(["review"])
        s --> n0
        n0 --> n1
        classDef function fill:#e9f5e9,stroke:#3f7f3f,color:#111111
        classDef start fill:#333333,stroke:#333333
        class s start
        class n0,n1 function
        linkStyle 0 stroke:#333333
    <BLANKLINE>
"""

from ._dot import to_dot
from ._errors import GraphvizNotFoundError, RenderError
from ._mermaid import to_mermaid
from ._output import render, to_svg
from ._page import (
    PageMessage,
    PageStep,
    run_page,
    steps_from_records,
    steps_from_run,
    trace_from_steps,
    write_run_page,
)
from ._page_parts import PageCheckpoint, PageDiffLine, PageFork, PageRequest
from ._scene import SupportsGraph
from ._stored import (
    StoredRun,
    fork_diff,
    read_stored_run,
    write_stored_run_page,
)

__all__ = [
    "GraphvizNotFoundError",
    "PageCheckpoint",
    "PageDiffLine",
    "PageFork",
    "PageMessage",
    "PageRequest",
    "PageStep",
    "RenderError",
    "StoredRun",
    "SupportsGraph",
    "fork_diff",
    "read_stored_run",
    "render",
    "run_page",
    "steps_from_records",
    "steps_from_run",
    "to_dot",
    "to_mermaid",
    "to_svg",
    "trace_from_steps",
    "write_run_page",
    "write_stored_run_page",
]
