"""flowlib's structure: layers without cycles, and no reaching into other objects' privates.

The import graph is built from the source with ``ast`` and networkx
(``scripts/import_graph.py``, which also draws ``docs/architecture.md``'s picture).
Decisions:

* imports under ``if TYPE_CHECKING:`` are not edges (they never run);
* function-local (deferred) imports are edges: they tie modules together at run time as
  much as top-level ones, so they obey the layers too;
* a package ``__init__`` re-exporting its own modules is not a layering edge.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts/import_graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("import_graph", module)
    spec.loader.exec_module(module)
    return module


import_graph = _load_script()


@pytest.fixture(scope="module")
def modules() -> nx.DiGraph:
    return import_graph.import_graph(ROOT)


_TREES: dict[Path, tuple[str, ast.Module]] = {}


def _tree(path: Path) -> ast.Module:
    """``ast.parse`` of ``path``'s text, parsed once per text: three checks below walk
    every module of flowlib (a parse of them all is ~1.5 s of CPU; a walk reads the tree
    and changes nothing)."""
    text = path.read_text(encoding="utf-8")
    kept = _TREES.get(path)
    if kept is None or kept[0] != text:
        kept = _TREES[path] = (text, ast.parse(text))
    return kept[1]


def test_every_unit_has_a_layer(modules: nx.DiGraph) -> None:
    units = {import_graph.package_of(module) for module in modules}
    declared = {unit for layer in import_graph.LAYERS for unit in layer}
    assert units - declared == set(), "add the new package to LAYERS in scripts/import_graph.py"
    assert declared - units == set(), "LAYERS names a unit that does not exist"


def test_no_unit_imports_its_own_layer_or_above(modules: nx.DiGraph) -> None:
    upward = []
    for source, target, data in modules.edges(data=True):
        a, b = import_graph.package_of(source), import_graph.package_of(target)
        if a == b or import_graph.is_reexport(source, target):
            continue
        if import_graph.layer_of(b) >= import_graph.layer_of(a):
            upward.append(f"{source}:{data['lineno']} imports {target} ({a} -> {b})")
    assert upward == []


def test_no_import_cycle_between_modules(modules: nx.DiGraph) -> None:
    cycles = [sorted(c) for c in nx.strongly_connected_components(modules) if len(c) > 1]
    assert cycles == []


def _every_import(root: Path) -> nx.DiGraph:
    """Module imports counting every statement, ``if TYPE_CHECKING:`` ones included: type
    annotations must not tie modules into a cycle either."""
    package = root / "flowlib"
    modules = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    graph: nx.DiGraph = nx.DiGraph()
    for module, path in modules.items():
        here = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom):
                base = here.split(".")[: len(here.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
                if not node.level:
                    target = node.module or ""
                names = [target] + [f"{target}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            graph.add_edges_from((module, name) for name in names if name in modules)
    graph.remove_edges_from(nx.selfloop_edges(graph))
    return graph


def test_no_import_cycle_even_through_type_only_imports() -> None:
    graph = _every_import(ROOT)
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert cycles == []


def test_the_strict_cycle_check_sees_a_type_only_cycle(tmp_path: Path) -> None:
    package = tmp_path / "flowlib"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import X\n"
    )
    cycles = [c for c in nx.strongly_connected_components(_every_import(tmp_path)) if len(c) > 1]
    assert cycles == [{"flowlib.a", "flowlib.b"}]


def test_the_layer_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The checks can fail: a bottom-layer module importing a team is caught."""
    package = tmp_path / "flowlib"
    (package / "component").mkdir(parents=True)
    (package / "teams").mkdir()
    (package / "__init__.py").write_text("")
    (package / "component" / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..teams import X\n"
        "def f():\n    from ..teams import Y\n"
    )
    (package / "teams" / "__init__.py").write_text("from ..component import Z\n")
    graph = import_graph.import_graph(tmp_path)
    assert set(graph.edges) == {
        ("flowlib.component", "flowlib.teams"),
        ("flowlib.teams", "flowlib.component"),
    }
    assert not nx.is_directed_acyclic_graph(graph)


