"""The parts of a stored run's page besides its steps: a checkpoint of the timeline, a
pending human request, and a fork's diff against its parent (``_stored.py`` reads them
from a store; ``run_page`` shows them)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["PageCheckpoint", "PageDiffLine", "PageFork", "PageRequest"]


@dataclass
class PageCheckpoint:
    """One checkpoint of the run's timeline: its
    [`CheckpointInfo`][flowlib.checkpoint.CheckpointInfo] and the page step it belongs to.

    Attributes:
        checkpoint_id: Its id (fork and resume name it).
        kind: ``turn``, ``stop``, ``base``, ... (``CheckpointInfo.kind``).
        turn: Agent turns run when it was written.
        node: The node whose turn it records, if any.
        stop_reason: Why the run stopped, for a ``stop`` record.
        created_at: Unix time it was written.
        message_count: Messages the record added.
        step: The page step (1-based) it belongs to; None before the first step.
    """

    checkpoint_id: int
    kind: str
    turn: int
    node: str | None
    stop_reason: str | None
    created_at: float
    message_count: int
    step: int | None = None


@dataclass
class PageRequest:
    """A human request the run waits for (answer it by its id).

    Attributes:
        request_id: The id an answer names.
        asked: Who is asked (e.g. ``user``).
        by: The participant that asked, when recorded.
        question: What was asked.
        created_at: Unix time the run stopped to wait, when recorded.
    """

    request_id: str
    asked: str
    by: str | None
    question: str
    created_at: float | None = None


@dataclass
class PageDiffLine:
    """One message of a fork's diff: ``op`` is ``parent`` (only the parent has it after
    the fork point), ``fork`` (only the fork has it) or ``same`` (both, past the shared
    history, e.g. the same reply given again)."""

    op: str
    source: str
    kind: str
    text: str


@dataclass
class PageFork:
    """A fork's diff against its parent, from the fork point.

    Attributes:
        parent_id: The run it was forked from.
        checkpoint_id: The parent's checkpoint it was forked at.
        shared: Messages both threads start with (the history up to the fork point).
        parent_status: The parent's status now (None: the parent was deleted).
        lines: The messages after the shared history, in thread order.
    """

    parent_id: str
    checkpoint_id: int
    shared: int
    parent_status: str | None
    lines: list[PageDiffLine] = field(default_factory=list)
