"""The command line for stored runs: store URLs, ``run --store``, ``runs ...`` and
``render --store --run``, against real SQLite files (and PostgreSQL for the URL)."""

from __future__ import annotations

import asyncio
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from flowlib.checkpoint import (
    CheckpointRecord,
    InMemoryCheckpointStore,
    PostgresCheckpointStore,
    RunRecord,
    SQLiteCheckpointStore,
    open_store,
)
from flowlib.cli import main
from flowlib.errors import CheckpointArgumentError, FlowlibError

FLOW = """
from flowlib.teams import DiGraphBuilder, GraphFlow


def draft(messages):
    return "draft"


def review(messages):
    return "APPROVE"


def publish(messages):
    return "done"


def _builder():
    builder = DiGraphBuilder().add_node(draft).add_node(review).add_node(publish)
    builder.add_edge("draft", "review").add_edge("review", "publish", condition="APPROVE")
    builder.add_edge("review", "draft", condition="REVISE")
    return builder.set_entry_point("draft")


def build(checkpoint_store=None):
    builder = _builder()
    return GraphFlow(builder.get_participants(), builder.build(), max_turns=10,
                     checkpoint_store=checkpoint_store)


def plain():
    builder = _builder()
    return GraphFlow(builder.get_participants(), builder.build(), max_turns=10)
"""

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def flow_file(tmp_path: Path) -> Path:
    path = tmp_path / "flow.py"
    path.write_text(FLOW)
    return path


def run_cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(args), out=out)
    return code, out.getvalue()


def _message(source: str, content: str) -> dict[str, object]:
    return {"type": "TextMessage", "source": source, "content": content}


async def _store_run(
    path: Path, run_id: str, replies: list[tuple[str, str]], *, created_at: float = 1.0
) -> None:
    """Write a finished run the way a team records one: a start, one turn per reply, a stop."""
    store = SQLiteCheckpointStore(path)
    try:
        await store.create_run(
            RunRecord(
                run_id=run_id,
                team_type="GraphFlow",
                graph_signature="sig",
                state_version=1,
                created_at=created_at,
                updated_at=created_at,
            )
        )
        await store.append(
            CheckpointRecord(
                run_id=run_id,
                checkpoint_id=1,
                kind="start",
                turn=0,
                created_at=1.0,
                messages=[_message("user", "write")],
                message_nodes=[None],
            ),
            status="running",
        )
        for turn, (node, text) in enumerate(replies, start=1):
            await store.append(
                CheckpointRecord(
                    run_id=run_id,
                    checkpoint_id=turn + 1,
                    kind="turn",
                    turn=turn,
                    node=node,
                    created_at=1.0 + turn,
                    messages=[_message(node, text)],
                    message_nodes=[node],
                ),
                status="running",
            )
        await store.append(
            CheckpointRecord(
                run_id=run_id,
                checkpoint_id=len(replies) + 2,
                kind="stop",
                turn=len(replies),
                stop_reason="Digraph execution is complete",
                created_at=10.0,
            ),
            status="complete",
        )
    finally:
        await store.close()


# --- store URLs -------------------------------------------------------------------------