# --- private modules -------------------------------------------------------------------

PRIVATE_IMPORTS_ALLOWED: dict[str, str] = {}
"""``"importer -> private module"`` pairs still allowed, and why. Only ever shrinks: a package
gives the names others need an internal public home (its ``internal`` module) instead."""


def private_imports(root: Path) -> list[str]:
    """``"importer -> target"`` for every import (any statement, ``if TYPE_CHECKING:`` ones
    included) of a module of flowlib that reaches into another package's private module: a
    module whose path has an underscored part below a package the importer is not in
    (``flowlib.agents._x`` importing ``flowlib.base._arguments``). flowlib's own top-level
    private modules (``flowlib._english``) belong to every package."""
    package = root / "flowlib"
    found = []
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        module = ".".join(parts)
        here = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom):
                base = here.split(".")[: len(here.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
                targets = [target if node.level else node.module or ""]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for target in targets:
                names = target.split(".")
                private = [i for i, name in enumerate(names) if name.startswith("_")]
                if names[0] != "flowlib" or not private or private[0] < 2:
                    continue
                owner = names[: private[0]]
                if module.split(".")[: len(owner)] != owner:
                    found.append(f"{module} -> {target}")
    return found


def test_no_module_imports_another_packages_private_module() -> None:
    found = set(private_imports(ROOT))
    assert found - set(PRIVATE_IMPORTS_ALLOWED) == set(), (
        "import the name from the package's `internal` module (add it there), not from its "
        "private module"
    )
    assert set(PRIVATE_IMPORTS_ALLOWED) - found == set(), "drop allow-list entries no longer needed"


def test_the_private_module_check_sees_a_reach(tmp_path: Path) -> None:
    package = tmp_path / "flowlib"
    for sub in ("base", "agents", "agents/deep"):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "_english.py").write_text("")
    (package / "base" / "_arguments.py").write_text("")
    (package / "base" / "internal.py").write_text("from ._arguments import x\n")
    (package / "agents" / "_agent.py").write_text(
        "from .._english import a\nfrom ..base.internal import x\nfrom ..base._arguments import y\n"
    )
    (package / "agents" / "deep" / "_x.py").write_text(
        "from .._agent import z\nimport flowlib.base._arguments\n"
    )
    assert private_imports(tmp_path) == [
        "flowlib.agents._agent -> flowlib.base._arguments",
        "flowlib.agents.deep._x -> flowlib.base._arguments",
    ]


# --- private attributes ----------------------------------------------------------------

PROTOCOL_NAMES = {"_to_config", "_from_config"}
"""AutoGen's component protocol: underscored by AutoGen's design, called by the codec."""

MODULE_OBJECTS = {"sys"}
"""Modules whose documented API has underscored names (``sys._getframe``)."""

ALLOWED: dict[tuple[str, str], str] = {
    ("flowlib.models._openai_base", "_custom_headers"): (
        "the openai SDK has no public accessor for the caller's headers"
    ),
    ("flowlib.models._openai", "_custom_headers"): (
        "a client loaded from a config sets the headers the SDK took from the environment"
    ),
    (
        "flowlib.models._azure",
        "_azure_ad_token_provider _azure_endpoint _api_version _azure_deployment",
    ): "the openai SDK has no public accessor for the caller's Azure settings",
    ("flowlib.models._providers", "_custom_headers"): (
        "a client of another provider's endpoint drops the headers the openai SDK took from "
        "OPENAI_CUSTOM_HEADERS (it has no public accessor or option)"
    ),
    ("flowlib.models._openai", "_client"): (
        "a client loaded from a config for another endpoint drops the organization and project "
        "the SDK took from the environment (it has no option not to take them)"
    ),
    (
        "flowlib.agents._assistant_agent",
        "_rollback_point _roll_back _messages_at",
    ): "the agent's all-or-nothing turn and its model context's rollback (one protocol)",
    (
        "flowlib.conversation._run",
        "_add_pending _take_pending _close",
    ): "a turn feeds its conversation's MemoryStream/RunStream; users only read them",
    (
        "flowlib.conversation._stream",
        "_append _events _done _wait",
    ): "RunStream reads and feeds the MemoryStream it views",
    ("flowlib.conversation._turn", "_publish"): "the turn publishes on its MemoryStream",
    ("flowlib.tools.mcp._adapter", "_schema"): "the MCP adapter reads its workbench's schema",
    (
        "flowlib._telemetry",
        "_TRACER_PROVIDER",
    ): "the OpenTelemetry API's global provider: a 0.06 us off-path check instead of ~2 us",
    (
        "flowlib.testing._crash_worker",
        "_exit",
    ): "os._exit: a forked crash-check run ends without its server's exit handlers",
}


def _private_reads(path: Path) -> list[tuple[int, str, str]]:
    """``(line, attribute, code)`` of every ``obj._x`` (and ``getattr(obj, "_x")``) whose
    ``obj`` is not ``self``, ``cls`` or ``super()``."""
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Attribute):
            attribute, owner = node.attr, node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            attribute, owner = node.args[1].value, node.args[0]
        else:
            continue
        if not attribute.startswith("_") or attribute.startswith("__"):
            continue
        if isinstance(owner, ast.Name) and owner.id in {"self", "cls", *MODULE_OBJECTS}:
            continue
        if (
            isinstance(owner, ast.Call)
            and isinstance(owner.func, ast.Name)
            and owner.func.id == "super"
        ):
            continue
        if attribute in PROTOCOL_NAMES:
            continue
        found.append((node.lineno, attribute, ast.unparse(node)))
    return found


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_module_reads_another_objects_private_attributes() -> None:
    allowed = {(module, attribute) for (module, names) in ALLOWED for attribute in names.split()}
    used: set[tuple[str, str]] = set()
    offences = []
    for path in sorted((ROOT / "flowlib").rglob("*.py")):
        module = _module_name(path)
        for line, attribute, code in _private_reads(path):
            if (module, attribute) in allowed:
                used.add((module, attribute))
            else:
                offences.append(f"{module}:{line}: {code}")
    assert offences == []
    assert allowed - used == set(), "drop allow-list entries that are no longer needed"


