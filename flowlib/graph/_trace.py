"""A record of the path one run took: which nodes ran, in what order, and which edges fired."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["RunTrace", "TraceObserver"]


class TraceObserver(Protocol):
    """Told about every change to a [`RunTrace`][flowlib.graph.RunTrace], as it happens.

    Add one with [`RunTrace.add_observer`][flowlib.graph.RunTrace.add_observer]; e.g.
    [`RunTimeline`][flowlib.testing.RunTimeline] records the interleaving of starts and
    firings this way.
    """

    def on_start(self, trace: RunTrace, step: int) -> None:
        """Step ``step`` started (``trace.step_nodes[step]`` is its node)."""

    def on_fire(self, trace: RunTrace, position: int) -> None:
        """An edge fired (``trace.fired[position]`` is the firing)."""

    def on_clear(self, trace: RunTrace) -> None:
        """The trace was cleared: a new run starts."""


@dataclass
class RunTrace:
    """The path of the most recent run of a team.

    The executor writes it through [`start`][flowlib.graph.RunTrace.start],
    [`fire`][flowlib.graph.RunTrace.fire] and [`clear`][flowlib.graph.RunTrace.clear],
    which tell the trace's observers.

    Attributes:
        names: Node names, indexed by node number.
        step_nodes: The node started at each step (step ``i`` is ``step_nodes[i]``).
        fired: ``(step, edge index)`` for every edge that fired; ``step`` is the step of
            the source's turn.
        edge_ends: ``(source, target)`` names by edge index.
        stop_reason: Why the run stopped, once it has.
        attempts: For each step that took more than one attempt (a node's retry policy),
            how many it took.
        cache_hits: The steps answered from their node's cache, in order.
        instances: ``(step, "<target>[i]")`` for every map instance that finished, in the
            order they finished (the step is the map target's turn).
    """

    names: list[str]
    edge_ends: list[tuple[str, str]]
    step_nodes: list[int] = field(default_factory=list)
    fired: list[tuple[int, int]] = field(default_factory=list)
    stop_reason: str | None = None
    attempts: dict[int, int] = field(default_factory=dict)
    cache_hits: list[int] = field(default_factory=list)
    instances: list[tuple[int, str]] = field(default_factory=list)
    _observers: list[TraceObserver] = field(
        default_factory=list, init=False, repr=False, compare=False
    )

    def add_observer(self, observer: TraceObserver) -> None:
        """Tell ``observer`` about every later start, firing and clear."""
        self._observers.append(observer)

    def remove_observer(self, observer: TraceObserver) -> None:
        """Stop telling ``observer`` (no error if it was not added)."""
        if observer in self._observers:
            self._observers.remove(observer)

    def start(self, node: int) -> int:
        """Record that ``node`` starts a turn; return the turn's step."""
        step = len(self.step_nodes)
        self.step_nodes.append(node)
        for observer in self._observers:
            observer.on_start(self, step)
        return step

    def fire(self, step: int, edge: int) -> None:
        """Record that edge ``edge`` fired for the turn at ``step``."""
        self.fired.append((step, edge))
        if self._observers:
            position = len(self.fired) - 1
            for observer in self._observers:
                observer.on_fire(self, position)

    def note_attempts(self, step: int, attempts: int, *, cache_hit: bool = False) -> None:
        """Record how many attempts the turn at ``step`` took and whether its node's cache
        answered it."""
        if attempts > 1:
            self.attempts[step] = attempts
        if cache_hit:
            self.cache_hits.append(step)

    def note_instance(self, step: int, name: str) -> None:
        """Record that map instance ``name`` of the turn at ``step`` finished."""
        self.instances.append((step, name))

    def instance_counts(self) -> dict[int, int]:
        """For each map turn (by step), how many instances finished in this run."""
        counts: dict[int, int] = {}
        for step, _ in self.instances:
            counts[step] = counts.get(step, 0) + 1
        return counts

    def clear(self) -> None:
        """Forget the previous run's path (a new run starts)."""
        self.step_nodes.clear()
        self.fired.clear()
        self.attempts.clear()
        self.cache_hits.clear()
        self.instances.clear()
        self.stop_reason = None
        for observer in self._observers:
            observer.on_clear(self)

    @property
    def steps(self) -> list[str]:
        """The names of the nodes in the order they started."""
        return [self.names[node] for node in self.step_nodes]

    @property
    def fired_edges(self) -> list[tuple[int, str, str]]:
        """``(step, source, target)`` for every edge that fired, in firing order."""
        return [(step, *self.edge_ends[edge]) for step, edge in self.fired]

    @property
    def visited(self) -> set[str]:
        """The names of the nodes that ran at least once."""
        return {self.names[node] for node in self.step_nodes}
