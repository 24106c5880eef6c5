"""Draw a run's state machine with flowlib's own renderer: ``docs/run_states.svg``.

The phases and transitions are ``flowlib.graph._run.TRANSITIONS``, the one definition
the code uses; ``state_machine()`` makes them a flowlib
[`DiGraph`][flowlib.graph.DiGraph] and ``flowlib.render`` draws it.

Run ``python scripts/draw_run_states.py`` after changing the transitions;
``tests/teams/test_run_states.py`` checks the committed files are up to date.
"""

from __future__ import annotations

from pathlib import Path

from flowlib.graph._run import state_machine
from flowlib.render import to_dot, to_svg

ROOT = Path(__file__).resolve().parent.parent
DOT = ROOT / "docs" / "run_states.dot"
SVG = ROOT / "docs" / "run_states.svg"
TITLE = "A run's states (an arrow: what moves it)"


def main() -> None:
    graph = state_machine()
    DOT.write_text(to_dot(graph, title=TITLE), encoding="utf-8")
    SVG.write_text(to_svg(graph, title=TITLE), encoding="utf-8")
    print(f"wrote {DOT.relative_to(ROOT)} and {SVG.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
