"""The run state machine drawn in docs/state.md is the one the code defines
(``flowlib.graph._run.TRANSITIONS``), drawn by flowlib's renderer."""

from __future__ import annotations

import importlib.util
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from types import ModuleType
from typing import get_args

from flowlib.graph._run import TRANSITIONS, RunPhase, state_machine
from flowlib.render import to_dot

ROOT = Path(__file__).resolve().parent.parent.parent


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "draw_run_states", ROOT / "scripts/draw_run_states.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_state_machine_drawing_is_up_to_date() -> None:
    """Run ``python scripts/draw_run_states.py`` to refresh docs/run_states.*."""
    drawing = _script()
    assert to_dot(state_machine(), title=drawing.TITLE) == drawing.DOT.read_text(encoding="utf-8")
    svg = ElementTree.parse(drawing.SVG).getroot()
    texts = {element.text for element in svg.iter() if element.tag.endswith("text")}
    assert set(get_args(RunPhase)) <= texts
    assert {label for _, _, label in TRANSITIONS} <= texts
    assert "run_states.svg" in (ROOT / "docs/state.md").read_text(encoding="utf-8")


def test_every_phase_is_reachable_and_can_move_on_except_by_asking() -> None:
    sources = {source for source, _, _ in TRANSITIONS}
    targets = {target for _, target, _ in TRANSITIONS}
    assert set(get_args(RunPhase)) == sources | targets
    assert sources == set(get_args(RunPhase))  # every phase has a way forward
