"""Raw errors left (issue 21.6): a name or title over Graphviz's 16,384-character limit
is a RenderError, not a BrokenPipeError; `flowlib ... | head` stops quietly; and
`flowlib validate` of a file or factory that calls `sys.exit(0)` fails instead of
exiting 0 unvalidated. (Invalid UTF-8 from a model server:
tests/models/test_model_hostile_server.py.)"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flowlib.cli import main
from flowlib.render import RenderError, to_dot, to_svg
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.testing import ScriptedAgent


def flow(name: str = "writer") -> GraphFlow:
    builder = DiGraphBuilder().add_node(ScriptedAgent(name, ["x"]))
    return GraphFlow(builder.get_participants(), builder.build())


@pytest.mark.parametrize(
    ("name", "title"), [("n" * 20_000, None), ("writer", "t" * 300_000), ("w", "t" * 16_385)]
)
def test_a_string_over_graphvizs_limit_is_a_render_error(name: str, title: str | None) -> None:
    with pytest.raises(RenderError, match="16,384 characters"):
        to_svg(flow(name), title=title)
    assert len(to_dot(flow(name), title=title)) > 16_384  # DOT text itself still works


def test_a_long_but_allowed_title_still_draws() -> None:
    assert to_svg(flow(), title="t" * 16_000).startswith("<?xml")


BIG_FLOW = """
from flowlib.teams import DiGraphBuilder, GraphFlow


def talker(messages):
    return "x" * 1_000_000


def build(*, checkpoint_store=None):
    builder = DiGraphBuilder().add_node(talker)
    return GraphFlow(
        builder.get_participants(), builder.build(), checkpoint_store=checkpoint_store
    )
"""


def test_a_closed_pipe_stops_the_command_quietly(tmp_path: Path) -> None:
    """`flowlib run ... | head -c 10`: over a megabyte for a reader that left."""
    path = tmp_path / "big.py"
    path.write_text(BIG_FLOW)
    command = f"{sys.executable} -m flowlib run {path}:build --task go | head -c 10"
    completed = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=False,
        text=True,
    )
    assert completed.stdout == "----------"
    assert "BrokenPipe" not in completed.stderr and "Traceback" not in completed.stderr
    assert completed.returncode == 141  # 128 + SIGPIPE, as a shell tool ends


class ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_runs_show_into_a_closed_pipe_returns_quietly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    path = tmp_path / "big.py"
    path.write_text(BIG_FLOW)
    assert main(["run", f"{path}:build", "--task", "go", "--store", store], out=io.StringIO()) == 0
    listing = io.StringIO()
    main(["runs", "list", "--store", store], out=listing)
    run_id = listing.getvalue().split("\n")[1].split()[0]
    capsys.readouterr()
    assert main(["runs", "show", run_id, "--store", store], out=ClosedPipe()) == 141
    assert capsys.readouterr().err == ""


EXITS = {
    "module": "import sys\nsys.exit(0)\n",
    "factory": ("import sys\n\ndef build():\n    sys.exit(0)\n"),
}


@pytest.mark.parametrize("where", list(EXITS))
def test_validate_of_a_file_that_exits_is_an_error(
    tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "flow.py"
    path.write_text(EXITS[where])
    assert main(["validate", f"{path}:build"], out=io.StringIO()) == 1
    assert "called sys.exit(0)" in capsys.readouterr().err
