"""The run page: one self-contained HTML file, opened in a real headless Chromium.

The browser is Debian's ``chromium`` (installed by scripts/bootstrap.sh), driven through
the DevTools protocol over a WebSocket: the test loads the page from disk, moves the
step slider, reads which node the page highlights in its DOM, and takes a screenshot.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from _browser import DevTools, open_page

from flowlib.conditions import MaxMessageTermination
from flowlib.errors import InvalidArgumentError
from flowlib.graph import Not
from flowlib.messages import ToolCallExecutionEvent, ToolCallRequestEvent
from flowlib.models import FunctionCall, FunctionExecutionResult, RequestUsage
from flowlib.render import (
    PageStep,
    run_page,
    steps_from_records,
    steps_from_run,
    trace_from_steps,
    write_run_page,
)
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.testing import ScriptedAgent

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def review_team() -> GraphFlow:
    writer = ScriptedAgent("writer", ["draft 1", "draft 2"])
    critic = ScriptedAgent("critic", ["REVISE: shorter", "APPROVE"])
    publish = ScriptedAgent("publish", ["Published."])
    builder = DiGraphBuilder().add_node(writer).add_node(critic).add_node(publish)
    builder.add_edge(writer, critic)
    builder.add_edge(critic, publish, condition="APPROVE")
    builder.add_edge(critic, writer, condition=Not(condition="APPROVE"))
    builder.set_entry_point(writer)
    return GraphFlow(
        builder.get_participants(),
        builder.build(),
        termination_condition=MaxMessageTermination(20),
    )


async def _page_of_a_run(tmp_path: Path) -> tuple[GraphFlow, list[PageStep], Path]:
    team = review_team()
    result = await team.run(task="Write a slogan.")
    steps = steps_from_run(team.trace, result.messages, arrivals=[0.1 * i for i in range(6)])
    path = write_run_page(team, tmp_path / "run.html", steps, trace=team.trace)
    return team, steps, path


async def test_steps_follow_the_trace(tmp_path: Path) -> None:
    _, steps, _ = await _page_of_a_run(tmp_path)
    assert [s.node for s in steps] == ["writer", "critic", "writer", "critic", "publish"]
    assert steps[1].edges == [("critic", "writer")]
    assert steps[3].edges == [("critic", "publish")]
    assert [m.text for m in steps[3].messages] == ["APPROVE"]
    assert steps[0].seconds == pytest.approx(0.1)
    assert steps[4].seconds == pytest.approx(0.1)


def test_tool_calls_and_tokens_belong_to_their_step() -> None:
    from flowlib.graph import RunTrace
    from flowlib.messages import TextMessage

    trace = RunTrace(names=["a", "b"], edge_ends=[("a", "b")], step_nodes=[0, 1], fired=[(0, 0)])
    usage = RequestUsage(prompt_tokens=12, completion_tokens=3)
    items = [
        TextMessage(content="task", source="user"),
        ToolCallRequestEvent(
            content=[FunctionCall(id="1", name="weather", arguments='{"city": "Oslo"}')],
            source="a",
            models_usage=usage,
        ),
        ToolCallExecutionEvent(
            content=[FunctionExecutionResult(call_id="1", name="weather", content="rain")],
            source="a",
        ),
        TextMessage(content="It rains.", source="a", models_usage=usage),
        TextMessage(content="ok", source="b"),
    ]
    steps = steps_from_run(trace, items)
    assert steps[0].tool_calls == ['weather({"city": "Oslo"})', "weather -> rain"]
    assert (steps[0].prompt_tokens, steps[0].completion_tokens) == (24, 6)
    assert [m.kind for m in steps[0].messages] == [
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "TextMessage",
    ]
    assert steps[1].prompt_tokens is None and steps[0].edges == [("a", "b")]


async def test_a_stored_run_feeds_the_page() -> None:
    from flowlib.checkpoint import CheckpointRecord, InMemoryCheckpointStore, RunRecord
    from flowlib.messages import TextMessage

    team = review_team()
    store = InMemoryCheckpointStore()
    await store.create_run(
        RunRecord(
            run_id="r1",
            team_type="GraphFlow",
            graph_signature="s",
            state_version=1,
            created_at=100.0,
            updated_at=100.0,
        )
    )
    usage = RequestUsage(prompt_tokens=5, completion_tokens=2)
    said = [("writer", "draft"), ("critic", "REVISE"), ("writer", "v2"), ("critic", "APPROVE")]
    records = [
        CheckpointRecord(run_id="r1", checkpoint_id=1, kind="start", turn=0, created_at=100.0)
    ]
    for turn, (node, text) in enumerate(said, start=1):
        message = TextMessage(content=text, source=node, models_usage=usage)
        records.append(
            CheckpointRecord(
                run_id="r1",
                checkpoint_id=turn + 1,
                kind="turn",
                turn=turn,
                node=node,
                created_at=100.0 + 0.5 * turn,
                messages=[message.dump()],
                message_nodes=[node],
            )
        )
    for record in records:
        await store.append(record, status="running")
    steps = steps_from_records(team, await store.records("r1"))
    assert [s.node for s in steps] == ["writer", "critic", "writer", "critic"]
    assert steps[1].edges == [("critic", "writer")] and steps[3].edges == [("critic", "publish")]
    assert steps[0].seconds == pytest.approx(0.5) and steps[3].prompt_tokens == 5
    trace = trace_from_steps(team, steps)
    assert trace.steps == ["writer", "critic", "writer", "critic"]
    assert ("critic", "publish") in [(s, t) for _, s, t in trace.fired_edges]
    page = run_page(team, steps, trace=trace, stop_reason="stored")
    assert "APPROVE" in page


class _Resources(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.external: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href") and value and not value.startswith("#"):
                self.external.append(f"{tag} {name}={value}")


async def test_the_page_is_self_contained(tmp_path: Path) -> None:
    _, steps, path = await _page_of_a_run(tmp_path)
    page = path.read_text()
    parser = _Resources()
    parser.feed(page)
    assert parser.external == []  # no CDN, no server: nothing is loaded from elsewhere
    assert "link" not in parser.tags and "svg" in parser.tags
    assert "<?xml" not in page and "<!DOCTYPE svg" not in page
    data = re.search(r'<script type="application/json" id="run-data">(.*?)</script>', page, re.S)
    assert data is not None
    assert [s["node"] for s in json.loads(data.group(1))["steps"]] == [s.node for s in steps]


def test_text_cannot_break_out_of_the_data_script() -> None:
    team = review_team()
    step = PageStep(node="writer", note="</script><script>alert(1)</script>")
    page = run_page(team, [step], svg="<svg></svg>")
    assert page.count("</script>") == 2  # the data block's and the code's own


def test_steps_of_another_flow_are_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="`ghost`"):
        run_page(review_team(), [PageStep(node="ghost")], svg="<svg></svg>")


# --- in a real browser -----------------------------------------------------------------------


HIGHLIGHTED = "[...document.querySelectorAll('g.node.current title')].map(t => t.textContent)"
EDGES = "[...document.querySelectorAll('g.edge.current title')].map(t => t.textContent)"


def _move_slider(browser: DevTools, step: int) -> None:
    browser.evaluate(
        "(() => { const s = document.getElementById('slider');"
        f" s.value = '{step}'; s.dispatchEvent(new Event('input')); }})()"
    )


async def test_slider_highlights_each_step_in_chromium(browser: DevTools, tmp_path: Path) -> None:
    _, steps, path = await _page_of_a_run(tmp_path)
    open_page(browser, path.resolve().as_uri())
    assert browser.evaluate(HIGHLIGHTED) == ["writer"]  # step 1 when the page opens
    assert browser.evaluate("document.getElementById('slider').max") == str(len(steps))

    _move_slider(browser, 4)
    assert browser.evaluate(HIGHLIGHTED) == ["critic"]
    assert browser.evaluate(EDGES) == ["critic->publish"]
    assert browser.evaluate("document.body.dataset.step") == "4"
    assert browser.evaluate("document.getElementById('messages').innerText").count("APPROVE") == 1
    facts = browser.evaluate("document.getElementById('facts').innerText")
    assert "critic -> publish" in facts and "0.100 s" in facts

    _move_slider(browser, 5)
    assert browser.evaluate(HIGHLIGHTED) == ["publish"]
    past = "[...document.querySelectorAll('g.node.past title')].map(t => t.textContent)"
    assert sorted(set(browser.evaluate(past))) == ["critic", "writer"]

    shot = base64.b64decode(browser.call("Page.captureScreenshot", format="png")["data"])
    assert shot.startswith(b"\x89PNG\r\n\x1a\n") and len(shot) > 10_000
    (tmp_path / "run.png").write_bytes(shot)


async def test_url_fragment_selects_the_step(browser: DevTools, tmp_path: Path) -> None:
    _, _, path = await _page_of_a_run(tmp_path)
    open_page(browser, path.resolve().as_uri() + "#step=3")
    assert browser.evaluate(HIGHLIGHTED) == ["writer"]
    assert browser.evaluate("document.body.dataset.step") == "3"
    assert browser.evaluate(EDGES) == ["writer->critic"]


async def test_flagged_nodes_stay_marked(browser: DevTools, tmp_path: Path) -> None:
    team, steps, _ = await _page_of_a_run(tmp_path)
    path = write_run_page(team, tmp_path / "flagged.html", steps, flagged=["publish"])
    open_page(browser, path.resolve().as_uri())
    flagged = "[...document.querySelectorAll('g.node.flagged title')].map(t => t.textContent)"
    assert browser.evaluate(flagged) == ["publish"]
    _move_slider(browser, 2)
    assert browser.evaluate(flagged) == ["publish"]
    assert browser.evaluate(HIGHLIGHTED) == ["critic"]
