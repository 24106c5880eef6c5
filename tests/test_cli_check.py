"""``flowlib check``, ``validate``'s warnings and ``--strict``, and ``render --run``."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from flowlib.cli import main

EXAMPLES = Path(__file__).parent.parent / "examples"
SVG = "{http://www.w3.org/2000/svg}"

JOIN = """
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.testing import ScriptedAgent

def build():
    a, b, c, d = (ScriptedAgent(n, ["x"]) for n in "ABCD")
    builder = DiGraphBuilder()
    for agent in (a, b, c, d):
        builder.add_node(agent)
    builder.add_edge(a, b, condition="left").add_edge(a, c, condition="right")
    builder.add_edge(b, d).add_edge(c, d)
    return GraphFlow(builder.get_participants(), builder.build())
"""


def run_cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(args), out=out)
    return code, out.getvalue()


@pytest.fixture
def join_file(tmp_path: Path) -> Path:
    path = tmp_path / "joinflow.py"
    path.write_text(JOIN)
    return path


def test_check_finds_the_join_and_writes_the_counterexample(
    join_file: Path, tmp_path: Path
) -> None:
    prefix = tmp_path / "out" / "cex"
    prefix.parent.mkdir()
    code, out = run_cli("check", f"{join_file}:build", "-o", str(prefix))
    assert code == 1
    assert "[join_never_completes] `D`" in out and "[dead_end] `A`" in out
    assert "counterexample (2 replies)" in out

    # The SVG overlay: the path taken (A, then one branch) in the drawing's labels.
    root = ET.parse(prefix.with_name("cex.svg")).getroot()
    labels = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "#1" in labels and "#2" in labels and "#3" not in labels
    # The run page replays the same two steps.
    page = prefix.with_name("cex.html").read_text()
    data = re.search(r'id="run-data">(.*?)</script>', page, re.S)
    assert data is not None
    run = json.loads(data.group(1))
    steps = run["steps"]
    assert steps[0]["node"] == "A" and len(steps) == 2
    assert run["flagged"] == ["D"]  # the node left waiting is marked on the drawing
    assert "was still waiting" in page


def test_check_passes_on_a_sound_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    code, out = run_cli("check", f"{EXAMPLES / 'loop_approval_exit.py'}:build")
    assert code == 0, out
    assert "sound" in out
    assert list(tmp_path.glob("*.counterexample.*")) == []


def test_check_default_output_is_in_the_current_folder(
    join_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    code, _ = run_cli("check", f"{join_file}:build", "--max-examples", "30")
    assert code == 1
    assert sorted(p.name for p in work.iterdir()) == [
        "joinflow.counterexample.html",
        "joinflow.counterexample.svg",
    ]


def test_validate_warns_and_strict_fails(
    join_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli("validate", f"{join_file}:build")
    assert code == 0
    assert "warning [exclusive_join]" in out and "`D` waits for all of" in out
    assert "warning [no_fallback]" in out and "`A`" in out
    assert out.strip().splitlines()[-1].startswith("ok: 4 nodes")

    code, out = run_cli("validate", "--strict", f"{join_file}:build")
    err = capsys.readouterr().err
    assert code == 1
    assert "ok:" not in out
    assert "GraphWarningError" in err and "`D`, `A`" in err


def test_validate_strict_passes_a_flow_without_warnings() -> None:
    code, out = run_cli("validate", "--strict", f"{EXAMPLES / 'sequential.py'}:build")
    assert code == 0 and out.startswith("ok:")


@pytest.mark.parametrize("option", ["--task", "--run"], ids=["task", "old-spelling"])
def test_render_run_writes_a_run_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    page = tmp_path / "run.html"
    code, out = run_cli(
        "render", f"{EXAMPLES / 'graph_review_loop.py'}:build", option, "joins?", "-o", str(page)
    )
    assert code == 0 and "wrote the run page (8 steps)" in out
    data = re.search(r'id="run-data">(.*?)</script>', page.read_text(), re.S)
    assert data is not None
    steps = json.loads(data.group(1))["steps"]
    assert steps[0]["node"] == "plan" and steps[-1]["node"] == "publish"
    assert all(s["seconds"] is not None for s in steps)


def test_render_run_needs_an_html_file(join_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run_cli("render", f"{join_file}:build", "--run", "go", "-o", "run.svg")
    assert code == 1
    assert "give an HTML output file" in capsys.readouterr().err
