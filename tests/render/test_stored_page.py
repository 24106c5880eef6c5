"""A stored run's page (``flowlib render --store URL --run-id ID -o run.html``): the
checkpoint timeline, the human requests the run waits for by id, and a fork's diff
against its parent, opened in Debian's Chromium from disk (no server)."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

from _browser import DevTools, open_page

from flowlib.checkpoint import SQLiteCheckpointStore
from flowlib.cli import main
from flowlib.render import fork_diff
from flowlib.teams import RoundRobinGroupChat
from flowlib.testing import ScriptedAgent

HOSTILE = '</script><script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'


def asking(store: Any) -> RoundRobinGroupChat:
    """After each turn the run waits for a person (``max_turns=1``: a pending request)."""
    helper = ScriptedAgent("helper", lambda turn, _: f"Question {turn}: {HOSTILE} colour?")
    return RoundRobinGroupChat([helper], max_turns=1, checkpoint_store=store)


async def _store_runs(db: Path) -> dict[str, Any]:
    """``parent``: asked, answered ``red``, asked again. ``fork``: forked where the first
    question waited, answered with hostile text instead, asked again."""
    store = SQLiteCheckpointStore(db)
    team = asking(store)
    await team.start_run("Pick a colour.", run_id="parent")
    (first,) = await store.list_pending()
    await asking(store).answer("parent", first.request_id, "red")
    at = next(c.checkpoint_id for c in await store.history("parent") if c.kind == "stop")
    await asking(store).fork_run("parent", at=at, run_id="fork", task=f"blue {HOSTILE}")
    pending = {p.run_id: p.request_id for p in await store.list_pending()}
    history = {run: list(await store.history(run)) for run in ("parent", "fork")}
    return {"at": at, "pending": pending, "history": history}


def _render(db: Path, run_id: str, page: Path) -> str:
    out = io.StringIO()
    args = ["render", "--store", f"sqlite:///{db}", "--run-id", run_id, "-o", str(page)]
    assert main(args, out=out) == 0, out.getvalue()
    return page.read_text(encoding="utf-8")


def _data(html: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(html.split('id="run-data">', 1)[1].split("</script>", 1)[0])
    return data


def test_the_page_has_the_timeline_pending_requests_and_the_fork_diff(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    stored = asyncio.run(_store_runs(db))
    parent = _data(_render(db, "parent", tmp_path / "parent.html"))
    assert [c["checkpoint_id"] for c in parent["checkpoints"]] == [
        c.checkpoint_id for c in stored["history"]["parent"]
    ]
    assert [r["request_id"] for r in parent["pending"]] == [stored["pending"]["parent"]]
    assert parent["fork"] is None
    fork = _data(_render(db, "fork", tmp_path / "fork.html"))
    assert fork["fork"]["parent_id"] == "parent" and fork["fork"]["checkpoint_id"] == stored["at"]
    assert fork["fork"]["shared"] == 2  # the task and the first question
    ops = [(line["op"], line["text"]) for line in fork["fork"]["lines"]]
    assert ("parent", "red") in ops and ("fork", f"blue {HOSTILE}") in ops
    # The fork's steps: the parent's first turn, then its own.
    assert [s["node"] for s in fork["steps"]] == ["helper", "helper"]
    assert [r["request_id"] for r in fork["pending"]] == [stored["pending"]["fork"]]


def test_fork_diff_matches_after_the_shared_history() -> None:
    def m(source: str, text: str) -> dict[str, Any]:
        return {"type": "TextMessage", "source": source, "content": text}

    parent = [m("user", "task"), m("a", "one"), m("user", "red"), m("a", "two")]
    fork = [m("user", "task"), m("a", "one"), m("user", "blue"), m("a", "two"), m("a", "3")]
    shared, lines = fork_diff(parent, fork)
    assert shared == 2
    assert [(line.op, line.text) for line in lines] == [
        ("parent", "red"),
        ("fork", "blue"),
        ("same", "two"),
        ("fork", "3"),
    ]


def test_the_stored_page_in_chromium(browser: DevTools, tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    stored = asyncio.run(_store_runs(db))
    page = tmp_path / "fork.html"
    _render(db, "fork", page)
    open_page(browser, page.resolve().as_uri())
    rows = browser.evaluate(
        "[...document.querySelectorAll('#timeline tr')].map(r => r.dataset.checkpoint)"
    )
    assert rows == [str(c.checkpoint_id) for c in stored["history"]["fork"]]
    # A checkpoint row with a step selects it on the slider and the drawing.
    steps = browser.evaluate("[...document.querySelectorAll('#timeline tr.step')].length")
    assert steps >= 1
    browser.evaluate("document.querySelector('#timeline tr.step:last-child').click()")
    assert browser.evaluate("document.body.dataset.step") == "2"
    assert browser.evaluate("document.querySelector('#timeline tr.current').dataset.step") == "2"
    # The pending request by its id; the fork's diff; hostile text stays text.
    assert browser.evaluate(
        "[...document.querySelectorAll('#pending [data-request]')].map(r => r.dataset.request)"
    ) == [stored["pending"]["fork"]]
    assert HOSTILE in browser.evaluate("document.getElementById('pending').innerText")
    diff = browser.evaluate(
        "[...document.querySelectorAll('#diff .diff')].map(d => [d.dataset.op, d.innerText])"
    )
    assert ["parent", "- user \u00b7 TextMessage: red"] in diff
    assert ["fork", f"+ user \u00b7 TextMessage: blue {HOSTILE}"] in diff
    assert "parent" in browser.evaluate("document.getElementById('fork-box').innerText")
    assert browser.evaluate("typeof window.pwned") == "undefined"
    assert browser.evaluate("document.querySelectorAll('#main img, section img').length") == 0
