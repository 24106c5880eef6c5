"""The teaching pages run: every ``python`` block of the home page, the guides and the
"Coming from" pages, in order, as one program, printing exactly the output the page
shows (tests/_doc_pages.py says how a page is read)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _doc_pages import check_page, run_page
from openai_server import OpenAIServer, Reply

ROOT = Path(__file__).parent.parent
DOCS = ROOT / "docs"
GUIDES = [
    "first-flow.md",
    "tools-and-mcp.md",
    "human-in-the-loop.md",
    "durable-runs.md",
    "checking.md",
    "scaling-out.md",
]


@pytest.mark.parametrize("guide", GUIDES)
def test_guide_runs_and_prints_what_it_shows(guide: str) -> None:
    check_page(DOCS / "guides" / guide)


def test_the_guided_path_is_complete_and_in_the_nav() -> None:
    pages = sorted(p.name for p in (DOCS / "guides").glob("*.md"))
    assert pages == sorted([*GUIDES, "real-model.md"])
    nav = (ROOT / "mkdocs.yml").read_text()
    home = (DOCS / "index.md").read_text()
    for page in pages:
        assert f"guides/{page}" in nav and f"(guides/{page})" in home


def test_real_model_guide_runs_against_an_openai_compatible_server(
    openai_server: OpenAIServer,
) -> None:
    """The page reads OPENAI_BASE_URL as a user's Ollama or vLLM set-up would."""
    openai_server.enqueue(
        Reply("A directed graph is a set of nodes joined by edges that each point one way.")
    )
    check_page(
        DOCS / "guides" / "real-model.md",
        env={
            "OPENAI_BASE_URL": openai_server.base_url,
            "OPENAI_API_KEY": "sk-test",
            "FLOWLIB_MODEL": "gpt-4o-mini",
        },
    )
    (request,) = openai_server.requests
    assert request.body["stream"] is True and request.body["model"] == "gpt-4o-mini"


@pytest.mark.parametrize("page", ["index.md", "coming-from-autogen.md", "coming-from-langgraph.md"])
def test_page_runs_and_prints_what_it_shows(page: str) -> None:
    check_page(DOCS / page)


def test_home_page_drawing_is_the_flow_on_the_page(tmp_path: Path) -> None:
    """docs/img/home_flow.svg is the drawing of the home page's flow: the same nodes and
    edges (compared by the SVG's titles, not by bytes)."""
    code = re.search(r"```python\n(.*?)```", (DOCS / "index.md").read_text(), re.DOTALL)
    assert code is not None
    program = code.group(1).replace("asyncio.run(Console(", "(lambda *a: None)((")
    page = tmp_path / "_home_probe.md"
    page.write_text(
        "```python\n" + program + "\nfrom flowlib.render import to_svg\nprint(to_svg(flow))\n```\n"
    )
    ((_, svg),) = run_page(page)

    def titles(text: str) -> set[str]:
        return set(re.findall(r"<title>([^<]*)</title>", text))

    assert titles(svg) == titles((DOCS / "img" / "home_flow.svg").read_text())
    assert "critic&#45;&gt;publish" in titles(svg)


def test_scripting_models_section_runs(tmp_path: Path) -> None:
    text = (DOCS / "testing.md").read_text()
    start = text.index("## Scripting models")
    section = text[start : text.index("\n## ", start)]
    assert "flowlib.testing import tool_calls" in section
    page = tmp_path / "_scripting_probe.md"
    page.write_text(section)
    check_page(page)


def test_tools_page_dumps_and_loads_an_agent_with_function_tools(tmp_path: Path) -> None:
    text = (DOCS / "tools.md").read_text()
    start = text.index("## Saving an agent that has function tools")
    section = text[start : text.index("\n## ", start)]
    assert "allow_functions=" in section
    page = tmp_path / "_tools_probe.md"
    page.write_text(section)
    check_page(page)


def test_readme_models_snippet_runs_as_written(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)
    models = next(block for block in blocks if "AzureOpenAIChatCompletionClient(" in block)
    assert "[...]" not in models
    page = tmp_path / "_readme_probe.md"
    page.write_text("```python\n" + models + "\nprint(agent.name)\n```\n")
    ((_, printed),) = run_page(page, env={"OPENAI_API_KEY": "sk-test"})
    assert printed.strip() == "assistant"


def test_cli_page_names_only_files_that_exist() -> None:
    text = (DOCS / "cli.md").read_text()
    # `FILE.py:OBJECT` and `FILE.py:build` are the syntax; every other file is a real one.
    for name in set(re.findall(r"([\w/.-]+\.py):build", text)) - {"FILE.py"}:
        assert (ROOT / name).is_file(), f"docs/cli.md uses `{name}:build`, which does not exist"