async def test_open_store_reads_each_url_form(tmp_path: Path, postgres_dsn: str) -> None:
    relative = open_store("sqlite:///runs.db")
    assert isinstance(relative, SQLiteCheckpointStore)
    absolute = tmp_path / "abs.db"
    store = open_store(f"sqlite:///{absolute}")  # four slashes: an absolute path
    assert isinstance(store, SQLiteCheckpointStore)
    assert await store.list_runs() == []
    assert absolute.exists()
    await store.close()
    full = open_store(f"sqlite:///{tmp_path / 'full.db'}?synchronous=FULL")
    assert isinstance(full, SQLiteCheckpointStore)
    assert isinstance(open_store("memory://"), InMemoryCheckpointStore)
    for url in (postgres_dsn, postgres_dsn.replace("postgresql://", "postgres://", 1)):
        pg = open_store(url)
        assert isinstance(pg, PostgresCheckpointStore)
        assert await pg.list_runs() == []
        await pg.close()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("runs.db", "has no scheme"),
        ("mysql://host/db", "unknown scheme `mysql`"),
        ("sqlite://", "names no file"),
        ("sqlite://host/runs.db", "names the host `host`"),
        ("sqlite:///runs.db?mode=ro", "unknown option `mode=ro`"),
        ("postgresql://", "names no PostgreSQL server"),
        ("memory://somewhere", "takes no path"),
    ],
)
def test_bad_store_urls_say_what_to_write(url: str, says: str) -> None:
    with pytest.raises(CheckpointArgumentError, match=r"sqlite:///|postgresql://|memory") as info:
        open_store(url)
    assert says in str(info.value)
    assert isinstance(info.value, (FlowlibError, ValueError))


def test_a_store_url_must_be_a_string() -> None:
    with pytest.raises(CheckpointArgumentError, match="must be a string"):
        open_store(Path("runs.db"))  # type: ignore[arg-type]


