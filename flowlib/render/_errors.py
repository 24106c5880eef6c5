"""Errors of the renderer: Graphviz missing or failing."""

from __future__ import annotations

from ..errors import FlowlibError

__all__ = ["INSTALL_HINT", "GraphvizNotFoundError", "RenderError"]

INSTALL_HINT = (
    "Install Graphviz: `apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` "
    "(macOS), `conda install -c conda-forge graphviz` (conda), or see "
    "https://graphviz.org/download/ (Windows: add its `bin` folder to PATH). "
    "`to_dot()` and `to_mermaid()` need no install."
)


class RenderError(FlowlibError, RuntimeError):
    """Graphviz could not turn a drawing into an image (SVG, PNG)."""


class GraphvizNotFoundError(RenderError):
    """The Graphviz ``dot`` program (or the ``graphviz`` Python package) is not installed."""
