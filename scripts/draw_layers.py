"""Draw flowlib's layers with flowlib's own renderer: ``docs/architecture.svg``.

The units of ``scripts/import_graph.py`` become the nodes of a flowlib
[`DiGraph`][flowlib.graph.DiGraph], their imports its edges (transitively reduced: an
import implied by a chain of others is left out), and ``flowlib.render`` draws it.

Run ``python scripts/draw_layers.py`` after changing the layers; ``tests/test_layers.py``
checks the committed files are up to date.
"""

from __future__ import annotations

import sys
from pathlib import Path

import networkx as nx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from import_graph import LAYERS, ROOT, import_graph, layer_of, package_graph

from flowlib.graph import DiGraph, DiGraphEdge, DiGraphNode
from flowlib.render import to_dot, to_svg

DOT = ROOT / "docs" / "architecture.dot"
SVG = ROOT / "docs" / "architecture.svg"
TITLE = "flowlib's layers (an arrow: imports)"


def _is_package(root: Path, unit: str) -> bool:
    return (root / unit.replace(".", "/") / "__init__.py").is_file()


def layer_graph(root: Path = ROOT) -> DiGraph:
    """flowlib's units and their (transitively reduced) imports, as a flowlib graph."""
    units = package_graph(import_graph(root))
    reduced = nx.transitive_reduction(units)
    ordered = sorted(units, key=lambda unit: (-layer_of(unit), unit))
    # Packages are drawn as boxes (the "team" shape), single modules as ellipses.
    nodes = {
        unit: DiGraphNode(
            name=unit,
            edges=[DiGraphEdge(target=target) for target in sorted(reduced.successors(unit))],
            kind="team" if _is_package(root, unit) else "function",
        )
        for unit in ordered
    }
    return DiGraph(nodes=nodes, pattern="layers")


def main() -> None:
    graph = layer_graph()
    DOT.write_text(to_dot(graph, title=TITLE), encoding="utf-8")
    SVG.write_text(to_svg(graph, title=TITLE), encoding="utf-8")
    print(f"wrote {DOT.relative_to(ROOT)} and {SVG.relative_to(ROOT)} ({len(LAYERS)} layers)")


if __name__ == "__main__":
    main()
