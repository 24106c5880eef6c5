"""MkDocs hooks: draw every example and list them on the examples page.

Each file in ``examples/`` exposes ``build()`` returning its team (on scripted models, so
nothing needs a network). Each team is drawn with Graphviz into the built site as
``examples/<name>.svg`` (a generated file: nothing is written into ``docs/``); the
examples page gets one section per example: its docstring, its drawing and how to run
it. A broken example breaks the docs build (``mkdocs build --strict``), which is the
point.
"""

from __future__ import annotations

import ast
import html
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
MARKER = "<!-- examples -->"


def _examples() -> list[Path]:
    return sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text())) or ""


def _has_build(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "build"
        for node in tree.body
    )


def on_files(files: Any, config: Any) -> Any:
    """Add each example's drawing to the site as a generated file."""
    from mkdocs.structure.files import File

    from flowlib.cli import load_object
    from flowlib.render import to_svg

    for path in _examples():
        if not _has_build(path):
            continue
        team = load_object(f"{path}:build")
        files.append(File.generated(config, f"examples/{path.stem}.svg", content=to_svg(team)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Fill the examples page."""
    if MARKER not in markdown:
        return markdown
    sections = []
    for path in _examples():
        doc = _docstring(path)
        title, _, body = doc.partition("\n")
        parts = [f"## {path.stem}", "", f"**{title.strip()}**", ""]
        parts += ["```text", html.unescape(body.strip()), "```", ""]
        if _has_build(path):
            parts += [f"![{path.stem}](examples/{path.stem}.svg)", ""]
        parts += [f"Source: `examples/{path.name}`", ""]
        sections.append("\n".join(parts))
    return markdown.replace(MARKER, "\n".join(sections))
