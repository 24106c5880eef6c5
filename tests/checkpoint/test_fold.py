"""fold(): the records of a run add up to its thread, bookkeeping and participants."""

from __future__ import annotations

import pytest

from flowlib.checkpoint import CheckpointRecord, base_record, diff_state, fold
from flowlib.errors import CheckpointError


def _msg(text: str, source: str = "a") -> dict[str, object]:
    return {"type": "TextMessage", "source": source, "content": text}


def _chain() -> list[CheckpointRecord]:
    s1 = {"ctx": [_msg("task", "user")]}
    s2 = {"ctx": [_msg("task", "user"), _msg("a1")]}
    return [
        CheckpointRecord(
            run_id="r",
            checkpoint_id=1,
            kind="start",
            turn=0,
            created_at=1.0,
            messages=[_msg("task", "user")],
            message_nodes=[None],
            bookkeeping={"ready": ["a"]},
        ),
        CheckpointRecord(
            run_id="r",
            checkpoint_id=2,
            kind="turn",
            turn=1,
            node="a",
            created_at=2.0,
            messages=[_msg("a1")],
            message_nodes=["a"],
            bookkeeping={"ready": ["b"]},
            participants={"a": diff_state(None, s1)},
        ),
        CheckpointRecord(
            run_id="r",
            checkpoint_id=3,
            kind="turn",
            turn=2,
            node="b",
            created_at=3.0,
            messages=[_msg("b1", "b")],
            message_nodes=["b"],
            bookkeeping={"ready": []},
            participants={"a": diff_state(s1, s2), "b": {"set": {"n": 1}}},
        ),
        CheckpointRecord(
            run_id="r",
            checkpoint_id=4,
            kind="stop",
            turn=2,
            created_at=4.0,
            stop_reason="done",
        ),
    ]


def test_fold_adds_up_the_records() -> None:
    folded = fold(_chain())
    assert [m["content"] for m in folded.messages] == ["task", "a1", "b1"]
    assert folded.message_nodes == [None, "a", "b"]
    assert folded.bookkeeping == {"ready": []}  # the stop record kept it
    assert folded.participants == {
        "a": {"ctx": [_msg("task", "user"), _msg("a1")]},
        "b": {"n": 1},
    }
    assert (folded.turn, folded.last_checkpoint, folded.last_kind) == (2, 4, "stop")
    assert folded.stop_reason == "done"


def test_fold_upto_a_checkpoint() -> None:
    folded = fold(_chain()[:2])
    assert [m["content"] for m in folded.messages] == ["task", "a1"]
    assert folded.bookkeeping == {"ready": ["b"]}
    assert folded.participants == {"a": {"ctx": [_msg("task", "user")]}}
    assert folded.stop_reason is None


def test_base_record_folds_to_the_same_state() -> None:
    records = _chain()
    folded = fold(records[:3])
    base = base_record(folded)
    assert base.kind == "base" and base.checkpoint_id == 3
    assert fold([base, records[3]]) == fold(records)
    fork = base_record(folded, run_id="fork", checkpoint_id=1)
    assert fold([fork]).model_dump(exclude={"run_id", "last_checkpoint", "last_kind"}) == (
        folded.model_dump(exclude={"run_id", "last_checkpoint", "last_kind"})
    )


def test_empty_fold_needs_a_run_id() -> None:
    assert fold([], run_id="r").messages == []
    with pytest.raises(CheckpointError, match="run_id"):
        fold([])


def test_gaps_and_foreign_records_are_refused() -> None:
    records = _chain()
    with pytest.raises(CheckpointError, match="consecutive"):
        fold([records[0], records[2]])
    with pytest.raises(CheckpointError, match="missing"):
        fold(records[1:])
    other = records[1].model_copy(update={"run_id": "x"})
    with pytest.raises(CheckpointError, match="Cannot fold"):
        fold([records[0], other])
    bad = records[1].model_copy(update={"message_nodes": []})
    with pytest.raises(CheckpointError, match="corrupt"):
        fold([records[0], bad])
