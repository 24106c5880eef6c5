"""A SQL store's snapshot keeps one message per line, and a resume keeps those lines as
text until a message is read (issue 20 item 9: resume time independent of the run's
length). Parsing every stored message on resume was most of a 10,000-turn resume.

SQLite against a file in ``tmp_path``; PostgreSQL against the real server of the
``postgres_dsn`` fixture (tests/_postgres.py).
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from flowlib.checkpoint import (
    CheckpointStore,
    PostgresCheckpointStore,
    SQLiteCheckpointStore,
    fold,
)
from flowlib.checkpoint.internal import MessageDumps, load_to_resume
from flowlib.errors import CheckpointError, StateError
from flowlib.graph import Thread
from flowlib.messages import MessageFactory, TextMessage
from flowlib.testing._store_rules import _run, _write


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """A store's kind and its file or DSN."""
    if request.param == "sqlite":
        return "sqlite", str(tmp_path / "runs.db")
    return "postgres", str(request.getfixturevalue("postgres_dsn"))


def _open(kind: str, where: str) -> CheckpointStore:
    if kind == "sqlite":
        return SQLiteCheckpointStore(where, snapshot_every=4)
    return PostgresCheckpointStore(where, snapshot_every=4)


def _sql(kind: str, where: str, query: str, *params: object) -> list[tuple[object, ...]]:
    if kind == "sqlite":
        with sqlite3.connect(where) as conn:
            return list(conn.execute(query.format(p="?"), params))
    import psycopg

    with psycopg.connect(where, autocommit=True) as conn:
        cur = conn.execute(query.format(p="%s"), params)
        return list(cur.fetchall()) if cur.description else []


async def test_a_resume_keeps_the_snapshot_messages_as_text_until_read(
    where: tuple[str, str],
) -> None:
    kind, path = where
    store = _open(kind, path)
    await store.create_run(_run())
    await _write(store, "r1", 10)  # snapshots at 4 and 8; the newest is kept
    ((checkpoint_id, body),) = _sql(
        kind, path, "SELECT checkpoint_id, body FROM flowlib_snapshots WHERE run_id = {p}", "r1"
    )
    assert checkpoint_id == 8
    assert isinstance(body, str)
    lines = body.split("\n")
    assert body.startswith("v2 ")
    assert len(lines) == 2 + 8  # header, participants, one line per message
    assert lines[2:4] == [
        '{"type":"TextMessage","source":"a","content":"m1"}',
        '{"type":"TextMessage","source":"a","content":"m2"}',
    ]

    expected = fold(await store.records("r1"))
    resumed = await load_to_resume(store, "r1")
    messages = resumed.messages
    assert isinstance(messages, MessageDumps)
    # The snapshot's eight messages are still their text; the two records after it parsed.
    assert [type(item).__name__ for item in messages.raw()] == ["str"] * 8 + ["dict"] * 2
    assert messages.types == {"TextMessage"}
    assert messages[0] == {"type": "TextMessage", "source": "a", "content": "m1"}
    assert type(messages.raw()[0]) is dict and type(messages.raw()[1]) is str  # read once
    assert resumed == expected
    # Callers of `load` get a plain list of their own.
    loaded = await store.load("r1")
    assert type(loaded.messages) is list and loaded == expected
    await store.close()


