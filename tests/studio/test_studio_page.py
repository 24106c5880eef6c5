"""The studio's page in Debian's headless Chromium against a real ``flowlib studio``:
the runs table (SQLite and PostgreSQL), a run advancing live, fork at step 3, answering
a pending request, hostile text."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _browser import DevTools, open_page, screenshot, wait_for
from _server import FLOWS, ROOT, studio
from flows import HOSTILE, build, build_ask, build_hostile

from flowlib.checkpoint import open_store

pytestmark = pytest.mark.timeout(400)

ROWS = "[...document.querySelectorAll('#runs-body tr')].map(r => r.dataset.run)"


def _store_runs(url: str, factory: Any, *run_ids: str, task: str = "Write a slogan.") -> None:
    async def go() -> None:
        store = open_store(url)
        try:
            for run_id in run_ids:
                await factory(store).start_run(task, run_id=run_id)
        finally:
            await store.close()

    asyncio.run(go())


def _rows(browser: DevTools, count: int) -> list[str]:
    rows: list[str] = wait_for(
        browser, f"(() => {{ const r = {ROWS}; return r.length >= {count} && r; }})()"
    )
    return rows


def _open_run(browser: DevTools, base: str, run_id: str, steps: int) -> None:
    open_page(browser, f"{base}/#/run/{run_id}")
    wait_for(browser, f"window.studio.steps >= {steps} && !!document.querySelector('#drawing svg')")


def test_the_runs_table_lists_a_sqlite_store(browser: DevTools, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    _store_runs(url, build, "one", "two", "three")
    with studio(url, f"{FLOWS}:build") as served:
        open_page(browser, served.base + "/")
        assert _rows(browser, 3) == ["three", "two", "one"]
        cells = browser.evaluate(
            "[...document.querySelectorAll('#runs-body tr')[0].cells].map(c => c.textContent)"
        )
        assert cells[:4] == ["three", "complete", "flows", "5"]
        # The flow named on the command line has its drawing and a start form.
        assert browser.evaluate("!!document.querySelector('#flows .flow svg g.node')")
        # A click opens the run view: the last step is shown on the drawing.
        browser.evaluate("document.querySelector('#runs-body tr a').click()")
        wait_for(browser, "location.hash === '#/run/three' && window.studio.steps === 5")
        current = browser.evaluate(
            "[...document.querySelectorAll('g.node.current title')].map(t => t.textContent)"
        )
        assert current == ["publish"]


def test_the_runs_table_lists_a_postgresql_store(
    browser: DevTools, postgres_dsn: str, tmp_path: Path
) -> None:
    _store_runs(postgres_dsn, build, "pg-1", "pg-2")
    with studio(postgres_dsn, f"{FLOWS}:build") as served:
        open_page(browser, served.base + "/")
        assert _rows(browser, 2) == ["pg-2", "pg-1"]
        _open_run(browser, served.base, "pg-1", 5)
        texts = browser.evaluate("document.getElementById('thread').textContent")
        assert "Write a slogan." in texts and "Published." in texts


def test_a_run_of_another_process_advances_on_the_open_page(
    browser: DevTools, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    with studio(url, f"{FLOWS}:build_slow") as served:
        writer = subprocess.Popen(
            [
                *(sys.executable, "-m", "flowlib", "run", f"{FLOWS}:build_slow", "go"),
                *("--store", url, "--run-id", "live"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        try:
            deadline = time.monotonic() + 120
            while served.request("GET", "/api/runs/live")[0] != 200:
                assert time.monotonic() < deadline and writer.poll() is None
                time.sleep(0.1)
            _open_run(browser, served.base, "live", 0)
            browser.evaluate("window.notReloaded = true")
            first = browser.evaluate("window.studio.steps")
            wait_for(browser, f"window.studio.steps > {first}", timeout=120)
            shots = os.environ.get("STUDIO_SCREENSHOTS")  # docs/studio-run.png
            if shots:
                wait_for(browser, "window.studio.steps >= 5", timeout=60)
                screenshot(browser, Path(shots) / "studio-run.png")
            assert writer.wait(timeout=120) == 0
            wait_for(browser, "window.studio.steps === 12", timeout=60)
            assert browser.evaluate("window.notReloaded") is True
            wait_for(browser, "document.getElementById('run-status').textContent !== 'running'")
            log = browser.evaluate("window.studio.log")
        finally:
            if writer.poll() is None:
                writer.kill()
                writer.wait()
        steps = served.get("/api/runs/live")["steps"]
    # The delay from each turn's checkpoint to the page showing it (same clock).
    delays = []
    for number, step in enumerate(steps, 1):
        shown = next((e["at"] / 1000 for e in log if e["steps"] >= number), None)
        if shown is not None and number > first:
            delays.append(shown - step["created_at"])
    assert delays and all(d > -0.5 for d in delays), delays
    report = os.environ.get("STUDIO_MEASURE")
    if report:
        Path(report).write_text(json.dumps({"delays": delays}))


def test_fork_at_step_3_from_the_page(browser: DevTools, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    _store_runs(url, build, "original")
    with studio(url, f"{FLOWS}:build") as served:
        _open_run(browser, served.base, "original", 5)
        browser.evaluate(
            "(() => { const s = document.getElementById('slider');"
            " s.value = '3'; s.dispatchEvent(new Event('input')); })()"
        )
        assert browser.evaluate("document.body.dataset.step") == "3"
        browser.evaluate("document.getElementById('fork').click()")
        fork = wait_for(
            browser,
            "location.hash.startsWith('#/run/') && location.hash !== '#/run/original'"
            " && location.hash.slice(6)",
        )
        wait_for(browser, "window.studio.steps === 3")
        original = served.get("/api/runs/original")
        forked = served.get(f"/api/runs/{fork}")
        assert forked["run"]["forked_from"] == ["original", original["steps"][2]["checkpoint_id"]]
        assert forked["steps"] == original["steps"][:3]
        shown = browser.evaluate("document.getElementById('run-facts').textContent")
        assert "forked from original" in shown


def test_a_waiting_run_is_answered_from_the_page_once(browser: DevTools, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    _store_runs(url, build_ask, "asks", task="Help me pick.")
    with studio(url, f"{FLOWS}:build_ask") as served:
        waiting = served.get("/api/runs/asks")
        assert len(waiting["pending"]) == 1, waiting
        request = waiting["pending"][0]["request_id"]
        _open_run(browser, served.base, "asks", 1)
        wait_for(browser, f"!!document.querySelector('[data-request=\"{request}\"]')")
        browser.evaluate(
            f"(() => {{ const box = document.querySelector('[data-request=\"{request}\"]');"
            " box.querySelector('textarea').value = 'Blue.';"
            " box.querySelector('button.answer').click(); })()"
        )
        wait_for(browser, "window.studio.steps >= 2", timeout=60)
        run = served.get("/api/runs/asks")
        assert "Blue." in [m["text"] for m in run["messages"]]
        assert [p["request_id"] for p in run["pending"]] != [request]
        status, error = served.request(
            "POST", "/api/runs/asks/answer", {"request_id": request, "text": "Red."}
        )
        assert status == 409, (status, error)
        assert "answered" in error["error"]
        assert "Red." not in [m["text"] for m in served.get("/api/runs/asks")["messages"]]


def test_hostile_message_text_stays_text(browser: DevTools, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    _store_runs(url, build_hostile, "<b>hostile</b>", task="<img src=x onerror=alert(1)>")
    with studio(url) as served:  # the flow is not named: drawn from the stored graph
        open_page(browser, served.base + "/")
        assert _rows(browser, 1) == ["<b>hostile</b>"]
        open_page(browser, served.base + "/#/run/" + "%3Cb%3Ehostile%3C%2Fb%3E")
        wait_for(browser, "window.studio.steps === 1")
        assert browser.evaluate("document.querySelector('#messages pre').textContent") == HOSTILE
        assert browser.evaluate("document.getElementById('run-title').textContent") == (
            "Run <b>hostile</b>"
        )
        assert browser.evaluate("typeof window.pwned") == "undefined"
        assert (
            browser.evaluate("document.querySelectorAll('main img, main script, main b').length")
            == 0
        )
        thread = browser.evaluate("document.getElementById('thread').textContent")
        assert "<img src=x onerror=alert(1)>" in thread


def test_edit_then_continue_from_the_page(browser: DevTools, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    _store_runs(url, build_ask, "asks", task="Help me pick.")
    with studio(url, f"{FLOWS}:build_ask") as served:
        _open_run(browser, served.base, "asks", 1)
        browser.evaluate(
            "document.getElementById('edit-text').value = 'Prefer <i>green</i>.';"
            "document.getElementById('edit').click()"
        )
        wait_for(browser, "window.studio.steps >= 2", timeout=60)
        texts = [m["text"] for m in served.get("/api/runs/asks")["messages"]]
        assert "Prefer <i>green</i>." in texts, texts
        wait_for(browser, "document.getElementById('thread').textContent.includes('<i>green</i>')")


def test_a_message_is_replaced_from_the_page_then_the_run_goes_on(
    browser: DevTools, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    _store_runs(url, build_ask, "asks", task="Help me pick.")
    new_text = "Help me pick a <b>hat</b> & go on"
    with studio(url, f"{FLOWS}:build_ask") as served:
        before = served.get("/api/runs/asks")["messages"]
        assert before[0]["text"] == "Help me pick."
        _open_run(browser, served.base, "asks", 1)
        # Each text message of the whole thread has a Replace button: open the task's.
        browser.evaluate(
            "document.querySelector('#thread [data-index=\"0\"] .replace-open').click()"
        )
        wait_for(browser, "!!document.querySelector('#thread .replacer textarea')")
        browser.evaluate(
            "(() => { const a = document.querySelector('#thread .replacer textarea');"
            f" a.value = {json.dumps(new_text)}; a.dispatchEvent(new Event('input'));"
            " document.querySelector('#thread .replace-continue').click(); })()"
        )
        wait_for(browser, "window.studio.steps >= 2", timeout=60)
        after = served.get("/api/runs/asks")["messages"]
        # Replaced in place (same source, same position), not appended; the run went on.
        assert (after[0]["source"], after[0]["text"]) == (before[0]["source"], new_text)
        assert [m["text"] for m in after].count(new_text) == 1
        assert "Help me pick." not in [m["text"] for m in after]
        assert len(after) > len(before)
        wait_for(
            browser,
            "document.querySelector('#thread [data-index=\"0\"] pre').textContent === "
            + json.dumps(new_text),
        )
        assert browser.evaluate("document.querySelectorAll('#thread b').length") == 0
