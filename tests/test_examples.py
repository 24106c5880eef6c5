"""Every file in examples/ runs offline, and every team it builds validates and draws
(STYLE: examples run)."""

from __future__ import annotations

import ast
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from _forked import run_script
from openai_server import OpenAIServer, Reply, ToolCall

from flowlib.base import Team
from flowlib.cli import load_object
from flowlib.graph import validate_graph
from flowlib.render import to_svg
from flowlib.teams import BaseGroupChat

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES_DIR = ROOT / "examples"
# Files starting with "_" are helpers shared by the examples, not examples.
EXAMPLES = sorted(p for p in EXAMPLES_DIR.glob("*.py") if not p.name.startswith("_"))
NO_TEAM = {"conversation_steering"}  # drives one agent's conversation; there is no team
TEAM_EXAMPLES = [p for p in EXAMPLES if p.stem not in NO_TEAM]
SVG = "{http://www.w3.org/2000/svg}"


def _header(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text())) or ""


def _defines_build(path: Path) -> bool:
    return any(
        isinstance(node, ast.FunctionDef) and node.name == "build"
        for node in ast.parse(path.read_text()).body
    )


def _build(path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``build()`` of an example, on its scripted models (as the docs build draws it)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return load_object(f"{path}:build")


def test_there_are_examples() -> None:
    assert EXAMPLES, "examples/ has no .py files"


def _run(path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``python examples/<file>.py`` from the checkout's root, as docs/examples.md says,
    with nothing of this process's environment: as a fork of tests/_forked.py's zygote,
    which has flowlib (this checkout's) imported already (docs/choices.md, "The test
    command's speed")."""
    completed = run_script(
        path,
        cwd=ROOT,
        timeout=90,
        env={"PATH": "/usr/bin:/bin", "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT), **env},
        clean_env=True,
    )
    assert completed.returncode == 0, completed.stderr
    return completed


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_offline(path: Path) -> None:
    completed = _run(path)  # no OPENAI_API_KEY or OPENAI_BASE_URL: scripted models
    assert completed.stdout.strip(), "an example should print what it does"
    if path in TEAM_EXAMPLES:
        assert "stop reason" in completed.stdout, "a team example says why its run stopped"
    header = path.read_text().split('"""')[1]
    assert "python examples/" in header, "the header says how to run it"
    assert "OPENAI_API_KEY" in header, "the header says how to run it against a real model"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_header_starts_with_a_title(path: Path) -> None:
    title, _, rest = _header(path).partition("\n")
    assert title.strip() and not title.startswith(" "), "the first line is a one-line title"
    assert rest.startswith("\n"), "a blank line follows the title"


@pytest.mark.parametrize("path", TEAM_EXAMPLES, ids=[p.stem for p in TEAM_EXAMPLES])
def test_example_exposes_build(path: Path) -> None:
    assert _defines_build(path), f"{path.name} should define build() returning its team"


@pytest.mark.parametrize("path", TEAM_EXAMPLES, ids=[p.stem for p in TEAM_EXAMPLES])
def test_example_graph_validates(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    team = _build(path, monkeypatch)
    assert isinstance(team, BaseGroupChat)
    graph = team.graph
    validate_graph(graph)  # the graph's pattern traits allow what its team needs
    assert [p.name for p in team.participants] == list(graph.nodes)
    assert _build(path, monkeypatch) is not team, "build() makes a fresh team each call"


@pytest.mark.parametrize("path", TEAM_EXAMPLES, ids=[p.stem for p in TEAM_EXAMPLES])
def test_example_draws_every_node_and_edge(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    team = _build(path, monkeypatch)
    assert isinstance(team, BaseGroupChat)
    root = ET.fromstring(to_svg(team))
    titles: dict[str, set[str]] = {"node": set(), "cluster": set(), "edge": set()}
    edges = 0
    for group in root.iter(f"{SVG}g"):
        kind = group.get("class")
        title = group.find(f"{SVG}title")
        if kind in titles and title is not None and title.text:
            titles[kind].add(title.text)
        edges += kind == "edge"
    for participant in team.participants:
        if isinstance(participant, Team):  # a nested team is drawn as a cluster
            assert f"cluster_{participant.name}" in titles["cluster"], participant.name
        else:
            assert participant.name in titles["node"], participant.name
    assert edges >= sum(1 for _ in team.graph.iter_edges())


def test_examples_switch_to_an_openai_compatible_server(openai_server: OpenAIServer) -> None:
    """With ``OPENAI_BASE_URL`` set, the examples' agents talk to that server instead."""
    openai_server.enqueue(Reply("an outline"), Reply("a paragraph"), Reply("the edited text"))
    completed = _run(
        EXAMPLES_DIR / "sequential.py",
        OPENAI_BASE_URL=openai_server.base_url,
        FLOWLIB_MODEL="local-model",
    )
    assert "the edited text" in completed.stdout
    assert [body["model"] for body in openai_server.bodies] == ["local-model"] * 3


def test_tool_example_calls_tools_through_a_server(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(
        Reply(tool_calls=[ToolCall("get_weather", '{"city": "Oslo"}')]),
        Reply("Bring a coat."),
    )
    completed = _run(
        EXAMPLES_DIR / "tools_with_reflection.py", OPENAI_BASE_URL=openai_server.base_url
    )
    assert "4 °C and sleet" in completed.stdout  # the real tool ran
    assert "Bring a coat." in completed.stdout
    assert "Text message received from 'weather_agent'" in completed.stdout