async def test_snapshots_of_every_format_load_and_a_new_one_is_written_in_lines(
    where: tuple[str, str],
) -> None:
    """Stores written before the line format (a BLAKE2b checksum and one JSON object;
    before that, the JSON alone) still load; the next snapshot is written in lines,
    keeping the messages it did not read as the text they were."""
    kind, path = where
    store = _open(kind, path)
    await store.create_run(_run())
    await _write(store, "r1", 6)
    expected = fold(await store.records("r1", upto=4))
    text = expected.model_dump_json()
    checksum = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
    for old in (f"{checksum} {text}", text):
        _sql(kind, path, "UPDATE flowlib_snapshots SET body = {p} WHERE run_id = 'r1'", old)
        assert await store.load("r1") == fold(await store.records("r1"))
        assert await store.load("r1", upto=4) == expected
    await _write(store, "r1", 2, start=7)  # a snapshot at 8, from the old one at 4
    ((body,),) = _sql(kind, path, "SELECT body FROM flowlib_snapshots WHERE run_id = 'r1'")
    assert isinstance(body, str) and body.startswith("v2 ") and body.count("\n") == 1 + 8
    assert await store.load("r1") == fold(await store.records("r1"))
    await store.close()


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ("replace(body, 'm3', 'mX')", "does not match its checksum"),
        ("substr(body, 1, 12) || 'x' || substr(body, 13)", "does not match its checksum"),
        ("'v2 0000'", "no checksum"),
    ],
)
async def test_an_edited_line_snapshot_is_refused_by_name(
    where: tuple[str, str], edit: str, says: str
) -> None:
    kind, path = where
    store = _open(kind, path)
    await store.create_run(_run())
    await _write(store, "r1", 5)
    _sql(kind, path, f"UPDATE flowlib_snapshots SET body = {edit} WHERE run_id = 'r1'")
    with pytest.raises(CheckpointError, match="flowlib_snapshots") as refused:
        await store.load("r1")
    assert says in str(refused.value)
    assert "run `r1`, checkpoint 4" in str(refused.value)
    await store.close()


def test_a_thread_keeps_text_entries_until_read() -> None:
    first, second = TextMessage(content="x", source="a"), TextMessage(content="y", source="b")
    texts = [first.model_dump_json(), second.model_dump_json()]
    thread = Thread(MessageFactory())
    thread.load(MessageDumps(texts, {"TextMessage"}))
    assert len(thread) == 2
    assert thread.dumps() == [first.dump(), second.dump()]  # unread: as stored
    assert thread[1] == second
    assert list(thread) == [first, second]

    refused = Thread(MessageFactory())
    mystery = MessageDumps([texts[0], '{"type": "Mystery"}'], {"TextMessage", "Mystery"})
    with pytest.raises(StateError, match="type `Mystery` at thread position 1"):
        refused.load(mystery)
    assert len(refused) == 0  # a refused load adds nothing

    damaged = Thread(MessageFactory())
    damaged.load(MessageDumps(['{"type": "TextMessage", "content": 3'], {"TextMessage"}))
    with pytest.raises(StateError, match="thread position 0 that does not load"):
        damaged[0]


async def test_a_resume_does_not_split_the_snapshot_message_lines(
    where: tuple[str, str],
) -> None:
    """The snapshot's message lines stay one text on resume (splitting 10,000 lines was
    a tenth of a 10,000-turn resume); reading a message finds its line from the end,
    and the next snapshot writes the text back as it was."""
    kind, path = where
    store = _open(kind, path)
    await store.create_run(_run())
    await _write(store, "r1", 10)  # the snapshot at 8
    resumed = await load_to_resume(store, "r1")
    messages = resumed.messages
    assert isinstance(messages, MessageDumps)
    block, count, loose = messages.lines()
    assert count == 8 and len(loose) == 2
    assert block.split("\n") == [
        f'{{"type":"TextMessage","source":"a","content":"m{i}"}}' for i in range(1, 9)
    ]
    assert len(messages) == 10
    assert messages[7] == {"type": "TextMessage", "source": "a", "content": "m8"}
    assert messages[-10]["content"] == "m1" and messages[3]["content"] == "m4"
    assert messages.lines()[1] == 8  # reading did not split the text
    assert resumed == fold(await store.records("r1"))

    thread = Thread(MessageFactory())
    thread.load(messages)
    assert len(thread) == 10
    assert thread[7].to_text() == "m8" and thread[-1].to_text() == "m10"
    dumps = thread.dumps(6, 9)
    assert [d["content"] for d in dumps] == ["m7", "m8", "m9"]
    assert dumps[0] == {"type": "TextMessage", "source": "a", "content": "m7"}  # as stored
    assert [m.to_text() for m in thread] == [f"m{i}" for i in range(1, 11)]
    thread.append(TextMessage(content="m11", source="b"))
    assert len(thread) == 11 and thread[-1].to_text() == "m11"
    await store.close()


