"""Helpers of the durability tests: agents that count their finished turns as side
effects, an interruption that fires at a drawn turn and await, and readers of a stored
run's transcript.

A finished turn's side effect is recorded after the agent's last await, in the same
step of the event loop as the turn returns its reply: "the side effect happened" and "the
turn finished" are the same event, so a side effect seen twice is a finished turn that
ran twice.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from flowlib.base import CancellationToken, Response
from flowlib.checkpoint import CheckpointStore, fold
from flowlib.messages import BaseChatMessage
from flowlib.teams import GraphFlow
from flowlib.testing import ScriptedAgent
from flowlib.testing.strategies import DEFAULT_MAX_TURNS, EdgeSpec, GraphSpec

T = TypeVar("T")

Effect = tuple[str, int]
"""A finished turn: (node, the node's turn index from 0)."""


class Ledger:
    """Where finished turns leave their side effect: a list in memory, or lines appended
    to a file (which survive the process being killed)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = None if path is None else os.fspath(path)
        self.entries: list[Effect] = []

    def add(self, node: str, turn: int) -> None:
        if self.path is None:
            self.entries.append((node, turn))
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{node} {turn}\n".encode())
        finally:
            os.close(fd)

    def read(self) -> list[Effect]:
        if self.path is None:
            return list(self.entries)
        if not os.path.exists(self.path):
            return []
        with open(self.path) as handle:
            return [(line.split()[0], int(line.split()[1])) for line in handle if line.strip()]


@dataclass
class Trigger:
    """Interrupts the ``at_turn``-th turn started (0-based, counted over all nodes) by
    calling ``fire`` once: after ``yields`` awaits inside it (``after_effect=False``), or
    once it has finished and left its side effect, before its reply is returned
    (``after_effect=True``). ``fire`` raises, kills the process, or cancels and returns
    (the turn then waits to be cancelled)."""

    at_turn: int = -1
    yields: int = 0
    fire: Callable[[], None] | None = None
    after_effect: bool = False
    started: int = 0
    fired: bool = False

    def disarm(self) -> None:
        self.at_turn = -1


class CountingAgent(ScriptedAgent):
    """A [`ScriptedAgent`][flowlib.testing.ScriptedAgent] that adds each finished turn to a
    ``Ledger`` and may be interrupted by a ``Trigger``."""

    def __init__(
        self,
        name: str,
        outputs: Sequence[str],
        *,
        then: str | None,
        yields: Sequence[int],
        ledger: Ledger,
        trigger: Trigger | None,
    ) -> None:
        super().__init__(name, outputs, then=then, yields=yields)
        self._ledger = ledger
        self._trigger = trigger
        self._fire_after = False

    async def _before_reply(self, turn: int) -> None:
        trigger = self._trigger
        if trigger is not None:
            index = trigger.started
            trigger.started += 1
            if trigger.after_effect:
                self._fire_after = index == trigger.at_turn
            elif index == trigger.at_turn and trigger.fire is not None:
                for _ in range(trigger.yields):
                    await asyncio.sleep(0)
                trigger.fired = True
                trigger.disarm()
                trigger.fire()  # raises, or has asked for cancellation:
                await asyncio.Event().wait()  # wait to be cancelled
        await super()._before_reply(turn)

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        turn = self.turns
        self._fire_after = False
        response = await super().on_messages(messages, cancellation_token)
        self._ledger.add(self.name, turn)  # no await between the turn finishing and this
        trigger = self._trigger
        if self._fire_after and trigger is not None and trigger.fire is not None:
            trigger.fired = True
            trigger.disarm()
            trigger.fire()
        return response


def team_of(
    spec: GraphSpec,
    store: CheckpointStore | None,
    ledger: Ledger,
    trigger: Trigger | None = None,
    **kwargs: Any,
) -> GraphFlow:
    """A ``GraphFlow`` of counting agents for ``spec``, checkpointing to ``store``."""
    agents = [
        CountingAgent(
            node.name,
            node.outputs,
            then=node.then,
            yields=node.yields,
            ledger=ledger,
            trigger=trigger,
        )
        for node in spec.nodes
    ]
    builder = spec.builder(agents)
    max_turns = (spec.run_bound() or DEFAULT_MAX_TURNS) if spec.is_cyclic else None
    if store is not None:
        kwargs["checkpoint_store"] = store
    return GraphFlow(agents, builder.build(), max_turns=max_turns, **kwargs)


@dataclass
class StoredRun:
    """A stored run's transcript and the node of each recorded turn."""

    messages: list[dict[str, Any]]
    nodes: list[str | None]
    turn_nodes: list[str] = field(default_factory=list)

    @property
    def texts(self) -> list[tuple[str, str]]:
        return [(str(m.get("source")), str(m.get("content"))) for m in self.messages]

    @property
    def ids(self) -> list[str]:
        return [str(m["id"]) for m in self.messages]

    def recorded_effects(self) -> set[Effect]:
        """The turns the records say finished: the k-th turn record of node n is (n, k)."""
        seen: Counter[str] = Counter()
        effects = set()
        for node in self.turn_nodes:
            effects.add((node, seen[node]))
            seen[node] += 1
        return effects


async def stored(store: CheckpointStore, run_id: str) -> StoredRun:
    records = await store.records(run_id)
    folded = fold(records, run_id=run_id)
    turn_nodes = [r.node for r in records if r.kind == "turn" and r.node is not None]
    return StoredRun(list(folded.messages), list(folded.message_nodes), turn_nodes)


def per_node(texts: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """Each source's messages, in order: what must match whatever the interleaving."""
    found: dict[str, list[str]] = {}
    for source, content in texts:
        found.setdefault(source, []).append(content)
    return found


def timing_sensitive(spec: GraphSpec) -> set[str]:
    """The nodes whose number of runs may depend on which turns finish first, even in an
    uninterrupted run, and everything downstream of one:

    - a node fed by two or more edges where an edge has ``any`` activation, or the edges
      are in two or more activation groups (groups are OR-ed), so parents' activations
      merge when they arrive before it starts, or the graph loops (a parent that fires
      twice before the other parent fires once counts once);
    - a node with a parent that can fire again without waiting for it (the parent is on
      a loop that avoids the node): two activations that arrive during one of its turns
      make one re-run.

    A resume changes which turns finish first, so for these nodes the uninterrupted run
    is one possible outcome, not the only one (``test_found_by_crash_anywhere.py`` shows
    both with plain uninterrupted runs)."""
    parents: dict[str, list[EdgeSpec]] = {}
    for edge in spec.edges:
        parents.setdefault(edge.target, []).append(edge)
    activation = {node.name: node.activation for node in spec.nodes}
    roots = {
        target
        for target, edges in parents.items()
        if len(edges) >= 2
        and (
            spec.is_cyclic
            or any((edge.activation_condition or activation[target]) == "any" for edge in edges)
            or len({edge.activation_group for edge in edges}) >= 2
        )
    }
    roots |= {
        target
        for target, edges in parents.items()
        if any(e.source != target and _loops_without(spec, e.source, target) for e in edges)
    }
    found = set(roots)
    frontier = list(roots)
    while frontier:
        node = frontier.pop()
        for edge in spec.edges:
            if edge.source == node and edge.target not in found:
                found.add(edge.target)
                frontier.append(edge.target)
    return found


def certain_turns(spec: GraphSpec, effects: Sequence[Effect]) -> int:
    """How many turns start in every run of ``spec``, whatever the timing: the turns of
    the nodes that are not timing-sensitive in the uninterrupted run's ``effects`` (at
    least the first turn). An interruption drawn among these is always reached."""
    loose = timing_sensitive(spec)
    return max(1, sum(1 for node, _ in effects if node not in loose))


def _loops_without(spec: GraphSpec, node: str, avoid: str) -> bool:
    """Whether ``node`` can reach itself again along edges that never touch ``avoid``."""
    seen: set[str] = set()
    frontier = [node]
    while frontier:
        here = frontier.pop()
        for edge in spec.edges:
            if edge.source != here or edge.target == avoid:
                continue
            if edge.target == node:
                return True
            if edge.target not in seen:
                seen.add(edge.target)
                frontier.append(edge.target)
    return False


def assert_same_transcript(
    spec: GraphSpec, got: StoredRun, want: StoredRun, loose: set[str] | None = None
) -> None:
    """Sequential shapes must match message for message; shapes with parallel branches
    may interleave differently after a resume, so each node's messages must match in
    order and the whole as a multiset. Nodes whose run count depends on timing (see
    ``timing_sensitive``, unless ``loose`` names them) are left out of the comparison
    with the uninterrupted run."""
    if loose is None:
        loose = timing_sensitive(spec)
    if spec.expected_steps is not None and not loose:
        assert got.texts == want.texts
    else:
        mine = {k: v for k, v in per_node(got.texts).items() if k not in loose}
        theirs = {k: v for k, v in per_node(want.texts).items() if k not in loose}
        assert mine == theirs
    assert len(set(got.ids)) == len(got.ids), "a message was recorded twice"


def assert_same_turns(
    spec: GraphSpec,
    got: StoredRun,
    effects: Sequence[Effect],
    want: Sequence[Effect],
    loose: set[str] | None = None,
) -> None:
    """Every turn of the uninterrupted run ran (timing-sensitive nodes aside), and each
    finished turn left exactly one message in the stored thread."""
    if loose is None:
        loose = timing_sensitive(spec)
    assert sorted(e for e in set(effects) if e[0] not in loose) == sorted(
        e for e in want if e[0] not in loose
    ), "a turn is missing or extra"
    by_node = Counter(node for node, _ in set(effects))
    in_thread = Counter(node for node in got.nodes if node is not None)
    assert by_node == in_thread, "a finished turn is missing from the thread, or twice in it"


CHILD_LEASE_TTL = 1.0
"""A killed child's lease on its run lasts this long (not the default 30 s), so the next
process takes the run over soon (issue 20 item 5: a dead executor's lease must expire)."""


async def when_lease_free(call: Callable[[], Awaitable[T]]) -> T:
    """``await call()``, waiting out a dead process's lease (``RunLeaseError``) first."""
    from flowlib.errors import RunLeaseError

    deadline = time.time() + 60
    while True:
        try:
            return await call()
        except RunLeaseError as exc:
            if time.time() > deadline:
                raise
            await asyncio.sleep(max(0.05, (exc.expires_at or 0.0) - time.time()))
