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
    """

    names: list[str]
    edge_ends: list[tuple[str, str]]
    step_nodes: list[int] = field(default_factory=list)
    fired: list[tuple[int, int]] = field(default_factory=list)
    stop_reason: str | None = None
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

    def clear(self) -> None:
        """Forget the previous run's path (a new run starts)."""
        self.step_nodes.clear()
        self.fired.clear()
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
