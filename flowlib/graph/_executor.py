"""The one graph executor every team runs on.

Semantics (see docs/graph-semantics.md for the reasoning):

- **Eager.** A node starts as soon as one of its activation groups is satisfied; it does
  not wait for unrelated siblings. Independent ready nodes run concurrently on the one
  event loop, so a run takes its critical path.
- **Deterministic order.** Entry nodes and nodes that become ready together start in
  insertion order (edge order for targets of one completion).
- **Broadcast through cursors.** Chat messages go to one shared thread; each node keeps a
  cursor and, on its turn, receives every message published since its previous turn,
  except its own.
- **Termination sees everything.** After each turn the termination condition receives
  that turn's events and messages; the task messages are fed in first.
- **Stopping.** Nothing ready or running: natural completion, and the next run starts
  from the entry again. Termination fired, or ``max_turns`` turns run: no new node
  starts, running turns finish, and the ready set is kept so ``run()`` with no task
  resumes. Cancellation: running turns are cancelled and put back in front of the ready
  set, then ``CancelledError`` propagates. A node error: the same, and the error is raised
  as [`NodeExecutionError`][flowlib.errors.NodeExecutionError].

Participants run only through their [`Node`][flowlib.graph.Node] adapters, built once
with [`as_node`][flowlib.graph.as_node]: a turn is ``node.turn(messages, token)``
whatever the participant is.

When only one node can run and nothing else is running, its turn is driven inline (no
task, no queue): nothing else can become ready until it completes, so this is the same
schedule, with less overhead on sequential stretches.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .._telemetry import trace_node_turn
from ..base import CancellationToken, TaskResult, TerminationCondition
from ..errors import NodeExecutionError, TeamRunningError
from ..messages import (
    BaseAgentEvent,
    BaseChatMessage,
    MessageFactory,
    ModelClientStreamingChunkEvent,
    SelectSpeakerEvent,
)
from ..tools.internal import call_scope, keyed_turn, turn_scope
from ._guard import Attempts, NodeGuard
from ._map import MapInstances, instance_name, run_map
from ._node import Node, NodeContext, TurnOutput, as_node
from ._plan import ExecutionPlan
from ._policies import check_timeout
from ._scheduler import LoadedState, Scheduler
from ._shapes import Participant
from ._state import GraphManagerState
from ._thread import Thread
from ._trace import RunTrace

__all__ = [
    "COMPLETE_REASON",
    "YIELD_EVERY",
    "Budget",
    "GraphExecutor",
    "Participant",
    "RunRecorder",
]

Item = BaseAgentEvent | BaseChatMessage
TaskRouter = Callable[[Sequence[BaseChatMessage]], Sequence[str] | None]
"""Given a run's task messages, the nodes to run next (replacing the ready set), or None."""
DeadEndDescriber = Callable[[str, BaseChatMessage | None], str | None]
"""Given a node that matched none of its edges and its final message, a reason, or None."""

COMPLETE_REASON = "Digraph execution is complete"

YIELD_EVERY = 4
"""Inline turns run between two chances for the event loop to run something else. One
``asyncio.sleep(0)`` costs about 3 µs here, so every 4th turn adds under 1 µs per turn
(docs/choices.md, "Durable runs"), and a cancellation, an external stop or another run
on the loop waits at most 4 turns of nodes that never await."""

RunOutcome = Literal["complete", "stopped", "interrupted", "failed"]
"""How a run ended: ``complete`` (nothing left to run), ``stopped`` (termination or
``max_turns``: the run's budget is spent), ``interrupted`` (cancelled, or its consumer
stopped reading: the budget continues on resume), ``failed`` (a node raised: likewise)."""


class RunRecorder(Protocol):
    """Told about a run's progress so it can write checkpoints (a team's checkpointer).

    Each call happens before the messages it covers reach the run's consumer.
    """

    async def started(self) -> None:
        """The task messages are in the thread and the ready set is chosen."""
        ...

    async def recorded(self, node: int) -> None:
        """The turn of ``node`` was recorded (thread, edges, ready set updated)."""
        ...

    async def stopped(self, outcome: RunOutcome, reason: str | None) -> None:
        """The run stopped (after the interrupted turns were put back in the ready set)."""
        ...

    # Optional: ``async def progressed(self, node: int, instance: str) -> None``, told
    # when instance ``instance`` (``target[i]``) of map target ``node`` finished (its
    # output is in the bookkeeping, the turn is still running); a checkpointer writes a
    # checkpoint so the instance never runs again.


