"""Forking a stored run: the fork's run and its first record appear together or not at
all, and a fork call that was interrupted can be made again."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ..errors import CheckpointArgumentError, CheckpointError
from ._fold import FoldedRun, base_record
from ._types import CheckpointRecord, CheckpointStore, RunRecord

__all__ = ["fork_run"]


async def fork_run(
    store: CheckpointStore,
    run: RunRecord,
    *,
    check: Callable[[RunRecord], None],
    install: Callable[[FoldedRun], Awaitable[None]],
) -> FoldedRun:
    """Store ``run`` as a fork of ``run.forked_from``; returns the state it starts from.

    The source's records up to the checkpoint are folded and given to ``install`` (the
    team loads them and refuses what does not fit) before anything is stored; then the
    fork's run record and its first (``base``) record are stored in one transaction
    (``create_run(run, first=...)``), so a fork interrupted anywhere, even by a killed
    process, is either whole in the store or absent.

    Calling again with the same ``run`` after an interruption is safe: a fork that is
    absent is made; one that is whole and has not run on (only its ``base`` record) is
    used as it is; a stub left by an older flowlib (the run record without its first
    record) is completed.

    Args:
        store: The store holding the source run.
        run: The fork's run record; ``forked_from`` names ``(source_id, checkpoint_id)``.
        check: Called with each run record the fork starts from (the source, or an
            existing fork); raises if the team cannot resume it (another graph).
        install: Loads the folded state into the team.

    Raises:
        CheckpointArgumentError: ``run.run_id`` exists and is not this fork, or the
            fork has run on since; the source run does not exist.
        CheckpointError: The store failed (nothing is stored, or the fork is whole:
            call again).
    """
    assert run.forked_from is not None
    source_id, checkpoint_id = run.forked_from
    existing = await store.get_run(run.run_id)
    if existing is not None:
        _check_same_fork(existing, run)
        if existing.last_checkpoint == 1:
            check(existing)
            folded = await store.load(run.run_id)
            await install(folded)
            return folded
    source = await store.get_run(source_id)
    if source is None:
        raise CheckpointArgumentError(
            f"fork_from names run `{source_id}`, which this store does not have "
            "(see `store.list_runs()`)."
        )
    check(source)
    folded = await store.load(source_id, upto=checkpoint_id)
    await install(folded)
    base = base_record(folded, run_id=run.run_id, checkpoint_id=1)
    try:
        if existing is not None:  # a stub of an older flowlib: give it its first record
            await store.append(base, status="stopped")
        else:
            await store.create_run(run.model_copy(update={"status": "stopped"}), first=base)
    except CheckpointError:
        # The store may have committed before the error reached us (a lost reply): the
        # fork is ours if the store holds this very base record.
        if not await _holds(store, base):
            raise
    return folded


def _check_same_fork(existing: RunRecord, run: RunRecord) -> None:
    if existing.forked_from != run.forked_from:
        raise CheckpointArgumentError(
            f"Run `{run.run_id}` already exists; fork into a new `run_id`, or resume "
            f"`{run.run_id}` without `fork_from`."
        )
    if existing.last_checkpoint > 1:
        source_id, checkpoint_id = run.forked_from or ("", 0)
        raise CheckpointArgumentError(
            f"Run `{run.run_id}` is already a fork of `{source_id}` at checkpoint "
            f"{checkpoint_id} and has run on since (it has {existing.last_checkpoint} "
            f"checkpoints); resume `{run.run_id}` without `fork_from`, or fork into a new "
            "`run_id`."
        )


async def _holds(store: CheckpointStore, base: CheckpointRecord) -> bool:
    try:
        stored = await store.get_run(base.run_id)
        if stored is None or stored.last_checkpoint < 1:
            return False
        first = (await store.records(base.run_id, upto=1))[0]
    except CheckpointError:
        return False
    return first.model_dump(mode="json") == base.model_dump(mode="json")
