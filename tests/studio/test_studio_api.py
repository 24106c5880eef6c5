"""The studio's JSON API and its guard, against a real ``flowlib studio`` process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _server import FLOWS, studio
from flows import build

from flowlib.checkpoint import SQLiteCheckpointStore, open_store

pytestmark = pytest.mark.timeout(300)


def _stored_runs(path: Path, *run_ids: str, task: str = "Write a slogan.") -> None:
    async def go() -> None:
        store = SQLiteCheckpointStore(str(path))
        try:
            for run_id in run_ids:
                await build(store).run(task=task, run_id=run_id)
        finally:
            await store.close()

    asyncio.run(go())


def test_runs_and_a_run_of_a_sqlite_store(tmp_path: Path) -> None:
    _stored_runs(tmp_path / "runs.db", "first", "second")
    with studio(f"sqlite:///{tmp_path / 'runs.db'}", f"{FLOWS}:build") as served:
        listing = served.get("/api/runs")
        assert [r["run_id"] for r in listing["runs"]] == ["second", "first"]
        row = listing["runs"][0]
        assert (row["status"], row["turns"], row["flow"], row["forked_from"]) == (
            "complete",
            5,
            "flows",
            None,
        )
        assert {"updated", "tokens", "prompt_tokens", "completion_tokens"} <= set(row)
        page = served.get("/api/runs?limit=1")
        assert [r["run_id"] for r in page["runs"]] == ["second"]
        after = served.get(f"/api/runs?limit=1&cursor={page['next_cursor']}")
        assert [r["run_id"] for r in after["runs"]] == ["first"] and after["next_cursor"] is None
        assert served.get("/api/runs?status=failed")["runs"] == []
        run = served.get("/api/runs/first")
        assert [s["node"] for s in run["steps"]] == [
            "writer",
            "critic",
            "writer",
            "critic",
            "publish",
        ]
        assert run["steps"][1]["edges"] == [["critic", "writer"]]
        assert run["steps"][3]["edges"] == [["critic", "publish"]]
        assert [m["text"] for m in run["steps"][3]["messages"]] == ["APPROVE"]
        assert run["messages"][0]["text"] == "Write a slogan."
        assert run["svg"].lstrip().startswith("<?xml") or "<svg" in run["svg"]
        assert run["pending"] == []
        status, error = served.request("GET", "/api/runs/nope")
        assert status == 404 and "nope" in error["error"]
        status, error = served.request("GET", "/api/runs?limit=0")
        assert status == 400


def test_fork_at_step_3_starts_with_the_first_three_steps(tmp_path: Path) -> None:
    _stored_runs(tmp_path / "runs.db", "original")
    with studio(f"sqlite:///{tmp_path / 'runs.db'}", f"{FLOWS}:build") as served:
        original = served.get("/api/runs/original")
        third = original["steps"][2]
        status, made = served.request(
            "POST", "/api/runs/original/fork", {"checkpoint_id": third["checkpoint_id"]}
        )
        assert status == 201, made
        fork = served.get(f"/api/runs/{made['run_id']}")
        assert fork["run"]["forked_from"] == ["original", third["checkpoint_id"]]
        assert fork["run"]["status"] == "stopped"
        assert fork["steps"] == original["steps"][:3]

        async def threads() -> tuple[list[object], list[object]]:
            store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
            try:
                forked = await store.load(made["run_id"])
                source = await store.load("original", upto=third["checkpoint_id"])
                return forked.messages, source.messages
            finally:
                await store.close()

        forked, source = asyncio.run(threads())
        assert forked == source and len(forked) == 4  # the task and three turns
        # Resuming the fork runs it on from step 3, in the studio's process.
        status, reply = served.request("POST", f"/api/runs/{made['run_id']}/resume", {})
        assert status == 200, reply
        for _ in range(200):
            fork = served.get(f"/api/runs/{made['run_id']}")
            if fork["run"]["status"] == "complete":
                break
            asyncio.run(asyncio.sleep(0.05))
        assert fork["run"]["status"] == "complete", fork
        assert [s["node"] for s in fork["steps"]][:3] == ["writer", "critic", "writer"]
        assert len(fork["steps"]) > 3 and fork["steps"][3]["run_id"] == made["run_id"]
        status, error = served.request("POST", "/api/runs/original/fork", {"checkpoint_id": 99})
        assert status == 400 and "99" in error["error"]


def test_start_and_delete_from_the_api(tmp_path: Path) -> None:
    with studio(f"sqlite:///{tmp_path / 'runs.db'}", f"{FLOWS}:build") as served:
        status, made = served.request("POST", "/api/runs", {"flow": "flows", "task": "Go."})
        assert status == 201, made
        run = served.get(f"/api/runs/{made['run_id']}")
        assert run["messages"][0]["text"] == "Go."
        status, error = served.request("POST", "/api/runs", {"flow": "nope", "task": "Go."})
        assert status == 404 and "flows" in error["error"]
        for _ in range(200):
            if served.get(f"/api/runs/{made['run_id']}")["run"]["status"] == "complete":
                break
            asyncio.run(asyncio.sleep(0.05))
        status, _ = served.request("DELETE", f"/api/runs/{made['run_id']}", {})
        assert status == 200
        assert served.get("/api/runs")["runs"] == []


def test_foreign_hosts_and_cross_origin_changes_are_refused(tmp_path: Path) -> None:
    _stored_runs(tmp_path / "runs.db", "r")
    with studio(f"sqlite:///{tmp_path / 'runs.db'}", f"{FLOWS}:build") as served:
        assert served.token is None  # loopback: no token
        # DNS rebinding: a page of evil.example resolved to 127.0.0.1 sends its own Host.
        status, error = served.request("GET", "/api/runs", headers={"host": "evil.example"})
        assert status == 421, error
        # Cross-site request forgery: another origin's page posts to the studio.
        fork = {"checkpoint_id": 2}
        for headers in (
            {"origin": "http://evil.example"},
            {"origin": "null"},
            {"sec-fetch-site": "cross-site"},
            {"content-type": "text/plain"},
        ):
            status, error = served.request("POST", "/api/runs/r/fork", fork, headers=headers)
            assert status in (403, 415), (headers, status, error)
            status, error = served.request("DELETE", "/api/runs/r", {}, headers=headers)
            assert status in (403, 415), (headers, status, error)
        assert [r["run_id"] for r in served.get("/api/runs")["runs"]] == ["r"]
        same = {"origin": served.base}
        status, made = served.request("POST", "/api/runs/r/fork", fork, headers=same)
        assert status == 201, made


def test_a_non_loopback_bind_needs_the_token_on_every_request(tmp_path: Path) -> None:
    _stored_runs(tmp_path / "runs.db", "r")
    with studio(f"sqlite:///{tmp_path / 'runs.db'}", host="0.0.0.0") as served:
        assert served.token is not None and len(served.token) >= 20, served.printed
        for path in ("/", "/static/studio.js", "/api/runs", "/api/runs/r", "/api/runs/r/events"):
            status, _ = served.request("GET", path, token=False)
            assert status == 401, path
        status, _ = served.request("GET", "/api/runs?token=wrong", token=False)
        assert status == 401
        status, _ = served.request("DELETE", "/api/runs/r", {}, token=False)
        assert status == 401
        assert [r["run_id"] for r in served.get("/api/runs")["runs"]] == ["r"]
        status, page = served.request("GET", f"/?token={served.token}", token=False)
        assert status == 200 and "flowlib studio" in page


def test_without_the_extra_the_command_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import importlib.util
    import io

    from flowlib.cli import main

    real = importlib.util.find_spec

    def find_spec(name: str, *args: object, **kwargs: object) -> object:
        return None if name == "uvicorn" else real(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    errors = io.StringIO()
    monkeypatch.setattr("sys.stderr", errors)
    code = main(["studio", "--store", f"sqlite:///{tmp_path / 'runs.db'}"], out=io.StringIO())
    assert code != 0
    assert "pip install 'flowlib[studio]'" in errors.getvalue(), errors.getvalue()
    assert "uvicorn" in errors.getvalue()


def test_edit_then_continue(tmp_path: Path) -> None:
    from flows import build_ask

    async def store_one() -> None:
        store = SQLiteCheckpointStore(str(tmp_path / "runs.db"))
        try:
            await build_ask(store).start_run("Help me pick.", run_id="asks")
        finally:
            await store.close()

    asyncio.run(store_one())
    with studio(f"sqlite:///{tmp_path / 'runs.db'}", f"{FLOWS}:build_ask") as served:
        before = served.get("/api/runs/asks")
        edit = {"append": ["Use green."], "author": "tester", "reason": "steer it"}
        status, error = served.request(
            "POST", "/api/runs/asks/edit", {**edit, "replace": {"99": "x"}}
        )
        assert status == 400 and "99" in error["error"]
        status, done = served.request("POST", "/api/runs/asks/edit", {**edit, "continue": True})
        assert status == 200, done
        assert done["checkpoint_id"] == before["run"]["checkpoints"] + 1
        for _ in range(200):
            after = served.get("/api/runs/asks")
            if after["run"]["turns"] > before["run"]["turns"] and not after["run"]["running_here"]:
                break
            asyncio.run(asyncio.sleep(0.05))
        texts = [m["text"] for m in after["messages"]]
        assert "Use green." in texts and texts.index("Use green.") < len(texts) - 1, texts
        assert after["run"]["turns"] > before["run"]["turns"]