def test_the_private_check_sees_a_reach(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "def f(team, self):\n"
        "    self._ok\n"
        "    super()._ok\n"
        "    team._message_factory._types\n"
        "    getattr(team, '_x')\n"
    )
    found = sorted(attribute for _, attribute, _ in _private_reads(source))
    assert found == ["_message_factory", "_types", "_x"]


# --- the drawing in docs/architecture.md ------------------------------------------------


def _load_drawing() -> ModuleType:
    spec = importlib.util.spec_from_file_location("draw_layers", ROOT / "scripts/draw_layers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_architecture_drawing_is_up_to_date(
    modules: nx.DiGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``docs/architecture.dot`` is what flowlib's renderer draws from today's imports;
    the SVG beside it holds every unit. Run ``python scripts/draw_layers.py`` to refresh."""
    import xml.etree.ElementTree as ElementTree

    from flowlib.render import to_dot

    drawing = _load_drawing()
    # The drawing's import graph is the fixture's (the same `import_graph(ROOT)`, built
    # once for the module; the drawing only reads it).
    assert (
        drawing.import_graph.__code__.co_filename == import_graph.import_graph.__code__.co_filename
    )
    monkeypatch.setattr(drawing, "import_graph", lambda root: modules if root == ROOT else None)
    graph = drawing.layer_graph(ROOT)
    assert to_dot(graph, title=drawing.TITLE) == drawing.DOT.read_text(encoding="utf-8")
    svg = ElementTree.parse(drawing.SVG).getroot()
    texts = {element.text for element in svg.iter() if element.tag.endswith("text")}
    units = {unit for layer in import_graph.LAYERS for unit in layer}
    assert units <= texts