def test_a_bad_store_url_is_a_one_line_cli_error(
    flow_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli("runs", "list", "--store", "mysql://x/y")[0] == 1
    err = capsys.readouterr().err
    assert "unknown scheme `mysql`" in err and len(err.strip().splitlines()) == 1


# --- runs list / show / prune / delete ----------------------------------------------------


def test_runs_list_show_prune_delete(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.db"
    replies = [("draft", "draft"), ("review", "APPROVE"), ("publish", "done")]
    asyncio.run(_store_run(db, "r-one", replies))
    asyncio.run(_store_run(db, "r-two", replies[:1], created_at=2.0))
    url = f"sqlite:///{db}"

    code, out = run_cli("runs", "list", "--store", url)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == [
        "RUN",
        "TEAM",
        "STATUS",
        "TURNS",
        "CHECKPOINTS",
        "UPDATED",
        "STOP",
        "REASON",
    ]
    assert lines[1].split()[:5] == ["r-two", "GraphFlow", "complete", "1", "3"]  # newest first
    assert lines[2].split()[:5] == ["r-one", "GraphFlow", "complete", "3", "5"]

    code, out = run_cli("runs", "show", "r-one", "--store", url)
    assert code == 0
    assert "run r-one (GraphFlow): complete, 3 turns" in out
    assert "stop reason: Digraph execution is complete" in out
    history = out.split("checkpoints:")[1].split("messages")[0].strip().splitlines()
    assert [line.split()[:2] for line in history] == [
        ["1", "start"],
        ["2", "turn"],
        ["3", "turn"],
        ["4", "turn"],
        ["5", "stop"],
    ]
    assert history[2].rstrip().endswith("review")
    transcript = out.split("messages (4):")[1].strip().splitlines()
    assert [line.strip() for line in transcript] == [
        "user: write",
        "draft: draft",
        "review: APPROVE",
        "publish: done",
    ]

    code, out = run_cli("runs", "prune", "r-one", "--keep-last", "2", "--store", url)
    assert code == 0 and "2 checkpoint(s) pruned" in out
    code, out = run_cli("runs", "show", "r-one", "--store", url)
    assert "messages (4):" in out  # the thread stays whole
    assert [
        line.split()[1]
        for line in out.split("checkpoints:")[1].split("messages")[0].strip().splitlines()
    ] == ["base", "turn", "stop"]

    code, out = run_cli("runs", "delete", "r-one", "--store", url)
    assert code == 0 and "deleted run r-one" in out
    code, out = run_cli("runs", "list", "--store", url)
    assert "r-one" not in out and "r-two" in out
    capsys.readouterr()
    assert run_cli("runs", "show", "r-one", "--store", url)[0] == 1
    assert "no run `r-one`" in capsys.readouterr().err
    assert run_cli("runs", "delete", "r-one", "--store", url)[0] == 1


def test_runs_list_on_an_empty_store(tmp_path: Path) -> None:
    asyncio.run(_create_empty(tmp_path / "empty.db"))
    code, out = run_cli("runs", "list", "--store", f"sqlite:///{tmp_path / 'empty.db'}")
    assert code == 0 and out.strip() == "no runs"


async def _create_empty(path: Path) -> None:
    store = SQLiteCheckpointStore(path)
    await store.list_runs()
    await store.close()


def test_read_commands_on_a_missing_store_say_so_and_create_nothing(
    flow_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """(Before: `runs list` on a mistyped path made an empty database and said "no
    runs".)"""
    missing = tmp_path / "typo.db"
    url = f"sqlite:///{missing}"
    commands = [
        ("runs", "list", "--store", url),
        ("runs", "show", "r", "--store", url),
        ("runs", "prune", "r", "--keep-last", "1", "--store", url),
        ("runs", "delete", "r", "--store", url),
        ("runs", "resume", "r", f"{flow_file}:build", "--store", url),
        ("render", f"{flow_file}:build", "--store", url, "--run", "r", "-o", "x.svg"),
    ]
    for command in commands:
        capsys.readouterr()
        assert run_cli(*command)[0] == 1, command
        err = capsys.readouterr().err.strip()
        assert "No checkpoint store at" in err and "typo.db" in err, (command, err)
        assert len(err.splitlines()) == 1, err
        assert not missing.exists()


def test_runs_list_filters_and_json(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    for i in range(5):
        asyncio.run(_store_run(db, f"r{i}", [("draft", "draft")], created_at=float(i + 1)))
    asyncio.run(_running(db, "live", created_at=9.0))
    url = f"sqlite:///{db}"

    code, out = run_cli("runs", "list", "--store", url, "--status", "running")
    assert code == 0 and [line.split()[0] for line in out.splitlines()[1:]] == ["live"]
    code, out = run_cli("runs", "list", "--store", url, "--limit", "2", "--json")
    page = json.loads(out)
    assert [r["run_id"] for r in page["runs"]] == ["live", "r4"]
    assert page["runs"][0]["status"] == "running" and page["runs"][1]["turns"] == 1
    code, out = run_cli(
        "runs", "list", "--store", url, "--limit", "2", "--json", "--cursor", page["next_cursor"]
    )
    page = json.loads(out)
    assert [r["run_id"] for r in page["runs"]] == ["r3", "r2"]
    code, out = run_cli(
        "runs", "list", "--store", url, "--json", "--status", "complete", "--status", "failed"
    )
    assert [r["run_id"] for r in json.loads(out)["runs"]] == ["r4", "r3", "r2", "r1", "r0"]
    assert json.loads(out)["next_cursor"] is None
    code, out = run_cli("runs", "list", "--store", url, "--json", "--updated-since", "10.5")
    assert [r["run_id"] for r in json.loads(out)["runs"]] == ["live"]
    code, out = run_cli("runs", "list", "--store", url, "--json", "--flow", "Swarm")
    assert json.loads(out)["runs"] == []
    code, out = run_cli("runs", "list", "--store", url, "--updated-since", "1970-01-01T00:00+00:00")
    assert len(out.splitlines()) == 7
    assert run_cli("runs", "list", "--store", url, "--updated-since", "soon")[0] == 1
    assert run_cli("runs", "list", "--store", url, "--limit", "0")[0] == 1
    assert run_cli("runs", "list", "--store", url, "--cursor", "nonsense")[0] == 1


async def _running(path: Path, run_id: str, *, created_at: float) -> None:
    store = SQLiteCheckpointStore(path)
    await store.create_run(
        RunRecord(
            run_id=run_id,
            team_type="GraphFlow",
            graph_signature="sig",
            state_version=1,
            created_at=created_at,
            updated_at=created_at,
        )
    )
    await store.append(
        CheckpointRecord(
            run_id=run_id,
            checkpoint_id=1,
            kind="start",
            turn=0,
            created_at=11.0,
            messages=[_message("user", "go")],
            message_nodes=[None],
        ),
        status="running",
    )
    await store.close()


def test_runs_show_is_bounded_and_speaks_json(tmp_path: Path) -> None:
    """(Before: a 2,000-turn run printed 4,012 lines.)"""
    db = tmp_path / "runs.db"
    replies = [("draft", f"draft {i}") for i in range(300)]
    asyncio.run(_store_run(db, "long", replies))
    url = f"sqlite:///{db}"
    code, out = run_cli("runs", "show", "long", "--store", url)
    assert code == 0 and len(out.splitlines()) < 120
    assert "... 252 earlier (--limit 0 shows all)" in out  # 302 checkpoints, 50 shown
    assert out.rstrip().endswith("draft: draft 299")
    code, out = run_cli("runs", "show", "long", "--store", url, "--limit", "3")
    assert len(out.splitlines()) < 15
    code, out = run_cli("runs", "show", "long", "--store", url, "--limit", "0")
    assert "messages (301):" in out and len(out.splitlines()) > 600
    code, out = run_cli("runs", "show", "long", "--store", url, "--limit", "2", "--json")
    page = json.loads(out)
    assert page["run"]["run_id"] == "long" and page["run"]["status"] == "complete"
    assert [c["kind"] for c in page["checkpoints"]] == ["turn", "stop"]
    assert page["checkpoints_omitted"] == 300 and page["messages_omitted"] == 299
    assert page["messages"] == [
        {"node": "draft", "message": _message("draft", "draft 298")},
        {"node": "draft", "message": _message("draft", "draft 299")},
    ]
    assert run_cli("runs", "show", "long", "--store", url, "--limit", "-1")[0] == 1


def test_flowlib_store_is_the_default_store(
    flow_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"
    monkeypatch.setenv("FLOWLIB_STORE", f"sqlite:///{db}")
    code, out = run_cli("run", f"{flow_file}:build", "write", "--run-id", "env-run")
    assert code == 0 and db.exists()
    code, out = run_cli("runs", "list")
    assert code == 0 and "env-run" in out
    code, out = run_cli("runs", "show", "env-run", "--json")
    assert json.loads(out)["run"]["status"] == "complete"
    other = tmp_path / "other.db"
    asyncio.run(_create_empty(other))
    code, out = run_cli("runs", "list", "--store", f"sqlite:///{other}")  # --store wins
    assert out.strip() == "no runs"


def test_prune_help_says_pruned_turns_leave_the_run_page(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        run_cli("runs", "prune", "--help")
    text = " ".join(capsys.readouterr().out.split())
    assert "pruned turns no longer show on the run page" in text


def test_an_unreachable_postgres_fails_fast_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """(Before: 30 s and 12 lines of pool warnings.)"""
    import time

    started = time.monotonic()
    code, _ = run_cli("runs", "list", "--store", "postgresql://nobody:pw@127.0.0.1:1/none")
    assert code == 1 and time.monotonic() - started < 10
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "127.0.0.1" in err and "pw" not in err.replace("nobody:***", "")


async def test_a_silent_postgres_fails_after_connect_timeout() -> None:
    """A server that takes the connection and never answers: one error after the
    timeout, not a pool retrying in the background."""
    import socket
    import time

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # connections complete in the backlog; nothing ever answers
        port = silent.getsockname()[1]
        store = PostgresCheckpointStore(
            f"postgresql://nobody@127.0.0.1:{port}/none", connect_timeout=1.0
        )
        started = time.monotonic()
        with pytest.raises(FlowlibError, match=r"within 1 s|timeout"):
            await store.list_runs()
        assert time.monotonic() - started < 8
        await store.close()


def test_runs_need_a_store(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run_cli("runs", "list")
    assert "--store" in capsys.readouterr().err


# --- render --store --run ---------------------------------------------------------------


def _group_texts(svg: Path) -> dict[str, list[str]]:
    """Each node's and edge's drawn texts, by its SVG title (``a->b`` for edges)."""
    found: dict[str, list[str]] = {}
    for group in ET.parse(svg).getroot().iter(f"{SVG}g"):
        title = group.find(f"{SVG}title")
        if title is not None and title.text:
            found[title.text] = [t.text or "" for t in group.iter(f"{SVG}text")]
    return found


def _step_labels(svg: Path) -> set[str]:
    root = ET.parse(svg).getroot()
    return {text.text or "" for text in root.iter(f"{SVG}text")}


def test_render_draws_a_stored_runs_path(flow_file: Path, tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    asyncio.run(
        _store_run(db, "r1", [("draft", "draft"), ("review", "APPROVE"), ("publish", "done")])
    )
    asyncio.run(_store_run(db, "r2", [("draft", "draft")]))
    url = f"sqlite:///{db}"
    full, short = tmp_path / "r1.svg", tmp_path / "r2.svg"
    code, out = run_cli(
        "render", f"{flow_file}:plain", "--store", url, "--run", "r1", "-o", str(full)
    )
    assert code == 0 and "the path of run r1" in out
    code, _ = run_cli(  # --run-id, the new spelling of --run with --store
        "render", f"{flow_file}:plain", "--store", url, "--run-id", "r2", "-o", str(short)
    )
    assert code == 0
    assert {"#1", "#2", "#3"} <= _step_labels(full)
    assert "last run: 3 steps, stopped: Digraph execution is complete" in _step_labels(full)
    assert "#1" in _step_labels(short) and "#3" not in _step_labels(short)
    # Pruned turns lose their order in the store: the path is rebuilt from the messages.
    assert run_cli("runs", "prune", "r1", "--keep-last", "1", "--store", url)[0] == 0
    pruned = tmp_path / "pruned.svg"
    code, _ = run_cli(
        "render", f"{flow_file}:plain", "--store", url, "--run", "r1", "-o", str(pruned)
    )
    assert code == 0 and {"#1", "#2", "#3"} <= _step_labels(pruned)
    assert (
        "last run: 3 steps, stopped: Digraph execution is complete "
        "(path rebuilt from the messages)" in _step_labels(pruned)
    )


def test_render_writes_a_stored_runs_page(flow_file: Path, tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    asyncio.run(
        _store_run(db, "r1", [("draft", "draft"), ("review", "APPROVE"), ("publish", "done")])
    )
    page = tmp_path / "run.html"
    code, out = run_cli(
        "render", f"{flow_file}:plain", "--store", f"sqlite:///{db}", "--run", "r1", "-o", str(page)
    )
    assert code == 0 and "the run page of run r1" in out
    html = page.read_text(encoding="utf-8")
    assert 'max="3"' in html  # one slider step per stored turn
    data = json.loads(html.split('id="run-data">', 1)[1].split("</script>", 1)[0])
    shown = json.dumps(data)
    assert all(word in shown for word in ("draft", "APPROVE", "done"))
    assert "<svg" in html and "<script src" not in html  # self-contained


def test_render_store_options_go_together(
    flow_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(_create_empty(tmp_path / "runs.db"))  # a read command needs the store to exist
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    assert run_cli("render", f"{flow_file}:plain", "--store", url, "-o", "x.svg")[0] == 1
    assert "--store URL needs --run ID" in capsys.readouterr().err
    assert run_cli("render", f"{flow_file}:plain", "--store", url, "--run", "r1")[0] == 1
    assert "needs an output file" in capsys.readouterr().err
    out = tmp_path / "x.svg"
    assert (
        run_cli("render", f"{flow_file}:plain", "--store", url, "--run", "nope", "-o", str(out))[0]
        == 1
    )
    assert "no run `nope`" in capsys.readouterr().err


# --- run --store and runs resume (need the checkpointing teams) ---------------------------


def test_run_without_store_keeps_working(
    flow_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli("run", f"{flow_file}:plain", "write it")  # TASK given positionally
    assert code == 0 and "stop reason:" in out
    # One duration: the Console summary's, not a second "done in" line.
    assert out.count("Duration:") == 1 and "done in" not in out
    assert run_cli("run", f"{flow_file}:plain")[0] == 1
    assert "give the task" in capsys.readouterr().err
    assert run_cli("run", f"{flow_file}:plain", "a", "--task", "b")[0] == 1
    assert "not both" in capsys.readouterr().err
    assert run_cli("run", f"{flow_file}:plain", "a", "--run-id", "x")[0] == 1
    assert "--run-id needs --store" in capsys.readouterr().err


def test_run_with_a_store_needs_a_factory_taking_the_store(
    flow_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    assert run_cli("run", f"{flow_file}:plain", "go", "--store", url)[0] == 1
    assert "takes no `checkpoint_store` argument" in capsys.readouterr().err


def test_run_store_then_list_show_resume(
    flow_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    code, out = run_cli(
        "run", f"{flow_file}:build", "write it", "--store", url, "--run-id", "job-1"
    )
    assert code == 0, capsys.readouterr().err
    assert "run id: job-1" in out
    code, out = run_cli("runs", "list", "--store", url)
    assert out.splitlines()[1].split()[:4] == ["job-1", "GraphFlow", "complete", "3"]
    code, out = run_cli("runs", "show", "job-1", "--store", url)
    transcript = [line.strip() for line in out.split("messages (4):")[1].strip().splitlines()]
    assert transcript == ["user: write it", "draft: draft", "review: APPROVE", "publish: done"]
    # A completed run resumed without a task runs nothing and keeps its record.
    code, out = run_cli("runs", "resume", "job-1", f"{flow_file}:build", "--store", url)
    assert code == 0 and "run id: job-1" in out
    code, out = run_cli("runs", "show", "job-1", "--store", url)
    assert "messages (4):" in out
    code, out = run_cli("run", f"{flow_file}:build", "again", "--store", url)
    assert code == 0
    generated = out.split("run id: ")[1].strip()
    assert len(generated) == 32 and generated != "job-1"
    svg = tmp_path / "job.svg"
    code, _ = run_cli(
        "render", f"{flow_file}:plain", "--store", url, "--run", "job-1", "-o", str(svg)
    )
    assert code == 0 and {"#1", "#2", "#3"} <= _step_labels(svg)
    drawn = _group_texts(svg)  # the exact path: the edges each stored turn fired
    assert "#1" in drawn["draft->review"] and "#2" in drawn["review->publish"]
    assert not [t for t in drawn["review->draft"] if t.startswith("#")]
    assert "last run: 3 steps, stopped: Digraph execution is complete" in _step_labels(svg)


FLAKY = """
import os
from flowlib.teams import DiGraphBuilder, GraphFlow

CALLS = os.environ["FLOWLIB_TEST_CALLS"]


def draft(messages):
    with open(CALLS, "a") as log:
        log.write("draft\\n")
    return "draft"


def review(messages):
    if not os.path.exists(CALLS + ".up"):
        raise RuntimeError("the review service is down")
    return "APPROVE"


def build(checkpoint_store=None):
    builder = DiGraphBuilder().add_node(draft).add_node(review).add_edge("draft", "review")
    return GraphFlow(builder.get_participants(), builder.build(),
                     checkpoint_store=checkpoint_store)
"""


def test_a_failed_run_is_resumed_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "flaky.py"
    flow.write_text(FLAKY)
    calls = tmp_path / "calls.txt"
    monkeypatch.setenv("FLOWLIB_TEST_CALLS", str(calls))
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    assert run_cli("run", f"{flow}:build", "go", "--store", url, "--run-id", "f1")[0] == 1
    assert "the review service is down" in capsys.readouterr().err
    code, out = run_cli("runs", "list", "--store", url)
    assert out.splitlines()[1].split()[:3] == ["f1", "GraphFlow", "failed"]
    (tmp_path / "calls.txt.up").touch()
    code, out = run_cli("runs", "resume", "f1", f"{flow}:build", "--store", url)
    assert code == 0, capsys.readouterr().err
    code, out = run_cli("runs", "show", "f1", "--store", url)
    assert "run f1 (GraphFlow): complete, 2 turns" in out
    transcript = [line.strip() for line in out.split("messages (3):")[1].strip().splitlines()]
    assert transcript == ["user: go", "draft: draft", "review: APPROVE"]
    assert calls.read_text().splitlines() == ["draft"]  # the finished turn never ran again


RECOVERABLE = """
from flowlib.teams import RoundRobinGroupChat
from flowlib.testing import ScriptedAgent


def build(checkpoint_store=None):
    agents = [ScriptedAgent(name, lambda i, _m, name=name: f"{name}{i}") for name in "ab"]
    return RoundRobinGroupChat(agents, max_turns=6, checkpoint_store=checkpoint_store)
"""


class _DiesAtAppend:
    """A store whose appends fail from the n-th on: its process "died" mid-run."""

    def __init__(self, inner: SQLiteCheckpointStore, at: int) -> None:
        self._inner = inner
        self._left = at

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    async def append(self, record: object, **kwargs: object) -> None:
        self._left -= 1
        if self._left < 0:
            raise ConnectionError("the process died")
        await self._inner.append(record, **kwargs)  # type: ignore[arg-type]


def test_runs_recover_resumes_the_runs_whose_executor_died_and_leaves_live_ones(
    tmp_path: Path,
) -> None:
    import importlib.util

    path = tmp_path / "team.py"
    path.write_text(RECOVERABLE)
    spec = importlib.util.spec_from_file_location("recoverable_team", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    db = tmp_path / "runs.db"

    async def setup() -> None:
        store = SQLiteCheckpointStore(db)
        for run_id in ("dead", "alive"):
            with pytest.raises(ConnectionError):
                await module.build(_DiesAtAppend(store, 3)).start_run("go", run_id=run_id)
        await store.acquire_lease("alive", "other-host:7:12345678", ttl=600)  # still executing
        await module.build(store).start_run("go", run_id="done")
        await store.close()

    asyncio.run(setup())
    url = f"sqlite:///{db}"
    code, out = run_cli("runs", "recover", f"{path}:build", "--store", url)
    assert code == 0, out
    assert "dead: Maximum number of turns 6 reached." in out
    assert "recovered 1 of 1 run(s)" in out and "alive" not in out and "done" not in out
    code, out = run_cli("runs", "show", "dead", "--store", url)
    assert "run dead (RoundRobinGroupChat): stopped, 6 turns" in out
    code, out = run_cli("runs", "recover", f"{path}:build", "--store", url)
    assert out.strip() == "no run to recover"


def test_runs_pending_lists_the_requests_runs_wait_for(tmp_path: Path) -> None:
    path = tmp_path / "team.py"
    path.write_text(RECOVERABLE.replace("max_turns=6", "max_turns=1"))
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    assert run_cli("run", f"{path}:build", "go", "--store", url, "--run-id", "ask")[0] == 0
    code, out = run_cli("runs", "pending", "--store", url)
    assert code == 0
    header, row = out.splitlines()
    assert header.split()[:4] == ["RUN", "REQUEST", "ASKED", "BY"]
    assert row.split()[0] == "ask" and row.split()[2:4] == ["user", "a"]
    request_id = row.split()[1]

    async def answer() -> None:
        import importlib.util

        spec = importlib.util.spec_from_file_location("one_turn_team", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        store = SQLiteCheckpointStore(tmp_path / "runs.db")
        await module.build(store).answer("ask", request_id, "go on")
        await store.close()

    asyncio.run(answer())
    code, out = run_cli("runs", "pending", "--store", url)
    assert request_id not in out  # answered; the run waits on a new request now