def test_a_message_text_of_the_wrong_number_of_lines_is_refused() -> None:
    lines = "\n".join(TextMessage(content=c, source="a").model_dump_json() for c in "xyz")
    short = MessageDumps.of_lines(lines, 4, {"TextMessage"})
    assert len(short) == 4
    with pytest.raises(CheckpointError, match="holds 3 message lines where its state lists 4"):
        short[0]
    thread = Thread(MessageFactory())
    thread.load(MessageDumps.of_lines(lines, 2, {"TextMessage"}))
    with pytest.raises(StateError, match="thread position 1 that does not load"):
        thread[1]
    exact = MessageDumps.of_lines(lines, 3, {"TextMessage"})
    assert [m["content"] for m in exact] == ["x", "y", "z"]


async def test_a_snapshot_read_as_utf8_bytes_is_the_snapshot_read_as_text(tmp_path: Path) -> None:
    """SQLite reads a snapshot as the UTF-8 bytes of its text (the checksum is over the
    bytes; only the message lines are decoded): the same state as from the text."""
    from flowlib.checkpoint._sql import snapshot_body, snapshot_from_body

    store = SQLiteCheckpointStore(tmp_path / "runs.db", snapshot_every=4)
    await store.create_run(_run())
    await _write(store, "r1", 4)
    folded = await store.load("r1")
    folded.messages[1]["content"] = "naïve ✓"  # not ASCII
    body = snapshot_body(folded)
    from_text = snapshot_from_body(body, "r1", 4)
    from_bytes = snapshot_from_body(body.encode(), "r1", 4)
    assert from_bytes == from_text == folded
    assert from_bytes.messages[1]["content"] == "naïve ✓"
    damaged = body.encode().replace("✓".encode(), b"\xff\xfe\xfd")
    with pytest.raises(CheckpointError, match="checkpoint 4: the snapshot does not match"):
        snapshot_from_body(damaged, "r1", 4)
    with pytest.raises(CheckpointError, match="not UTF-8 text"):
        snapshot_from_body(damaged, "r1", 4, verify=False)
    await store.close()


async def test_records_after_a_snapshot_are_folded_without_building_models(
    tmp_path: Path,
) -> None:
    """``load`` folds the records after the snapshot as plain rows when each is as
    flowlib wrote it (its checksum matches): the same state as from the models. A row
    without a checksum (written before checksums) or an edited one takes the full way,
    which names what is wrong."""
    from flowlib.checkpoint._fold import FoldRow
    from flowlib.checkpoint._sql import RECORD_COLUMNS, records_from_rows, records_to_fold

    path = tmp_path / "runs.db"
    store = SQLiteCheckpointStore(path, snapshot_every=0)
    await store.create_run(_run())
    await _write(store, "r1", 6)
    expected = fold(await store.records("r1"))
    await store.close()

    def rows() -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
        with sqlite3.connect(path) as conn:
            return (
                list(conn.execute(f"SELECT {RECORD_COLUMNS} FROM flowlib_records ORDER BY 2")),
                list(conn.execute("SELECT checkpoint_id, node, body FROM flowlib_messages")),
            )

    fast = records_to_fold(*rows())
    assert all(type(record) is FoldRow for record in fast)
    assert fold(fast) == expected == fold(records_from_rows(*rows(), to_fold=True))
    assert (await SQLiteCheckpointStore(path).load("r1")) == expected

    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE flowlib_records SET checksum = NULL WHERE checkpoint_id = 3")
    slow = records_to_fold(*rows())
    assert all(type(record) is not FoldRow for record in slow) and fold(slow) == expected

    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE flowlib_records SET turn = turn + 1 WHERE checkpoint_id = 5")
    with pytest.raises(CheckpointError, match=r"checkpoint 5: the record .* checksum"):
        records_to_fold(*rows())
