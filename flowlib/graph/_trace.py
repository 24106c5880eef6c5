"""A record of the path one run took: which nodes ran, in what order, and which edges fired."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["RunTrace"]


@dataclass
class RunTrace:
    """The path of the most recent run of a team.

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
