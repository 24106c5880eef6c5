"""flowlib's import graph, built from the source with ``ast`` and networkx.

Used by ``tests/test_layers.py`` (the layer order and the no-cycle rule) and by
``scripts/draw_layers.py`` (the drawing in ``docs/architecture.md``).

An edge ``a -> b`` means module ``a`` imports module ``b`` when ``a`` is imported or when
one of its functions runs. Imports under ``if TYPE_CHECKING:`` are not edges: they never
run. Function-local (deferred) imports *are* edges: they still tie the modules together at
run time, so they must respect the layers too.

The units of the layers are flowlib's packages and top-level modules, plus the few modules
declared in ``SUBUNITS`` that sit in another layer than their package (a package's
``__init__`` may re-export them: a re-export is the package's public face, not a
dependency of its code).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import networkx as nx

__all__ = [
    "LAYERS",
    "SUBUNITS",
    "import_graph",
    "is_reexport",
    "layer_of",
    "package_graph",
    "package_of",
]

ROOT = Path(__file__).resolve().parent.parent

LAYERS: tuple[tuple[str, ...], ...] = (
    ("flowlib._english",),
    (
        "flowlib.errors",
        "flowlib._cancellation",
        "flowlib.logging",
        "flowlib._lifecycle",
        "flowlib._named",
    ),
    ("flowlib", "flowlib.component", "flowlib.models.image", "flowlib._schema_model"),
    ("flowlib._telemetry",),
    ("flowlib.code_executors", "flowlib.checkpoint", "flowlib.tools"),
    ("flowlib.models",),
    ("flowlib.model_context",),
    ("flowlib.memory",),
    ("flowlib.messages",),
    ("flowlib.base",),
    ("flowlib.conditions", "flowlib.agents", "flowlib.tools._agent_tool"),
    ("flowlib.graph",),
    ("flowlib.teams",),
    ("flowlib.conversation", "flowlib.render", "flowlib.ui", "flowlib.testing", "flowlib.batch"),
    ("flowlib.distributed",),
    ("flowlib.cli.demo",),
    ("flowlib.studio",),
    ("flowlib.cli",),
    ("flowlib.__main__",),
)
"""flowlib's units from the bottom layer up. A unit may import units of the layers below
it, never one of its own layer or above."""

SUBUNITS: dict[str, str] = {
    "flowlib.models.image": "an image value type, used by tools' results and by models",
    "flowlib.tools._agent_tool": "AgentTool and TeamTool run agents and teams, so they sit "
    "above them, though flowlib.tools exports them (AutoGen's autogen_agentchat.tools)",
    "flowlib.cli.demo": "the flow `flowlib demo` runs, which the studio opens too, so it sits "
    "below the studio that the command line starts",
}
"""Modules that are their own unit, in another layer than their package, and why."""


def package_of(module: str) -> str:
    """The unit of ``module``: ``flowlib.graph._model`` -> ``flowlib.graph``, a module of
    ``SUBUNITS`` -> itself."""
    for unit in SUBUNITS:
        if module == unit or module.startswith(unit + "."):
            return unit
    parts = module.split(".")
    return ".".join(parts[:2])


def is_reexport(source: str, target: str) -> bool:
    """Whether ``source`` is a package ``__init__`` importing one of its own modules."""
    return target.startswith(source + ".") and source != "flowlib"


def layer_of(package: str) -> int:
    """The index of ``package``'s layer in [`LAYERS`][]."""
    for index, layer in enumerate(LAYERS):
        if package in layer:
            return index
    raise KeyError(f"`{package}` is in no layer; add it to LAYERS in scripts/import_graph.py")


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree`` except those under ``if TYPE_CHECKING:``."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def import_graph(root: Path | None = None) -> nx.DiGraph:
    """The module import graph of the ``flowlib`` package under ``root`` (the repository).

    Each edge carries ``lineno`` (the first import of the target).
    """
    package_dir = (root or ROOT) / "flowlib"
    # The module of a package __init__ is the package's name.
    modules = {_module_name(path, package_dir): path for path in package_dir.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    base = parts[: len(parts) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                candidates = [target] + [f"{target}.{alias.name}" for alias in node.names]
            else:
                candidates = [alias.name for alias in node.names]
            for candidate in candidates:
                known = candidate in modules and candidate != module
                if known and not graph.has_edge(module, candidate):
                    graph.add_edge(module, candidate, lineno=node.lineno)
    return graph


def package_graph(modules: nx.DiGraph) -> nx.DiGraph:
    """The import graph between the top-level units (packages and top-level modules)."""
    graph = nx.DiGraph()
    for module in modules:
        graph.add_node(package_of(module))
    for source, target in modules.edges:
        a, b = package_of(source), package_of(target)
        if a != b and not is_reexport(source, target):
            graph.add_edge(a, b)
    return graph
