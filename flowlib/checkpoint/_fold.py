"""Folding a run's records into the state to resume or fork from."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, NamedTuple, cast

from ..errors import CheckpointError
from ._dumps import MessageDumps
from ._patch import apply_patch
from ._types import CheckpointRecord, FoldedRun, StepKind

__all__ = ["FoldRow", "FoldedRun", "base_record", "fold"]


class FoldRow(NamedTuple):
    """A stored record read only to be folded (``load``): what ``fold`` reads of a
    ``CheckpointRecord``, without building the model (the store checked each value)."""

    run_id: str
    checkpoint_id: int
    kind: StepKind
    turn: int
    stop_reason: str | None
    messages: list[dict[str, Any]]
    message_nodes: list[str | None]
    bookkeeping: dict[str, Any]
    participants: dict[str, Any]


def fold(
    records: Iterable[CheckpointRecord | FoldRow],
    *,
    run_id: str | None = None,
    start: FoldedRun | None = None,
) -> FoldedRun:
    """Add up a run's records, oldest first, into the state after the last one.

    A ``base`` record (a fork's first record, or pruned records folded into one) is a
    full snapshot: folding restarts from it. Every other record appends its messages,
    replaces the bookkeeping (an empty bookkeeping keeps the previous one) and patches
    the participants it names.

    Args:
        records: The run's records in order (``store.records(run_id, upto=...)``).
        run_id: The run's id, used when ``records`` is empty.
        start: The run's state at the checkpoint before the first of ``records`` (a
            stored snapshot); it is not changed. Default: fold from the run's start.

    Raises:
        CheckpointError: The records are not one run's, or not consecutive (a missing or
            reordered checkpoint), or a patch does not fit.
    """
    # Plain locals while folding (setting attributes of a pydantic model costs ~10x).
    started = start is not None
    current = start.run_id if start is not None else None
    messages: list[dict[str, Any]] | MessageDumps = []
    if start is not None:
        # A snapshot's messages stay text until read (``MessageDumps``).
        given = start.messages
        messages = given.copy() if isinstance(given, MessageDumps) else list(given)
    nodes = list(start.message_nodes) if start is not None else []
    bookkeeping = start.bookkeeping if start is not None else {}
    participants = dict(start.participants) if start is not None else {}
    turn = start.turn if start is not None else 0
    last = start.last_checkpoint if start is not None else 0
    last_kind = start.last_kind if start is not None else None
    stop_reason = start.stop_reason if start is not None else None
    owned: dict[int, Any] = {}
    for record in records:
        if not started:
            if record.kind != "base" and record.checkpoint_id != 1:
                raise CheckpointError(
                    f"Run `{record.run_id}` starts at checkpoint {record.checkpoint_id}, "
                    "not 1 or a `base` record: earlier records are missing."
                )
            started = True
            current = record.run_id
        elif record.run_id != current:
            raise CheckpointError(
                f"Cannot fold records of run `{record.run_id}` into run `{current}`."
            )
        elif record.checkpoint_id != last + 1:
            raise CheckpointError(
                f"Run `{current}`: checkpoint {record.checkpoint_id} follows "
                f"{last}; records must be consecutive."
            )
        if len(record.message_nodes) != len(record.messages):
            raise CheckpointError(
                f"Run `{record.run_id}` checkpoint {record.checkpoint_id} has "
                f"{len(record.messages)} messages but {len(record.message_nodes)} "
                "publishers: the record is corrupt."
            )
        if record.kind == "base":
            messages = list(record.messages)
            nodes = list(record.message_nodes)
            participants = {}
            bookkeeping = {}
        else:
            messages.extend(record.messages)
            nodes.extend(record.message_nodes)
        if record.bookkeeping:
            bookkeeping = record.bookkeeping
        for name, patch in record.participants.items():
            participants[name] = _apply(participants.get(name), patch, owned)
        turn = record.turn
        last = record.checkpoint_id
        last_kind = record.kind
        stop_reason = record.stop_reason
    if current is None:
        if run_id is None:
            raise CheckpointError("Cannot fold no records without a `run_id`.")
        current = run_id
    return FoldedRun.model_construct(
        run_id=current,
        # `MessageDumps` reads like the list it stands for (``load`` gives callers a list).
        messages=cast("list[dict[str, Any]]", messages),
        message_nodes=nodes,
        bookkeeping=bookkeeping,
        participants=participants,
        turn=turn,
        last_checkpoint=last,
        last_kind=last_kind,
        stop_reason=stop_reason,
    )


def _apply(old: Any, patch: Any, owned: dict[int, Any]) -> Any:
    """``apply_patch``, but the lists and dicts this fold made (``owned``, by id, kept
    alive there) are changed in place: an agent's context that grows by one message per
    record costs one append per record, not a copy of the context."""
    if type(patch) is dict and len(patch) == 1:
        if "append" in patch:
            items = patch["append"]
            if type(old) is list and type(items) is list:
                if id(old) in owned:
                    old.extend(items)
                    return old
                made = [*old, *items]
                owned[id(made)] = made
                return made
        elif "update" in patch:
            update = patch["update"]
            if type(old) is dict and type(update) is dict:
                result = old if id(old) in owned else dict(old)
                owned[id(result)] = result
                for key, sub in update.items():
                    result[key] = _apply(old.get(key), sub, owned)
                return result
    return apply_patch(old, patch)


def base_record(
    folded: FoldedRun,
    *,
    run_id: str | None = None,
    checkpoint_id: int | None = None,
    created_at: float | None = None,
) -> CheckpointRecord:
    """One ``base`` record holding the whole of ``folded``: the first record of a fork
    (``run_id=new_id, checkpoint_id=1``) or what `prune()` leaves of old records.

    Args:
        folded: The state to snapshot.
        run_id: The record's run (default: ``folded.run_id``).
        checkpoint_id: The record's id (default: ``folded.last_checkpoint``).
        created_at: Unix time (default: now).
    """
    return CheckpointRecord(
        run_id=folded.run_id if run_id is None else run_id,
        checkpoint_id=folded.last_checkpoint if checkpoint_id is None else checkpoint_id,
        kind="base",
        turn=folded.turn,
        stop_reason=folded.stop_reason,
        created_at=time.time() if created_at is None else created_at,
        messages=list(folded.messages),
        message_nodes=list(folded.message_nodes),
        bookkeeping=folded.bookkeeping,
        participants={name: {"set": state} for name, state in folded.participants.items()},
    )
