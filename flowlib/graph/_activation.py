"""Activation bookkeeping: when has a node's activation been satisfied?

Incoming edges of a node are grouped by activation group. An ``all`` group activates its
node once every one of its edges has fired since the group last activated; an ``any``
group activates on the first. Different groups of one node are OR-ed.

``any`` groups also *absorb*: when one fires, the other edges of the group whose sources
are already in flight (ready or running) are marked, and their next firing is swallowed.
So in ``b -> (c1, c2) -> b`` with an ``any`` group, ``b`` runs once per round however the
two branches interleave, instead of once per branch. An absorbed mark is dropped when
its source completes, whether or not the edge fired.
"""

from __future__ import annotations

from collections.abc import Callable

from ._plan import ExecutionPlan, PlanEdge

__all__ = ["ActivationTracker"]


class ActivationTracker:
    """Which edges of each ``all`` group have fired, and which edges are absorbed."""

    __slots__ = ("_absorbed", "_fired", "_plan")

    def __init__(self, plan: ExecutionPlan) -> None:
        self._plan = plan
        self._fired: dict[int, set[int]] = {}
        self._absorbed: set[int] = set()

    def reset(self) -> None:
        """Forget every partial join and absorption (a fresh run from the entry)."""
        self._fired.clear()
        self._absorbed.clear()

    def is_absorbed(self, edge: PlanEdge) -> bool:
        """Whether the next firing of ``edge`` will be swallowed (no change)."""
        return edge.index in self._absorbed

    def take_absorbed(self, edge: PlanEdge) -> bool:
        """If ``edge`` is absorbed, clear the mark and return True (its firing is void)."""
        if edge.index in self._absorbed:
            self._absorbed.discard(edge.index)
            return True
        return False

    def fire(self, edge: PlanEdge, in_flight: Callable[[int], bool]) -> bool:
        """Record that ``edge`` fired; return whether its target is now activated.

        Args:
            edge: The edge whose condition passed.
            in_flight: Whether a node is ready or running (for ``any`` absorption).
        """
        group = self._plan.groups[edge.group]
        if group.any:
            for other in group.edges:
                source = self._plan.edges[other].source
                # Edges from the completing node itself are decided in this same
                # completion (and merge into this activation), so they are never absorbed.
                if source != edge.source and in_flight(source):
                    self._absorbed.add(other)
            return True
        if len(group.edges) == 1:
            return True
        fired = self._fired.setdefault(group.index, set())
        fired.add(edge.index)
        if len(fired) == len(group.edges):
            del self._fired[group.index]
            return True
        return False

    def waiting(self) -> list[tuple[int, list[int]]]:
        """Partially satisfied ``all`` groups: ``(group, edges still missing)``."""
        result = []
        for group_id, fired in sorted(self._fired.items()):
            group = self._plan.groups[group_id]
            result.append((group_id, [e for e in group.edges if e not in fired]))
        return result

    # --- persistence ------------------------------------------------------------------

    def dump(self) -> tuple[list[int], list[int]]:
        """The fired edges of partial joins and the absorbed edges, as edge indices."""
        fired = sorted(e for edges in self._fired.values() for e in edges)
        return fired, sorted(self._absorbed)

    def load(self, fired: list[int], absorbed: list[int]) -> None:
        """Restore what ``dump`` returned."""
        self.reset()
        for edge_index in fired:
            group = self._plan.edges[edge_index].group
            self._fired.setdefault(group, set()).add(edge_index)
        self._absorbed.update(absorbed)
