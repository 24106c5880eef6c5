"""The scheduler: a run's state and the rules that change it, with no I/O.

It holds the shared thread and each node's cursor, the ready queue, which nodes are
running or activated again while running, and the activation tracker of joins; it
records a finished turn (the one edge-firing rule, `fire_edges`: conditions first, then the thread
and the edges, all or nothing) and saves or restores all of it. The executor's run loop
drives it: pops ready nodes, runs their turns, hands finished turns back.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._english import a
from ..errors import ContractError, NodeExecutionError, StateError
from ..messages import BaseChatMessage, MessageFactory, TextMessage
from ._activation import ActivationTracker
from ._fire import fire_edges
from ._plan import ExecutionPlan, PlanEdge
from ._state import GRAPH_STATE_VERSION, GraphManagerState
from ._thread import Thread
from ._trace import RunTrace

__all__ = ["Finished", "LoadedState", "NodeRun", "Scheduler"]


@dataclass(slots=True)
class NodeRun:
    """One node's run state; the [`Scheduler`][flowlib.graph.Scheduler] owns one per
    node and changes it only through these transitions.

    Attributes:
        cursor: How many thread entries the node has been shown.
        last_own: Thread index of the node's latest message (-1: none).
        turn_start: The cursor before the current (or latest) turn.
        turn_end: The thread length the current turn was shown.
        turn_step: The trace step of the current (or latest) turn.
        limit: For the re-run of an interrupted turn, the thread length that turn had
            seen: the re-run sees no more (-1: none).
        turns: Recorded turns in the run (numbers each turn's idempotency key; an
            interrupted turn is not counted, so its re-run has the same number).
        queued: In the ready queue.
        running: Its turn is running.
        pending: Activated again while its turn ran: it runs once more after it.
        deferred: Activated while its interrupted turn ran: applies after the re-run of
            that turn, never merged into it.
        handed_over: A nested team took its current turn's messages (keeps its cursor
            when interrupted).
        handed_back: A nested team whose interrupted turn had taken its messages: in
            memory it keeps them, but a checkpoint's state of it predates the turn, so a
            settled bookkeeping rewinds its cursor as for a running node.
    """

    cursor: int = 0
    last_own: int = -1
    turn_start: int = 0
    turn_end: int = 0
    turn_step: int = 0
    limit: int = -1
    turns: int = 0
    queued: bool = False
    running: bool = False
    pending: bool = False
    deferred: bool = False
    handed_over: bool = False
    handed_back: bool = False

    def activate(self) -> bool:
        """An activation arrived; return whether to queue the node (once: not if it is
        queued; if it runs, it runs again after)."""
        if self.queued:
            return False
        if self.running:
            self.pending = True
            return False
        return True

    def begin(self, step: int) -> None:
        """Taken from the ready queue: running, as trace step ``step``."""
        self.queued = False
        self.running = True
        if self.pending:  # queued with an activation from its interrupted turn
            self.pending = False
            self.deferred = True
        self.turn_step = step

    def take(self, length: int) -> tuple[int, int]:
        """The turn is shown the thread entries ``[start, end)`` of a thread of
        ``length``; move the cursor past them and return them."""
        start, end = self.cursor, length
        if self.limit >= 0:  # the re-run of an interrupted turn
            end = min(end, self.limit)
            self.limit = -1
        self.turn_start, self.turn_end = start, end
        self.handed_over = self.handed_back = False
        self.cursor = end
        return start, end

    def interrupt(self) -> bool:
        """The running turn was interrupted: it will run again, seeing the same messages.
        Returns whether to put the node back in front of the ready queue."""
        self.running = False
        if self.deferred:
            self.deferred = False
            self.pending = True
        if not self.handed_over:
            self.cursor = self.turn_start
            self.limit = self.turn_end
        else:
            self.handed_back = True
        if self.queued:
            return False
        self.queued = True
        return True

    def finish(self) -> None:
        """The turn is recorded."""
        self.running = False
        self.turns += 1

    def ended(self) -> bool:
        """After a recorded turn: return whether an activation that came while it ran
        queues the node now."""
        if self.pending:  # activated while it ran: it runs again (once)
            self.pending = False
            if not self.queued:
                return True
        if self.deferred:  # activated while its interrupted turn ran: after this one
            self.deferred = False
            if self.queued:
                self.pending = True
            else:
                return True
        return False

    def forget_activations(self) -> None:
        """A fresh pass from the entry: no activation or re-run limit is left."""
        self.queued = self.pending = self.deferred = False
        self.limit = -1


@dataclass(slots=True)
class Finished:
    """What a finished turn hands to the scheduler to record.

    Attributes:
        published: The chat messages the turn publishes to the thread.
        final: The message edge conditions are evaluated on.
        selected: A router's chosen targets (its edges fire by selection), else None.
        stop_reason: A router asking the run to stop, else None.
    """

    published: list[BaseChatMessage]
    final: BaseChatMessage | None
    selected: set[int] | None = None
    stop_reason: str | None = None


class Scheduler:
    """A run's state over an [`ExecutionPlan`][flowlib.graph.ExecutionPlan].

    Args:
        plan: The compiled graph.
        message_factory: Rebuilds messages when a state is loaded.
        trace: Where started steps and fired edges are written.
        counts: Per node, whether its turns count toward ``max_turns`` (default: all).
    """

    def __init__(
        self,
        plan: ExecutionPlan,
        message_factory: MessageFactory,
        trace: RunTrace,
        counts: Sequence[bool] | None = None,
    ) -> None:
        self.plan = plan
        # Per node, whether its turns count toward `max_turns` (routers' do not).
        self.counts = list(counts) if counts is not None else [True] * len(plan.names)
        self.factory = message_factory
        self.trace = trace
        self.tracker = ActivationTracker(plan)
        self._is_absorbed = self.tracker.is_absorbed
        self._check = self.check
        self.thread = Thread(message_factory)
        self.thread_node: list[int] = []  # publisher of each thread entry (-1: the task)
        self.ready: deque[int] = deque()
        self.fresh = True
        self.current_turn = 0
        # Map targets: the items their map edge produced (instances to run) and the
        # outputs of the instances that finished, by item index.
        self.map_items: dict[int, list[BaseChatMessage]] = {}
        self.map_done: dict[int, dict[int, list[BaseChatMessage]]] = {}
        # Map targets whose instances are recorded one by one (in item order) while the
        # map runs: how many are recorded; the out-edges to `all` groups (and map edges)
        # a recorded instance passed, which fire when the map ends; the items gathered
        # for a map edge out of a running map target, by that edge's target.
        self.map_next: dict[int, int] = {}
        self.map_passed: set[int] = set()
        self.map_carry: dict[int, list[BaseChatMessage]] = {}
        self._map_runs: dict[int, _MapRun] = {}  # the running maps
        self._clear_nodes()

    def _clear_nodes(self) -> None:
        self.nodes = [NodeRun() for _ in self.plan.names]

    def reset(self) -> None:
        """Forget the thread, cursors, ready set and joins: the next run starts fresh."""
        self.tracker.reset()
        self.thread.clear()
        self.thread_node.clear()
        self.ready.clear()
        self._clear_nodes()
        self.map_items.clear()
        self.map_done.clear()
        self.map_next.clear()
        self.map_passed.clear()
        self.map_carry.clear()
        self._map_runs.clear()
        self.fresh = True
        self.current_turn = 0

    def enqueue(self, node: int) -> None:
        """Append ``node`` to the ready queue."""
        self.nodes[node].queued = True
        self.ready.append(node)

    def activate(self, node: int) -> None:
        """An activation of ``node`` was satisfied: queue it (once), or mark it to run
        again after its running turn."""
        if self.nodes[node].activate():
            self.enqueue(node)

    def in_flight(self, node: int) -> bool:
        """Whether ``node`` is ready or running."""
        run = self.nodes[node]
        return run.queued or run.running

    def start(self) -> tuple[int, list[BaseChatMessage]]:
        """Start the next ready node's turn: mark it running, log its step in the trace,
        count the turn; return the node and the thread entries new to it, except its own.
        """
        node = self.ready.popleft()
        run = self.nodes[node]
        run.begin(self.trace.start(node))
        if self.counts[node]:
            self.current_turn += 1
        start, end = run.take(len(self.thread))
        if start == end:
            return node, []
        if run.last_own < start:  # none of its own messages in range: plain slice
            return node, self.thread[start:end]
        thread, origin = self.thread, self.thread_node
        return node, [thread[i] for i in range(start, end) if origin[i] != node]

    def requeue_front(self, nodes: Sequence[int]) -> None:
        """Put interrupted or failed turns back in front; they will see the same messages
        (and count again when they run again)."""
        for node in reversed(nodes):
            self._map_runs.pop(node, None)  # its state is in map_items/map_done/map_next
            if self.nodes[node].interrupt():
                self.ready.appendleft(node)
            if self.counts[node]:
                self.current_turn -= 1

    def start_from_entry(self) -> None:
        """A fresh pass: forget joins and the ready set, queue the entry nodes."""
        self.tracker.reset()
        self.ready.clear()
        for run in self.nodes:
            run.forget_activations()
        for node in self.plan.entry:
            self.enqueue(node)
        self.fresh = False

    def replace_ready(self, nodes: Sequence[int]) -> None:
        """Make ``nodes`` the ready set (a team routing a new task)."""
        for node in self.ready:
            self.nodes[node].queued = False
        self.ready.clear()
        for node in nodes:
            if not self.nodes[node].queued:
                self.enqueue(node)

    def record(
        self,
        node: int,
        output: Finished | None,
        dead_ends: list[tuple[int, BaseChatMessage | None]],
    ) -> str | None:
        """Record a finished turn: publish its messages and fire its edges, all or nothing.

        Every edge condition is evaluated before anything changes, so a condition that
        raises leaves the turn unrecorded (the node runs again) instead of half-recorded.
        Returns the stop reason a router asked for, if any.
        """
        if self.plan.map_in[node] is not None:
            self._record_map(node, dead_ends)
            return None
        out_edges = self.plan.out_edges[node]
        final = output.final if output is not None else None
        passed: list[bool] = []
        mapped: list[tuple[int, list[BaseChatMessage]]] = []
        if out_edges:
            selected = output.selected if output is not None else None
            passed = fire_edges(out_edges, final, selected, self._is_absorbed, self._check)
            for edge, ok in zip(out_edges, passed, strict=True):
                if ok and edge.mapper is not None:
                    mapped.append((edge.target, self._map_items(edge, final)))
        # Nothing below raises: the turn is recorded whole, exactly once.
        run = self.nodes[node]
        run.finish()
        for target, items in mapped:
            self._set_map_items(target, items)
        if output is not None and output.published:
            for message in output.published:
                self.thread.append(message)
                self.thread_node.append(node)
            run.last_own = len(self.thread) - 1
        if out_edges:
            step = run.turn_step
            progressed = False
            for edge, ok in zip(out_edges, passed, strict=True):
                if self.tracker.take_absorbed(edge):
                    progressed = True
                    continue
                if ok:
                    progressed = True
                    self.trace.fire(step, edge.index)
                    if self.tracker.fire(edge, self.in_flight):
                        self.activate(edge.target)
            if not progressed and (output is None or output.stop_reason is None):
                dead_ends.append((node, final))
        self._ended(node)
        return output.stop_reason if output is not None else None

    def _ended(self, node: int) -> None:
        """A recorded turn of ``node`` ended: an activation that came while it ran."""
        if self.nodes[node].ended():
            self.enqueue(node)

    # --- map targets ----------------------------------------------------------------

    def _set_map_items(self, target: int, items: list[BaseChatMessage]) -> None:
        """A map edge into ``target`` fired with ``items``: its next map runs them (a map
        of ``target`` running now keeps its own items)."""
        self.map_items[target] = items
        self.map_done.pop(target, None)
        self.map_next.pop(target, None)

    def take_map(self, node: int) -> tuple[list[BaseChatMessage], list[int]]:
        """Start a map target's turn: its items and the indices of the instances to run
        (the others are recorded, or finished and waiting to be)."""
        items = self.map_items.setdefault(node, [])
        done = self.map_done.setdefault(node, {})
        start = self.map_next.get(node, 0)
        self._map_runs[node] = _MapRun(items, done, start)
        return items, [i for i in range(start, len(items)) if i not in done]

    def finish_instance(self, node: int, index: int, published: list[BaseChatMessage]) -> None:
        """Instance ``index`` of map target ``node`` finished with ``published``: kept
        until the instances before it are recorded (`record_instances`)."""
        run = self._map_runs.get(node)
        if run is not None:
            run.done[index] = published

    def record_instances(self, node: int) -> list[tuple[int, list[BaseChatMessage]]]:
        """Record the finished instances of map target ``node`` that come next in item
        order; return ``(index, published)`` for each.

        An instance is recorded as a turn is, except for the join after the map: its
        messages go to the thread (from ``node``), its out-edges' conditions are
        evaluated on its final message, and the edges into ``any`` groups that pass fire
        now. An edge into an ``all`` group (or a map edge) that passes is noted and fires
        once, when the map ends (`record`): that node is the reduce. An instance whose
        condition raises is not recorded and runs again.
        """
        run = self._map_runs.get(node)
        if run is None:
            return []
        recorded: list[tuple[int, list[BaseChatMessage]]] = []
        out_edges = self.plan.out_edges[node]
        groups = self.plan.groups
        current = self.map_items.get(node) is run.items
        while run.next in run.done:
            index = run.next
            published = run.done[index]
            final = published[-1] if published else None
            try:
                passed = fire_edges(out_edges, final, None, self._is_absorbed, self._check)
                mapped = [
                    (edge, self._map_items(edge, final))
                    for edge, ok in zip(out_edges, passed, strict=True)
                    if ok and edge.mapper is not None
                ]
            except BaseException:
                del run.done[index]  # not recorded: it runs again
                raise
            # Nothing below raises: the instance is recorded whole, exactly once.
            del run.done[index]
            run.next += 1
            if current:
                self.map_next[node] = run.next
            for message in published:
                self.thread.append(message)
                self.thread_node.append(node)
            if published:
                self.nodes[node].last_own = len(self.thread) - 1
            for edge, items in mapped:
                self.map_carry.setdefault(edge.target, []).extend(items)
            step = self.nodes[node].turn_step
            for edge, ok in zip(out_edges, passed, strict=True):
                if edge.mapper is not None or not groups[edge.group].any:
                    if ok:
                        self.map_passed.add(edge.index)
                    continue
                if self.tracker.take_absorbed(edge):
                    self.map_passed.add(edge.index)  # progress: not a dead end
                    continue
                if ok:
                    self.map_passed.add(edge.index)
                    self.trace.fire(step, edge.index)
                    if self.tracker.fire(edge, self.in_flight):
                        self.activate(edge.target)
            recorded.append((index, published))
        return recorded

    def _record_map(self, node: int, dead_ends: list[tuple[int, BaseChatMessage | None]]) -> None:
        """Record the end of map target ``node``'s turn (every instance recorded): the
        noted edges into ``all`` groups fire once. A map over no items is a turn with no
        final message: its unconditional edges into ``all`` groups fire (the branch is
        skipped, the reduce still fires)."""
        run = self._map_runs.get(node)
        items = run.items if run is not None else self.map_items.get(node, [])
        out_edges = self.plan.out_edges[node]
        groups = self.plan.groups
        mapped: list[tuple[int, list[BaseChatMessage]]] = []
        if items:
            progressed = any(edge.index in self.map_passed for edge in out_edges)
            passed = [
                edge.index in self.map_passed
                and (edge.mapper is not None or not groups[edge.group].any)
                for edge in out_edges
            ]
            for edge, ok in zip(out_edges, passed, strict=True):
                if ok and edge.mapper is not None:
                    mapped.append((edge.target, self.map_carry.get(edge.target, [])))
        else:
            passed = [
                ok and not groups[edge.group].any
                for edge, ok in zip(out_edges, fire_edges(out_edges, None), strict=True)
            ]
            progressed = any(passed)
            for edge, ok in zip(out_edges, passed, strict=True):
                if ok and edge.mapper is not None:
                    mapped.append((edge.target, self._map_items(edge, None)))
        # Nothing below raises.
        self._map_runs.pop(node, None)
        self.nodes[node].finish()
        if self.map_items.get(node) is items:
            self.map_items.pop(node, None)
            self.map_done.pop(node, None)
            self.map_next.pop(node, None)
        for edge in out_edges:
            self.map_passed.discard(edge.index)
            if edge.mapper is not None:
                self.map_carry.pop(edge.target, None)
        for target, targets_items in mapped:
            self._set_map_items(target, targets_items)
        step = self.nodes[node].turn_step
        for edge, ok in zip(out_edges, passed, strict=True):
            if ok:
                self.trace.fire(step, edge.index)
                if self.tracker.fire(edge, self.in_flight):
                    self.activate(edge.target)
        if out_edges and not progressed:
            dead_ends.append((node, None))
        self._ended(node)

    def _map_items(self, edge: PlanEdge, final: BaseChatMessage | None) -> list[BaseChatMessage]:
        """The items of a map edge that fired: its function on the source's final message,
        each a chat message (a string becomes a ``TextMessage`` from the source)."""
        assert edge.mapper is not None
        source = self.plan.names[edge.source]
        where = f"the map function of edge `{self.plan.describe_edge(edge)}`"
        try:
            produced = edge.mapper(final)
            if isinstance(produced, (str, bytes)) or not isinstance(produced, Sequence):
                raise ContractError(
                    f"it returned {type(produced).__name__}; a map function returns a list "
                    "of strings or chat messages"
                )
            items: list[BaseChatMessage] = []
            for position, item in enumerate(produced):
                if isinstance(item, str):
                    items.append(TextMessage(content=item, source=source))
                elif isinstance(item, BaseChatMessage):
                    items.append(item)
                else:
                    raise ContractError(
                        f"item {position} is {type(item).__name__}; a map function returns "
                        "a list of strings or chat messages"
                    )
        except Exception as exc:
            raise NodeExecutionError(source, exc, during=where) from exc
        return items

    def check(self, edge: PlanEdge, message: BaseChatMessage) -> bool:
        assert edge.predicate is not None
        try:
            return bool(edge.predicate(message))
        except Exception as exc:
            raise NodeExecutionError(
                self.plan.names[edge.source],
                exc,
                during=f"the condition of edge `{self.plan.describe_edge(edge)}`",
            ) from exc

    # --- persistence ------------------------------------------------------------

    def edge_key(self, edge_index: int) -> tuple[str, str, str]:
        edge = self.plan.edges[edge_index]
        names = self.plan.names
        return (names[edge.source], names[edge.target], self.plan.groups[edge.group].name)

    def bookkeeping(self, *, settled: bool = False) -> dict[str, Any]:
        """The run state except the thread, at the last consistent point.

        Nodes whose turn is running are in front of the ready set, with their cursor back
        where the turn started: loaded, the state runs exactly those turns again.

        Args:
            settled: Rewind every running node's cursor, also a nested team's that has
                already taken its turn's messages (for a checkpoint, where that team's
                stored state predates the turn).
        """
        names = self.plan.names
        runs = self.nodes
        cursors = [run.cursor for run in runs]
        running = sorted(
            (n for n in range(len(names)) if runs[n].running),
            key=lambda n: runs[n].turn_step,
        )
        limits = {names[n]: run.limit for n, run in enumerate(runs) if run.limit >= 0}
        for node, run in enumerate(runs):
            if (run.running and (settled or not run.handed_over)) or (settled and run.handed_back):
                cursors[node] = run.turn_start
                limits[names[node]] = run.turn_end
        ready = running + [n for n in self.ready if not runs[n].running]
        fired, absorbed = self.tracker.dump()
        pending = [
            names[n] for n, run in enumerate(runs) if run.pending or (run.running and run.deferred)
        ]
        return {
            "cursors": {names[i]: cursor for i, cursor in enumerate(cursors)},
            "limits": limits,
            "ready": [names[n] for n in ready],
            "pending": pending,
            "fired": [self.edge_key(e) for e in fired],
            "absorbed": [self.edge_key(e) for e in absorbed],
            "current_turn": self.current_turn,
            "fresh": self.fresh and not running,
            "node_turns": {names[i]: run.turns for i, run in enumerate(runs) if run.turns},
            "map_items": {
                names[n]: [dict(m.dump()) for m in items] for n, items in self.map_items.items()
            },
            "map_done": {
                names[n]: {str(i): [dict(m.dump()) for m in out] for i, out in done.items()}
                for n, done in self.map_done.items()
            },
            "map_next": {names[n]: count for n, count in self.map_next.items() if count},
            "map_passed": [self.edge_key(e) for e in sorted(self.map_passed)],
            "map_carry": {
                names[n]: [dict(m.dump()) for m in items] for n, items in self.map_carry.items()
            },
        }

    def save_state(self) -> GraphManagerState:
        """Everything needed to resume: thread, cursors, ready set, joins, turn count.

        During a run this is the last consistent point: finished turns are in, running
        ones are marked to run again.
        """
        names = self.plan.names
        return GraphManagerState(
            message_thread=self.thread.dumps(),
            thread_nodes=[names[n] if n >= 0 else None for n in self.thread_node],
            **self.bookkeeping(),
        )

    def check_state(
        self, state: GraphManagerState, *, thread: Sequence[Any] | None = None
    ) -> LoadedState:
        """Validate ``state`` against this graph without changing anything.

        ``thread``, when given, is the message thread's dumps (used instead of the
        state's ``message_thread``, which then need not be validated as a model field).
        Stored messages are checked by class here and rebuilt when first read.

        Raises:
            StateError: If the state's version, node names, edges or cursors do not fit.
        """
        if state.version != GRAPH_STATE_VERSION:
            raise StateError(
                f"Saved graph state has version {state.version}; this flowlib reads version "
                f"{GRAPH_STATE_VERSION}. Save it again with this version of flowlib."
            )
        index = self.plan.index

        def node_of(name: str | None, what: str) -> int:
            if name is None:
                return -1
            found = index.get(name)
            if found is None:
                raise StateError(
                    f"Saved state names node `{name}` ({what}), which this team's graph does "
                    "not have; load the state into a team built with the same participants "
                    "and graph."
                )
            return found

        edge_index = {self.edge_key(e): e for e in range(len(self.plan.edges))}

        def edge_of(key: tuple[str, str, str]) -> int:
            found = edge_index.get(tuple(key))  # type: ignore[arg-type]
            if found is None:
                raise StateError(
                    f"Saved state names edge `{key[0]} -> {key[1]}` in activation group "
                    f"`{key[2]}`, which this team's graph does not have; load the state into "
                    "a team built with the same graph."
                )
            return found

        dumps = state.message_thread if thread is None else thread
        if len(dumps) != len(state.thread_nodes):
            raise StateError(
                "Saved state is inconsistent: message_thread and thread_nodes differ in length."
            )
        self.thread.check(dumps)
        origin_of: dict[str | None, int] = {None: -1}
        origin_of.update(index)
        try:
            origins = [origin_of[name] for name in state.thread_nodes]
        except KeyError as exc:
            node_of(exc.args[0], "thread")  # raises, naming the node
            raise

        def positions(saved: Mapping[str, Any], what: str, default: int) -> list[int]:
            """Per node, a saved position in the thread (a cursor or a re-run limit)."""
            found = [default] * len(self.plan.names)
            for name, position in saved.items():
                if type(position) is not int or not 0 <= position <= len(dumps):
                    raise StateError(
                        f"Saved state gives node `{name}` {what} {position!r}, outside the "
                        f"thread (0..{len(dumps)}); the state is corrupt."
                    )
                found[node_of(name, f"{what}s")] = position
            return found

        cursors = positions(state.cursors, "cursor", 0)
        limits = positions(state.limits, "limit", -1)
        if state.current_turn < 0:
            raise StateError(f"Saved state has current_turn {state.current_turn}; it must be >= 0.")
        ready: list[int] = []
        for name in state.ready:
            node = node_of(name, "ready")
            if node not in ready:
                ready.append(node)
        pending = [node_of(name, "pending") for name in state.pending]
        try:
            map_items = {
                node_of(name, "map_items"): [self._message(data) for data in items]
                for name, items in state.map_items.items()
            }
            map_done = {
                node_of(name, "map_done"): {
                    int(i): [self._message(data) for data in out] for i, out in done.items()
                }
                for name, done in state.map_done.items()
            }
            map_carry = {
                node_of(name, "map_carry"): [self._message(data) for data in items]
                for name, items in state.map_carry.items()
            }
        except (ValueError, TypeError) as exc:
            if isinstance(exc, StateError):
                raise
            raise StateError(
                f"Saved state holds map items or instance outputs this team cannot rebuild "
                f"({exc}); the state is corrupt or needs `custom_message_types`."
            ) from exc
        map_next: dict[int, int] = {}
        for name, count in state.map_next.items():
            node = node_of(name, "map_next")
            if type(count) is not int or not 0 <= count <= len(map_items.get(node, [])):
                raise StateError(
                    f"Saved state gives map target `{name}` {count!r} recorded instances, "
                    "outside its items; the state is corrupt."
                )
            map_next[node] = count
        map_passed = [edge_of(key) for key in state.map_passed]
        fired = [edge_of(key) for key in state.fired]
        absorbed = [edge_of(key) for key in state.absorbed]
        node_turns = [0] * len(self.plan.names)
        for name, count in state.node_turns.items():
            if type(count) is not int or count < 0:
                raise StateError(
                    f"Saved state gives node `{name}` {count!r} recorded turns; it must be an "
                    "integer >= 0 (the state is corrupt)."
                )
            node_turns[node_of(name, "node_turns")] = count
        return LoadedState(
            dumps,
            origins,
            cursors,
            limits,
            ready,
            pending,
            fired,
            absorbed,
            state.current_turn,
            state.fresh,
            node_turns,
            map_items,
            map_done,
            map_next,
            map_passed,
            map_carry,
        )

    def apply_state(self, loaded: LoadedState) -> None:
        """Install a state checked by ``check_state``."""
        self.reset()
        self.thread.load(loaded.thread)
        self.thread_node.extend(loaded.origins)
        runs = self.nodes
        for position, origin in enumerate(loaded.origins):
            if origin >= 0:
                runs[origin].last_own = position
        for run, cursor, limit, turns in zip(
            runs, loaded.cursors, loaded.limits, loaded.node_turns, strict=True
        ):
            run.cursor, run.limit, run.turns = cursor, limit, turns
        for node in loaded.ready:
            if not runs[node].queued:
                self.enqueue(node)
        for node in loaded.pending:
            runs[node].pending = True
        self.tracker.load(loaded.fired, loaded.absorbed)
        self.current_turn = loaded.current_turn
        self.fresh = loaded.fresh
        self.map_items = {n: list(items) for n, items in loaded.map_items.items()}
        self.map_done = {n: dict(done) for n, done in loaded.map_done.items()}
        self.map_next = dict(loaded.map_next)
        self.map_passed = set(loaded.map_passed)
        self.map_carry = {n: list(items) for n, items in loaded.map_carry.items()}

    def _message(self, data: Any) -> BaseChatMessage:
        message = self.factory.create(data)
        if not isinstance(message, BaseChatMessage):
            raise StateError(
                f"Saved state holds {a(type(message).__name__)} where a chat "
                "message belongs; the state is corrupt."
            )
        return message


@dataclass(slots=True)
class LoadedState:
    """A saved state checked against the graph, ready to install."""

    thread: Sequence[Any]  # the thread's dumps, checked
    origins: list[int]
    cursors: list[int]
    limits: list[int]
    ready: list[int]
    pending: list[int]
    fired: list[int]
    absorbed: list[int]
    current_turn: int
    fresh: bool
    node_turns: list[int]
    map_items: dict[int, list[Any]] = field(default_factory=dict)
    map_done: dict[int, dict[int, list[Any]]] = field(default_factory=dict)
    map_next: dict[int, int] = field(default_factory=dict)
    map_passed: list[int] = field(default_factory=list)
    map_carry: dict[int, list[Any]] = field(default_factory=dict)


@dataclass(slots=True)
class _MapRun:
    """A running map: its items, the outputs of instances finished and not yet recorded
    (by index), and how many instances are recorded."""

    items: list[BaseChatMessage]
    done: dict[int, list[BaseChatMessage]]
    next: int