@dataclass(frozen=True, slots=True)
class Budget:
    """How much of a run's budget is spent (see ``GraphExecutor.budget``).

    Attributes:
        open: A run started and has not stopped or completed since (it was interrupted,
            failed, or is running): the next ``run_stream`` continues it.
        turns: Agent turns counted toward ``max_turns`` in this run.
        stop_reason: A stop decided while turns were still running, if any.
        drain: With ``stop_reason``: how many nodes at the front of the ready set were
            running then; they run before the run stops, as in the uninterrupted run.
    """

    open: bool = False
    turns: int = 0
    stop_reason: str | None = None
    drain: int = 0


@dataclass(slots=True)
class _Done:
    """Queue marker: a concurrently running turn has ended (``error`` set if it raised)."""

    node: int
    output: TurnOutput | None
    error: BaseException | None


class _Wake:
    """Queue marker: the cancellation token fired."""


@dataclass(slots=True)
class _Progress:
    """Queue marker: instance ``instance`` of map target ``node`` finished (its output is
    in the scheduler's state): a checkpoint can keep it."""

    node: int
    instance: str


class GraphExecutor:
    """Runs an [`ExecutionPlan`][flowlib.graph.ExecutionPlan] over participants and keeps the run
    state.

    Args:
        plan: The compiled graph.
        participants: One per plan node, in plan order.
        termination_condition: Checked after every turn (and on the task messages).
        max_turns: At most this many turns per run (router turns do not count).
        message_factory: Rebuilds messages when a state is loaded.
        event_source: When set, a ``SelectSpeakerEvent`` from this source is streamed
            before each agent turn (a team's ``emit_team_events``).
        task_router: Lets a team choose the next nodes from a new task (Swarm resumes at
            the target of a ``HandoffMessage`` task).
        dead_end_reason: Lets a team explain a node that matched none of its edges.
        turn_timeout: The default deadline of every node's turn, in seconds (a node's own
            ``timeout`` wins): past it the turn is cancelled and counts as a failed
            attempt (see docs/graph-semantics.md, "Node policies").
    """

    def __init__(
        self,
        plan: ExecutionPlan,
        participants: Sequence[Participant],
        *,
        termination_condition: TerminationCondition | None,
        max_turns: int | None,
        message_factory: MessageFactory,
        event_source: str | None = None,
        task_router: TaskRouter | None = None,
        dead_end_reason: DeadEndDescriber | None = None,
        turn_timeout: float | None = None,
    ) -> None:
        check_timeout(turn_timeout, "turn_timeout")
        self._plan = plan
        self._participants = list(participants)
        self._event_source = event_source
        self._task_router = task_router
        self._dead_end_reason = dead_end_reason
        self._termination = termination_condition
        self._max_turns = max_turns
        self._run_id: str | None = None  # of the current run (idempotency keys)
        self._factory = message_factory
        self._is_running = False
        # The run's budget (docs/state.md): whether a run is open (started and not yet
        # stopped, complete or not), the stop it decided while running turns finish, and
        # how many of those turns were interrupted. The turn count is
        # `Scheduler.current_turn`, the one turn counter.
        self._open = False
        self.pending_stop: str | None = None
        self._drain = 0
        self.trace = RunTrace(
            names=list(plan.names),
            edge_ends=[(plan.names[e.source], plan.names[e.target]) for e in plan.edges],
        )
        self._sched = Scheduler(plan, message_factory, self.trace)
        # The only look at the participants' classes: each becomes its Node adapter once.
        self._nodes = [
            as_node(participant, self._context(node, participant, message_factory))
            for node, participant in enumerate(self._participants)
        ]
        self._counts = [node.counts_turn for node in self._nodes]
        self._turn_timeout = turn_timeout
        self._guards = self._make_guards(turn_timeout)
        graph_nodes = plan.graph.nodes
        self._maps: list[MapInstances | None] = [
            None
            if plan.map_in[index] is None
            else MapInstances(
                self._nodes[index],
                getattr(graph_nodes.get(name), "instances", None),
                message_factory,
            )
            for index, name in enumerate(plan.names)
        ]
        # Nodes whose turn always runs as a task: a policy's deadline cancels only that
        # turn, and a map's instances run concurrently.
        self._tasked = [
            guard is not None or runner is not None
            for guard, runner in zip(self._guards, self._maps, strict=True)
        ]

    def _make_guards(self, turn_timeout: float | None) -> list[NodeGuard | None]:
        """One guard per node with a policy (None for the others: the plain path)."""
        guards: list[NodeGuard | None] = []
        graph_nodes = self._plan.graph.nodes
        for index, name in enumerate(self._plan.names):
            spec = graph_nodes.get(name)
            timeout = spec.timeout if spec is not None and spec.timeout else turn_timeout
            retry = spec.retry if spec is not None else None
            cache = spec.cache if spec is not None else None
            if timeout is None and retry is None and cache is None:
                guards.append(None)
                continue
            guards.append(
                NodeGuard(
                    name,
                    self._nodes[index],
                    timeout=timeout,
                    retry=retry,
                    cache=cache,
                    factory=self._factory,
                )
            )
        return guards

    @property
    def turn_timeout(self) -> float | None:
        """The default deadline of a node's turn, in seconds (None: none)."""
        return self._turn_timeout

    def _context(self, node: int, participant: Participant, factory: MessageFactory) -> NodeContext:
        plan = self._plan

        def handed_over() -> None:
            self._sched.handed_over[node] = True

        return NodeContext(
            names=plan.names,
            index=plan.index,
            targets=frozenset(edge.target for edge in plan.out_edges[node]),
            factory=factory,
            handed_over=handed_over,
        )

    # --- public state -------------------------------------------------------------------

    @property
    def is_running(self) -> bool:
        """Whether a run is in progress."""
        return self._is_running

    @property
    def thread(self) -> Thread:
        """The chat messages published so far (read-only view by convention)."""
        return self._sched.thread

    @property
    def thread_nodes(self) -> list[int]:
        """For each thread entry, the plan node that published it (-1: the task)."""
        return self._sched.thread_node

    @property
    def running(self) -> list[str]:
        """The nodes whose turn is running now."""
        return [name for node, name in enumerate(self._plan.names) if self._sched.running[node]]

    @property
    def plan(self) -> ExecutionPlan:
        """The compiled plan the executor runs."""
        return self._plan

    @property
    def nodes(self) -> list[Node]:
        """The participants' [`Node`][flowlib.graph.Node] adapters, in plan order."""
        return list(self._nodes)

    def node_kind(self, node: int) -> str:
        """The kind of ``node`` (``agent``, ``function``, ``team`` or ``router``)."""
        return self._nodes[node].kind

    def waiting_joins(self) -> list[tuple[int, list[int]]]:
        """The activation groups some of whose edges fired while others have not yet:
        ``(group index, edges still missing)`` for each (a join left waiting when a run
        ends is a join that did not complete)."""
        return self._sched.tracker.waiting()

    def turn_step(self, node: int) -> int:
        """The trace step of ``node``'s current (or latest) turn, from 0."""
        return self._sched.turn_step[node]

    @property
    def counts_turn(self) -> list[bool]:
        """Per node, whether its turns count toward ``max_turns`` (routers' do not)."""
        return list(self._counts)

    @property
    def ready(self) -> list[str]:
        """The nodes that will run next, in order."""
        return [self._plan.names[node] for node in self._sched.ready]

    def reset(self) -> None:
        """Forget the thread, cursors, ready set and joins: the next run starts fresh."""
        self._sched.reset()
        self._open = False
        self.pending_stop = None
        self._drain = 0

    def budget(self) -> Budget:
        """The run's budget at the last consistent point (what a checkpoint stores):
        running turns are not counted, they run again on resume."""
        sched = self._sched
        running = [node for node in range(len(self._counts)) if sched.running[node]]
        return Budget(
            open=self._open,
            turns=sched.current_turn - sum(self._counts[node] for node in running),
            stop_reason=self.pending_stop if self._open else None,
            drain=len(running) + self._drain if self.pending_stop is not None else 0,
        )

    def restore_budget(self, budget: Budget) -> None:
        """Install a stored budget (after the state it belongs to was loaded)."""
        if self._is_running:
            raise TeamRunningError("Cannot restore a run's budget while it runs.")
        self._sched.current_turn = budget.turns
        self._open = budget.open
        self.pending_stop = budget.stop_reason if budget.open else None
        self._drain = budget.drain if self.pending_stop is not None else 0

    # --- one turn -----------------------------------------------------------------------

    def _turn(
        self, node: int, messages: list[BaseChatMessage], token: CancellationToken
    ) -> AsyncGenerator[Item | TurnOutput, None]:
        # Telemetry (flowlib/_telemetry.py): a span per node turn; the turn as is when off.
        # The turn runs in its idempotency-key scope (flowlib/tools/_keys.py).
        runner = self._nodes[node]
        scope = turn_scope(self._run_id, self._plan.names[node], self._sched.node_turns[node])
        stream = keyed_turn(runner.turn(messages, token), scope)
        return trace_node_turn(self, node, stream, runner.participant)

    async def _drive(
        self,
        node: int,
        messages: list[BaseChatMessage],
        token: CancellationToken,
        queue: asyncio.Queue[Any],
    ) -> None:
        """Run one turn in its own task, forwarding its items to the run's queue."""
        output: TurnOutput | None = None
        guard = self._guards[node]
        try:
            if self._maps[node] is not None:
                output = await self._map_turn(node, token, queue)
            elif guard is not None:
                output = await self._guarded(guard, node, messages, token, queue)
            else:
                async for item in self._turn(node, messages, token):
                    if isinstance(item, TurnOutput):
                        output = item
                    else:
                        queue.put_nowait(item)
        except asyncio.CancelledError:
            queue.put_nowait(_Done(node, None, asyncio.CancelledError()))
            raise
        except Exception as exc:
            queue.put_nowait(_Done(node, None, exc))
            return
        queue.put_nowait(_Done(node, output, None))

    async def _guarded(
        self,
        guard: NodeGuard,
        node: int,
        messages: list[BaseChatMessage],
        token: CancellationToken,
        queue: asyncio.Queue[Any],
    ) -> TurnOutput | None:
        """A turn under its node's policies (timeout, retry, cache)."""
        sched = self._sched

        def turn(given: list[BaseChatMessage]) -> AsyncGenerator[Item | TurnOutput, None]:
            return self._turn(node, given, token)

        def retry_messages(given: list[BaseChatMessage]) -> list[BaseChatMessage]:
            # A nested team that took its messages resumes its own run on a retry.
            return [] if sched.handed_over[node] else given

        report = Attempts()
        step = sched.turn_step[node]
        try:
            return await guard.run(
                turn, messages, queue.put_nowait, report, retry_messages=retry_messages
            )
        finally:
            self.trace.note_attempts(step, report.attempts, cache_hit=report.cache_hit)

    async def _map_turn(
        self, node: int, token: CancellationToken, queue: asyncio.Queue[Any]
    ) -> TurnOutput:
        """The turn of a map target: its instances (see ``_map.py``)."""
        runner = self._maps[node]
        edge = self._plan.map_in[node]
        assert runner is not None and edge is not None
        sched = self._sched
        items, todo = sched.take_map(node)
        name = self._plan.names[node]
        step = sched.turn_step[node]

        def finished(index: int, published: list[BaseChatMessage]) -> None:
            label = instance_name(name, index)
            sched.finish_instance(node, index, published)
            self.trace.note_instance(step, label)
            queue.put_nowait(_Progress(node, label))

        # The instances' idempotency keys derive from the map turn's (flowlib/tools/_keys.py).
        scope = turn_scope(self._run_id, name, sched.node_turns[node])
        with call_scope(scope):
            return await run_map(
                name,
                items,
                todo,
                runner,
                limit=edge.max_concurrency,
                guard=self._guards[node],
                token=token,
                emit=queue.put_nowait,
                finished=finished,
            )

    # --- a run --------------------------------------------------------------------------

    async def run_stream(
        self,
        task: Sequence[BaseChatMessage],
        *,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
        run_id: str | None = None,
        recorder: RunRecorder | None = None,
    ) -> AsyncGenerator[Item | TaskResult, None]:
        """Run until a stop; yield task messages, events and messages, then a TaskResult.

        Args:
            task: The new task messages (may be empty: resume).
            cancellation_token: Cancels the run.
            output_task_messages: Whether the task messages are yielded and kept.
            run_id: Put into the [`TaskResult`][flowlib.base.TaskResult] and the partial
                result of an error.
            recorder: Told about the start, every recorded turn and the stop (checkpoints).

        Raises:
            TeamRunningError: If a run is already in progress.
            NodeExecutionError: If a node raises (state is kept; ``run()`` retries it). The
                error's ``partial_result`` holds what the run produced before it.
            asyncio.CancelledError: If the token is cancelled.
        """
        if self._is_running:
            raise TeamRunningError(
                "The team is already running; wait for the current run to finish (or stop it "
                "with ExternalTermination or a cancellation token) before starting another."
            )
        self._is_running = True
        self._run_id = run_id
        sched = self._sched
        token = cancellation_token or CancellationToken()
        consumer = asyncio.current_task()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        tasks: dict[int, asyncio.Task[None]] = {}
        inline = -1
        # While a turn runs inline, cancelling means cancelling this (the consumer's) task;
        # otherwise the main loop is woken through the queue and cancels the turn tasks.
        inline_active = False

        def on_cancel() -> None:
            if inline_active and consumer is not None:
                consumer.cancel()
            else:
                queue.put_nowait(_Wake())

        token.add_callback(on_cancel)
        self.trace.clear()
        kept: list[Item] = []
        dead_ends: list[tuple[int, BaseChatMessage | None]] = []
        max_turns = self._max_turns
        since_yield = 0
        # An interrupted run (cancelled, failed, or loaded from a checkpoint written
        # before its stop) continues its budget: its turn count and a stop it had decided.
        # A run that stopped or completed starts a new one.
        if not self._open:
            sched.current_turn = 0
            self.pending_stop = None
            self._drain = 0
        stop_reason = self.pending_stop
        drain = self._drain if stop_reason is not None else 0
        self._open = True
        failure: BaseException | None = None
        # Set once the run has ended by itself: a cancel that lands after that (while the
        # stop is written, or while the consumer takes the result) records that end, not
        # a cancellation, since resuming an ended run would run its flow again.
        ended: tuple[RunOutcome, str] | None = None
        try:
            if sched.fresh or (task and not sched.ready):
                sched.start_from_entry()
            if task and self._task_router is not None:
                chosen = self._task_router(task)
                if chosen is not None:
                    sched.replace_ready([self._plan.index[name] for name in chosen])
            for message in task:
                sched.thread.append(message)
                sched.thread_node.append(-1)
            # Termination sees the task before the start checkpoint, so the checkpoint
            # holds the condition's progress with the task counted.
            if self._termination is not None and task and stop_reason is None:
                stop = await self._termination(list(task))
                if stop is not None:
                    stop_reason = self.pending_stop = stop.content
            if recorder is not None:
                await recorder.started()
            if output_task_messages:
                for message in task:
                    kept.append(message)
                    yield message
            for _ in range(min(drain, len(sched.ready)) if stop_reason is not None else 0):
                # The turns that were running when the stop was decided run again.
                node = sched.pop_ready()
                if self._counts[node]:
                    sched.current_turn += 1
                tasks[node] = asyncio.ensure_future(
                    self._drive(node, sched.take_new(node), token, queue)
                )
            self._drain = 0  # running now: counted as running until they finish
            while True:
                while stop_reason is None and sched.ready:
                    if max_turns is not None and sched.current_turn >= max_turns:
                        break
                    if token.is_cancelled():
                        raise asyncio.CancelledError()
                    if tasks or len(sched.ready) > 1 or self._tasked[sched.ready[0]]:
                        node = sched.pop_ready()
                        if self._counts[node]:
                            sched.current_turn += 1
                            if self._event_source is not None:
                                event = self._speaker_event(node)
                                kept.append(event)
                                yield event
                        messages = sched.take_new(node)
                        tasks[node] = asyncio.ensure_future(
                            self._drive(node, messages, token, queue)
                        )
                        continue
                    if since_yield >= YIELD_EVERY:
                        # Inline turns of nodes that never await would otherwise keep the
                        # loop to themselves: no cancellation, external stop or other run
                        # could get in. (Concurrent turns run as tasks and yield anyway.)
                        since_yield = 0
                        await asyncio.sleep(0)
                        continue
                    since_yield += 1
                    node = sched.pop_ready()
                    if self._counts[node]:
                        sched.current_turn += 1
                        if self._event_source is not None:
                            event = self._speaker_event(node)
                            kept.append(event)
                            yield event
                    messages = sched.take_new(node)
                    inline, inline_active = node, True
                    output: TurnOutput | None = None
                    try:
                        async for item in self._turn(node, messages, token):
                            if isinstance(item, TurnOutput):
                                output = item
                                continue
                            if not isinstance(item, ModelClientStreamingChunkEvent):
                                kept.append(item)
                            inline_active = False
                            yield item
                            inline_active = True
                    except (asyncio.CancelledError, GeneratorExit):
                        raise
                    except NodeExecutionError:
                        raise
                    except Exception as exc:
                        raise NodeExecutionError(self._plan.names[node], exc) from exc
                    finally:
                        inline_active = False
                    # The turn finished: record it before anything else can happen, so
                    # neither a late cancellation nor a consumer that stops reading can
                    # take it back or make it run again.
                    self._record_or_raise(node, output, dead_ends)
                    inline = -1
                    # Kept at once: if the run stops during the checkpoint write below, the
                    # recorded reply is still in the error's partial_result.
                    if output is not None:
                        kept.extend(output.tail)
                    stop_reason = await self._after_record(node, output, stop_reason, recorder)
                    if output is not None:
                        for item in output.tail:
                            yield item
                    if token.is_cancelled():
                        _forget_cancel_request(consumer)
                        raise asyncio.CancelledError()

                if not tasks:
                    break
                entry = await queue.get()
                if type(entry) is _Done:
                    if entry.error is not None:
                        # The node stays in `tasks`: cleanup puts it back in the ready set
                        # after recording the turns that finished meanwhile, so an
                        # activation they bring it applies after its re-run.
                        if isinstance(entry.error, asyncio.CancelledError):
                            raise asyncio.CancelledError()
                        raise NodeExecutionError(
                            self._plan.names[entry.node], entry.error
                        ) from entry.error
                    if self._maps[entry.node] is not None:
                        # Instances finished before an interruption are recorded now.
                        recorded = self._record_instances(entry.node)
                        stop_reason = await self._after_instances(recorded, stop_reason)
                        kept.extend(recorded)
                        for item in recorded:
                            yield item
                    self._record_or_raise(entry.node, entry.output, dead_ends)
                    del tasks[entry.node]
                    if entry.output is not None:
                        kept.extend(entry.output.tail)
                    stop_reason = await self._after_record(
                        entry.node, entry.output, stop_reason, recorder
                    )
                    if entry.output is not None:
                        for item in entry.output.tail:
                            yield item
                elif type(entry) is _Wake:
                    raise asyncio.CancelledError()
                elif type(entry) is _Progress:
                    # Instances are recorded in item order as they finish: their outputs
                    # leave along the target's out-edges one by one.
                    recorded = self._record_instances(entry.node)
                    stop_reason = await self._after_instances(recorded, stop_reason)
                    progressed = getattr(recorder, "progressed", None)
                    if progressed is not None:
                        await progressed(entry.node, entry.instance)
                    for item in recorded:
                        kept.append(item)
                        yield item
                else:
                    if not isinstance(entry, ModelClientStreamingChunkEvent):
                        kept.append(entry)
                    yield entry

            natural = False
            if stop_reason is None:
                if sched.ready:
                    stop_reason = f"Maximum number of turns {max_turns} reached."
                else:
                    natural = True
                    stop_reason = self._completion_reason(dead_ends)
            outcome: RunOutcome = "complete" if natural else "stopped"
            ended = (outcome, stop_reason)
            if natural:
                # Only a natural completion starts the next run from the entry; a run
                # stopped by termination as its last node finished has nothing left to do.
                sched.fresh = True
            self._open = False
            self.trace.stop_reason = stop_reason
            if self._termination is not None:
                await self._termination.reset()
            if recorder is not None:
                await recorder.stopped(outcome, stop_reason)
                recorder = None  # the stop is recorded: nothing more to write
            yield TaskResult(messages=kept, stop_reason=stop_reason, run_id=run_id)
        except BaseException as exc:
            failure = exc
            raise
        finally:
            try:
                await self._cleanup(
                    token,
                    on_cancel,
                    inline,
                    tasks,
                    queue,
                    dead_ends,
                    kept,
                    failure,
                    recorder,
                    ended,
                )
            finally:
                if failure is not None and not isinstance(failure, GeneratorExit):
                    failure.partial_result = TaskResult(  # type: ignore[attr-defined]
                        messages=list(kept), stop_reason=None, run_id=run_id
                    )
                self._is_running = False

    def _record_instances(self, node: int) -> list[BaseChatMessage]:
        """Record the instances of map target ``node`` next in item order; their messages."""
        try:
            recorded = self._sched.record_instances(node)
        except NodeExecutionError:
            raise
        except Exception as exc:  # pragma: no cover - only condition and map errors
            raise NodeExecutionError(self._plan.names[node], exc) from exc
        return [message for _, published in recorded for message in published]

    async def _after_instances(
        self, published: list[BaseChatMessage], stop_reason: str | None
    ) -> str | None:
        """Termination sees recorded instances' messages, as it sees a turn's."""
        if published and stop_reason is None and self._termination is not None:
            stop = await self._termination(published)
            if stop is not None:
                stop_reason = self.pending_stop = stop.content
        return stop_reason

    def _record_or_raise(
        self,
        node: int,
        output: TurnOutput | None,
        dead_ends: list[tuple[int, BaseChatMessage | None]],
    ) -> None:
        try:
            self._sched.record(node, output, dead_ends)
        except NodeExecutionError:
            raise
        except Exception as exc:  # pragma: no cover - _record raises only condition errors
            raise NodeExecutionError(self._plan.names[node], exc) from exc

    async def _after_record(
        self,
        node: int,
        output: TurnOutput | None,
        stop_reason: str | None,
        recorder: RunRecorder | None,
    ) -> str | None:
        """Check termination and checkpoint a recorded turn; return the stop reason.

        Termination first: the checkpoint then holds the condition's progress with this
        turn counted, and a stop it decided (``pending_stop``), so a resumed run stops
        where the uninterrupted one did.
        """
        if output is not None and stop_reason is None:
            if self._termination is not None and output.delta:
                stop = await self._termination(output.delta)
                if stop is not None:
                    stop_reason = stop.content
            if stop_reason is None and output.stop_reason is not None:
                stop_reason = output.stop_reason
            self.pending_stop = stop_reason
        if recorder is not None:
            await recorder.recorded(node)
        return stop_reason

    async def _cleanup(
        self,
        token: CancellationToken,
        on_cancel: Callable[[], None],
        inline: int,
        tasks: dict[int, asyncio.Task[None]],
        queue: asyncio.Queue[Any],
        dead_ends: list[tuple[int, BaseChatMessage | None]],
        kept: list[Item],
        failure: BaseException | None,
        recorder: RunRecorder | None,
        ended: tuple[RunOutcome, str] | None = None,
    ) -> None:
        """After a run: stop running turns, record the ones that had already finished,
        put the others back in front of the ready set, write the stop checkpoint."""
        token.remove_callback(on_cancel)
        interrupted = [inline] if inline >= 0 else []
        if tasks:
            for running in tasks.values():
                running.cancel()
            await asyncio.gather(*tasks.values(), return_exceptions=True)
        late: list[int] = []
        while not queue.empty():
            entry = queue.get_nowait()
            if type(entry) is not _Done or entry.node not in tasks:
                continue
            del tasks[entry.node]
            if entry.error is not None:
                interrupted.append(entry.node)
                continue
            # A turn that finished before the stop is recorded, never thrown away.
            try:
                kept.extend(self._record_instances(entry.node))
                self._sched.record(entry.node, entry.output, dead_ends)
            except Exception:
                interrupted.append(entry.node)
                continue
            late.append(entry.node)
            if entry.output is not None:
                kept.extend(entry.output.tail)
        interrupted.extend(tasks)  # cancelled before they ever started
        tasks.clear()
        if interrupted:
            self._sched.requeue_front(interrupted)
            # Their turns run again, and count again, when the run resumes.
            self._sched.current_turn -= sum(self._counts[node] for node in interrupted)
            self._drain = len(interrupted) if self.pending_stop is not None else 0
        if recorder is None:
            return
        try:
            for node in late:
                await recorder.recorded(node)
            if failure is not None:
                outcome: RunOutcome
                if ended is not None and isinstance(
                    failure, (asyncio.CancelledError, GeneratorExit)
                ):
                    outcome, reason = ended
                elif isinstance(failure, asyncio.CancelledError):
                    outcome, reason = "interrupted", "The run was cancelled."
                elif isinstance(failure, GeneratorExit):
                    outcome, reason = "interrupted", "The consumer closed the stream early."
                else:
                    outcome, reason = "failed", f"{type(failure).__name__}: {failure}"
                await recorder.stopped(outcome, reason)
        except Exception:
            if failure is None:
                raise
            # The run's own error is the one to report; the store's is secondary.

    def _speaker_event(self, node: int) -> SelectSpeakerEvent:
        assert self._event_source is not None
        return SelectSpeakerEvent(content=[self._plan.names[node]], source=self._event_source)

    def _completion_reason(self, dead_ends: list[tuple[int, BaseChatMessage | None]]) -> str:
        names = self._plan.names
        notes: list[str] = []
        described: set[int] = set()
        for node, final in dead_ends:
            if node in described:
                continue
            described.add(node)
            if self._dead_end_reason is not None:
                reason = self._dead_end_reason(names[node], final)
                if reason is not None:
                    notes.append(reason)
                    continue
            edges = ", ".join(
                f"`{self._plan.describe_edge(edge)}`" for edge in self._plan.out_edges[node]
            )
            notes.append(f"node `{names[node]}` matched none of its outgoing edges ({edges})")
        for group_id, missing in self._sched.tracker.waiting():
            group = self._plan.groups[group_id]
            edges = ", ".join(f"`{self._plan.describe_edge(self._plan.edges[e])}`" for e in missing)
            notes.append(
                f"node `{names[group.target]}` was still waiting for {edges} "
                f"(activation group `{group.name}`)"
            )
        return COMPLETE_REASON + (": " + "; ".join(notes) if notes else "")

    # --- persistence --------------------------------------------------------------------

    # --- persistence --------------------------------------------------------------------

    def bookkeeping(self, *, settled: bool = False) -> dict[str, Any]:
        """The run state except the thread, at the last consistent point (see
        `Scheduler.bookkeeping`)."""
        return self._sched.bookkeeping(settled=settled)

    def save_state(self) -> GraphManagerState:
        """Everything needed to resume: thread, cursors, ready set, joins, turn count.

        During a run this is the last consistent point: finished turns are in, running
        ones are marked to run again.
        """
        return self._sched.save_state()

    def load_state(self, state: GraphManagerState) -> None:
        """Restore [`save_state`][flowlib.graph.GraphExecutor.save_state] output into this (stopped)
        executor. Everything is checked before anything changes.

        Raises:
            StateError: If the state's version, node names, edges or cursors do not fit this
                graph.
        """
        self._sched.apply_state(self._sched.check_state(state))

    def check_state(
        self, state: GraphManagerState, *, thread: Sequence[Any] | None = None
    ) -> LoadedState:
        """Validate ``state`` against this graph without changing anything.

        Args:
            state: The state to check.
            thread: The message thread's dumps, used instead of ``state.message_thread``.

        Raises:
            StateError: If the state's version, node names, edges or cursors do not fit.
        """
        return self._sched.check_state(state, thread=thread)

    def apply_state(self, loaded: LoadedState) -> None:
        """Install a state checked by [`check_state`][flowlib.graph.GraphExecutor.check_state]."""
        self._sched.apply_state(loaded)


def _forget_cancel_request(task: asyncio.Task[Any] | None) -> None:
    """Drop a pending cancel request that we turn into our own CancelledError."""
    if task is not None and sys.version_info >= (3, 11):
        while task.cancelling():
            task.uncancel()
