"""The ``flowlib`` command line: render, validate, run --trace and demo, in-process and as
the installed console script."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from flowlib.cli import main

FLOW = """
from flowlib.conditions import MaxMessageTermination
from flowlib.teams import DiGraphBuilder, GraphFlow


def draft(messages):
    return "draft"


def review(messages):
    return "APPROVE"


def publish(messages):
    return "done"


def build():
    builder = DiGraphBuilder().add_node(draft).add_node(review).add_node(publish)
    builder.add_edge("draft", "review").add_edge("review", "publish", condition="APPROVE")
    builder.add_edge("review", "draft", condition="REVISE")
    builder.set_entry_point("draft")
    return GraphFlow(builder.get_participants(), builder.build(),
                     termination_condition=MaxMessageTermination(10))


builder = DiGraphBuilder().add_node(draft).add_node(review).add_edge("draft", "review")
"""

CYCLE = """
from flowlib.teams import DiGraphBuilder


def a(messages):
    return "a"


def b(messages):
    return "b"


def c(messages):
    return "c"


builder = DiGraphBuilder().add_node(a).add_node(b).add_node(c)
builder.add_edge("a", "b").add_edge("b", "c").add_edge("c", "b")
"""


@pytest.fixture
def flow_file(tmp_path: Path) -> Path:
    path = tmp_path / "flow.py"
    path.write_text(FLOW)
    return path


def run_cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(args), out=out)
    return code, out.getvalue()


def test_validate_ok(flow_file: Path) -> None:
    code, out = run_cli("validate", f"{flow_file}:build")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[-1] == "ok: 3 nodes, 3 edges, with loops; starts at draft"
    # review's edges are "APPROVE" and "REVISE": no fallback, a warning (not an error).
    assert lines[:-1] == [line for line in lines if line.startswith("warning [no_fallback]")]
    assert "`review`" in lines[0]
    code, out = run_cli("validate", f"{flow_file}:builder")
    assert code == 0 and "2 nodes, 1 edge, acyclic" in out


def test_validate_prints_the_offending_cycle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cycle.py"
    path.write_text(CYCLE)
    code, _ = run_cli("validate", f"{path}:builder")
    err = capsys.readouterr().err
    assert code == 1
    assert "CycleWithoutExitError" in err and "`b -> c -> b`" in err
    assert len(err.strip().splitlines()) == 1


def test_bad_targets_are_one_line_errors(
    flow_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli("validate", "nope.py:x")[0] == 1
    assert "no such file" in capsys.readouterr().err
    assert run_cli("validate", f"{flow_file}:missing")[0] == 1
    assert "has no `missing`" in capsys.readouterr().err
    assert run_cli("validate", str(flow_file))[0] == 1
    assert "FILE.py:OBJECT" in capsys.readouterr().err


def test_render_formats(flow_file: Path, tmp_path: Path) -> None:
    code, out = run_cli("render", f"{flow_file}:build")
    assert code == 0 and out.startswith("digraph")
    code, out = run_cli("render", f"{flow_file}:build", "--format", "mermaid")
    assert code == 0 and "flowchart" in out
    svg = tmp_path / "flow.svg"
    code, out = run_cli("render", f"{flow_file}:build", "-o", str(svg))
    assert code == 0 and f"wrote {svg}" in out
    titles = {t.text for t in ET.parse(svg).getroot().iter("{http://www.w3.org/2000/svg}title")}
    assert {"draft", "review", "publish"} <= titles
    png = tmp_path / "flow.png"
    assert run_cli("render", f"{flow_file}:build", "-o", str(png))[0] == 0
    assert png.read_bytes().startswith(b"\x89PNG")


def test_run_streams_and_draws_the_path(flow_file: Path, tmp_path: Path) -> None:
    trace = tmp_path / "path.svg"
    code, out = run_cli("run", f"{flow_file}:build", "--task", "write", "--trace", str(trace))
    assert code == 0
    assert "---------- draft ----------" in out and "---------- publish ----------" in out
    assert "Finish reason: Digraph execution is complete" in out
    assert f"wrote the path taken to {trace}" in out
    text = trace.read_text()
    assert "#1" in text and "#3" in text  # step numbers of the path taken


def test_run_needs_a_team(flow_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli("run", f"{flow_file}:builder", "--task", "x")[0] == 1
    assert "not a team" in capsys.readouterr().err


def test_console_script_is_installed_and_runs_the_demo() -> None:
    script = shutil.which("flowlib", path=str(Path(sys.executable).parent))
    assert script is not None, "the flowlib console script is not installed"
    env = {"PATH": "/usr/bin:/bin"}
    completed = subprocess.run(
        [script, "demo"], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert "Stop reason: Digraph execution is complete" in completed.stdout
