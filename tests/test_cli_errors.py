"""The command line reports the user's own errors as one line, ``FILE:LINE: Error: msg``,
and the whole traceback with ``--traceback`` (issue 11.8)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from flowlib.cli import main

RAISES_ON_IMPORT = """
from flowlib.teams import DiGraphBuilder

CITIES = {"paris": 1}
population = CITIES["rome"]
"""

FACTORY_RAISES = """
from flowlib.teams import DiGraphBuilder


def build():
    raise ValueError("no such city:\\n  rome")
"""

BAD_SYNTAX = """
def build(:
    pass
"""

NODE_RAISES = """
from flowlib.teams import DiGraphBuilder, GraphFlow


def draft(messages):
    return 1 / 0


def build():
    builder = DiGraphBuilder().add_node(draft)
    return GraphFlow(builder.get_participants(), builder.build())
"""

CYCLE = """
from flowlib.teams import DiGraphBuilder


def a(messages):
    return "a"


def b(messages):
    return "b"


builder = DiGraphBuilder().add_node(a).add_node(b).add_edge("a", "b").add_edge("b", "a")
"""


def cli(tmp_path: Path, source: str, *args: str) -> tuple[int, list[str]]:
    (tmp_path / "flow.py").write_text(source)
    err = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        patch.setattr("sys.stderr", err)
        code = main([*args], out=io.StringIO())
    return code, err.getvalue().splitlines()


def test_an_error_in_the_users_module_is_one_line(tmp_path: Path) -> None:
    code, lines = cli(tmp_path, RAISES_ON_IMPORT, "validate", "flow.py:builder")
    assert code == 1
    assert lines == ["flow.py:5: KeyError: 'rome'"]


def test_an_error_in_a_factory_points_at_its_line(tmp_path: Path) -> None:
    code, lines = cli(tmp_path, FACTORY_RAISES, "render", "flow.py:build")
    assert (code, lines) == (1, ["flow.py:6: ValueError: no such city: rome"])


def test_a_syntax_error_points_at_its_line(tmp_path: Path) -> None:
    code, lines = cli(tmp_path, BAD_SYNTAX, "validate", "flow.py:build")
    assert code == 1
    assert len(lines) == 1 and lines[0].startswith("flow.py:2: SyntaxError: ")


def test_a_node_raising_during_a_run_points_at_the_node(tmp_path: Path) -> None:
    code, lines = cli(tmp_path, NODE_RAISES, "run", "flow.py:build", "--task", "go")
    assert code == 1
    assert len(lines) == 1
    assert lines[0].startswith(
        "flow.py:6: NodeExecutionError: Node `draft` raised ZeroDivisionError"
    )


def test_flowlibs_own_errors_name_the_command(tmp_path: Path) -> None:
    code, lines = cli(tmp_path, CYCLE, "validate", "flow.py:builder")
    assert code == 1
    assert len(lines) == 1
    assert lines[0].startswith("flowlib validate: NoStartNodeError: No node can start")


@pytest.mark.parametrize("where", ["before", "after"])
def test_traceback_shows_the_whole(tmp_path: Path, where: str) -> None:
    args = ["validate", "flow.py:builder"]
    args = ["--traceback", *args] if where == "before" else [*args, "--traceback"]
    code, lines = cli(tmp_path, RAISES_ON_IMPORT, *args)
    assert code == 1
    assert lines[0] == "Traceback (most recent call last):"
    assert any('flow.py", line 5' in line for line in lines)
    assert lines[-1] == "KeyError: 'rome'"
