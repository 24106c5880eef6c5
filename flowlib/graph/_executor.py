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
import contextlib
import sys
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

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
from ._scheduler import Scheduler
from ._shapes import Participant
from ._trace import ObservedTurn, RunTrace

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
        self._plan, self._participants = plan, list(participants)
        # What the team decides: its speaker events, task routing and dead-end reasons.
        self._event_source, self._task_router = event_source, task_router
        self._dead_end_reason = dead_end_reason
        self._termination, self._max_turns = termination_condition, max_turns
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
            edge_groups=[plan.groups[e.group].name for e in plan.edges],
        )
        # The only look at the participants' classes: each becomes its Node adapter once.
        self._nodes = [
            as_node(participant, self._context(node, participant, message_factory))
            for node, participant in enumerate(self._participants)
        ]
        self._counts = [node.counts_turn for node in self._nodes]
        # The run state (per node: one NodeRun each) and its transitions.
        self._sched = Scheduler(plan, message_factory, self.trace, self._counts)
        self._inline = -1  # the node whose turn runs inline now (-1: none)
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
            self._sched.nodes[node].handed_over = True

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
    def scheduler(self) -> Scheduler:
        """The run state (thread, ready queue, joins, one
        [`NodeRun`][flowlib.graph.NodeRun] per node) and its transitions: what a
        checkpoint saves and a resume loads (`save_state`, `bookkeeping`,
        `check_state`, `apply_state`)."""
        return self._sched

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

    @property
    def counts_turn(self) -> list[bool]:
        """Per node, whether its turns count toward ``max_turns`` (routers' do not)."""
        return list(self._counts)

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
        running = [node for node, run in enumerate(sched.nodes) if run.running]
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
        # The turn runs in its idempotency-key scope (flowlib/tools/_keys.py), and under
        # the scopes the trace's run observers keep of it (a turn span, flowlib/graph/
        # _telemetry.py): none when nobody follows turns, and the turn runs as is.
        run = self._sched.nodes[node]
        scope = turn_scope(self._run_id, self._plan.names[node], run.turns)
        stream = keyed_turn(self._nodes[node].turn(messages, token), scope)
        scopes = self.trace.turn_started(run.turn_step)
        return ObservedTurn(stream, scopes) if scopes else stream

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
            return [] if sched.nodes[node].handed_over else given

        report = Attempts()
        step = sched.nodes[node].turn_step
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
        step = sched.nodes[node].turn_step

        def finished(index: int, published: list[BaseChatMessage]) -> None:
            label = instance_name(name, index)
            sched.finish_instance(node, index, published)
            self.trace.note_instance(step, label)
            queue.put_nowait(_Progress(node, label))

        # The instances' idempotency keys derive from the map turn's (flowlib/tools/_keys.py).
        scope = turn_scope(self._run_id, name, sched.nodes[node].turns)
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
        self._inline = -1  # the node whose turn runs inline now
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
        self.trace.run_started()
        result_size: int | None = None  # messages in the run's result, once it has one
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
                node, messages, _ = self._start(announce=False)
                tasks[node] = asyncio.ensure_future(self._drive(node, messages, token, queue))
            self._drain = 0  # running now: counted as running until they finish
            while True:
                # ready -> run -> record. One node ready and nothing running: its turn is
                # driven inline (no task, no queue); otherwise each turn is a task whose
                # end comes back through the queue.
                while self.pending_stop is None and sched.ready:
                    if max_turns is not None and sched.current_turn >= max_turns:
                        break
                    if token.is_cancelled():
                        raise asyncio.CancelledError()
                    alone = not tasks and len(sched.ready) == 1
                    inline_next = alone and not self._tasked[sched.ready[0]]
                    if inline_next and since_yield >= YIELD_EVERY:
                        # Inline turns of nodes that never await would otherwise keep the
                        # loop to themselves: no cancellation, external stop or other run
                        # could get in. (Concurrent turns run as tasks and yield anyway.)
                        since_yield = 0
                        await asyncio.sleep(0)
                        continue
                    node, messages, event = self._start()
                    if inline_next:
                        self._inline = node
                        since_yield += 1
                    else:
                        tasks[node] = asyncio.ensure_future(
                            self._drive(node, messages, token, queue)
                        )
                    if event is not None:
                        kept.append(event)
                        yield event
                    if not inline_next:
                        continue
                    output: TurnOutput | None = None
                    inline_active = True
                    turn = self._turn(node, messages, token)
                    try:
                        async for item in turn:
                            if isinstance(item, TurnOutput):
                                output = item
                                continue
                            if not isinstance(item, ModelClientStreamingChunkEvent):
                                kept.append(item)
                            inline_active = False
                            yield item
                            inline_active = True
                    except GeneratorExit:
                        # The consumer stopped reading during the turn: the turn ends
                        # here (its observers see it end), not when it is collected; an
                        # error while it closes is the turn's, not this stop's.
                        with contextlib.suppress(Exception):
                            await turn.aclose()
                        raise
                    except asyncio.CancelledError:
                        raise
                    except NodeExecutionError:
                        raise
                    except Exception as exc:
                        raise NodeExecutionError(self._plan.names[node], exc) from exc
                    finally:
                        inline_active = False
                    async for item in self._record(node, output, tasks, dead_ends, kept, recorder):
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
                    async for item in self._record(
                        entry.node, entry.output, tasks, dead_ends, kept, recorder
                    ):
                        yield item
                elif type(entry) is _Wake:
                    raise asyncio.CancelledError()
                elif type(entry) is _Progress:
                    # Instances are recorded in item order as they finish: their outputs
                    # leave along the target's out-edges one by one.
                    recorded = self._record_instances(entry.node)
                    await self._after_instances(recorded)
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

            stop_reason = self.pending_stop
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
            result_size = len(kept)
            yield TaskResult(messages=kept, stop_reason=stop_reason, run_id=run_id)
        except BaseException as exc:
            failure = exc
            raise
        finally:
            try:
                await self._cleanup(
                    token,
                    on_cancel,
                    self._inline,
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
                self.trace.run_ended(result_size, failure)

    def _start(
        self, *, announce: bool = True
    ) -> tuple[int, list[BaseChatMessage], SelectSpeakerEvent | None]:
        """Start the next ready node's turn (the scheduler marks it running and counts
        it): the node, the messages new to it, and the team's speaker event to stream
        first (with ``announce``, for a counted turn of a team that emits them)."""
        node, messages = self._sched.start()
        event = None
        if announce and self._event_source is not None and self._counts[node]:
            event = SelectSpeakerEvent(content=[self._plan.names[node]], source=self._event_source)
        return node, messages, event

    def _record_turn(
        self,
        node: int,
        output: TurnOutput | None,
        dead_ends: list[tuple[int, BaseChatMessage | None]],
        kept: list[Item],
    ) -> tuple[list[BaseChatMessage], Sequence[Item]]:
        """Record a finished turn in the scheduler (for a map target, its instances not
        yet recorded first) and keep what it streams; return the instances' messages and
        the turn's tail. Raises what recording raises (a condition's error); then nothing
        is recorded."""
        instances = self._sched_instances(node) if self._maps[node] is not None else []
        self._sched.record(node, output, dead_ends)
        tail = output.tail if output is not None else ()
        kept.extend(instances)
        kept.extend(tail)
        return instances, tail

    async def _record(
        self,
        node: int,
        output: TurnOutput | None,
        tasks: dict[int, asyncio.Task[None]],
        dead_ends: list[tuple[int, BaseChatMessage | None]],
        kept: list[Item],
        recorder: RunRecorder | None,
    ) -> AsyncGenerator[Item, None]:
        """Record a finished turn, then check termination and checkpoint it; yield what
        it streams once recorded.

        The turn is recorded before anything else can happen, so neither a late
        cancellation nor a consumer that stops reading can take it back or make it run
        again; it is kept at once, so if the run stops during the checkpoint write the
        reply is still in the error's partial_result. Termination comes before the
        checkpoint: the checkpoint then holds the condition's progress with this turn
        counted, and a stop it decided (``pending_stop``), so a resumed run stops where
        the uninterrupted one did.
        """
        try:
            instances, tail = self._record_turn(node, output, dead_ends, kept)
        except NodeExecutionError:
            raise
        except Exception as exc:  # pragma: no cover - recording raises only condition errors
            raise NodeExecutionError(self._plan.names[node], exc) from exc
        tasks.pop(node, None)
        if self._inline == node:
            self._inline = -1
        await self._after_instances(instances)
        if output is not None and self.pending_stop is None:
            if self._termination is not None and output.delta:
                stop = await self._termination(output.delta)
                if stop is not None:
                    self.pending_stop = stop.content
            if self.pending_stop is None and output.stop_reason is not None:
                self.pending_stop = output.stop_reason
        if recorder is not None:
            await recorder.recorded(node)
        for item in (*instances, *tail):
            yield item

    def _sched_instances(self, node: int) -> list[BaseChatMessage]:
        """Record the instances of map target ``node`` next in item order; their messages."""
        return [m for _, published in self._sched.record_instances(node) for m in published]

    def _record_instances(self, node: int) -> list[BaseChatMessage]:
        """`_sched_instances`, its errors as the node's `NodeExecutionError`."""
        try:
            return self._sched_instances(node)
        except NodeExecutionError:
            raise
        except Exception as exc:  # pragma: no cover - only condition and map errors
            raise NodeExecutionError(self._plan.names[node], exc) from exc

    async def _after_instances(self, published: list[BaseChatMessage]) -> None:
        """Termination sees recorded instances' messages, as it sees a turn's."""
        if published and self.pending_stop is None and self._termination is not None:
            stop = await self._termination(published)
            if stop is not None:
                self.pending_stop = stop.content

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
                self._record_turn(entry.node, entry.output, dead_ends, kept)
            except Exception:
                interrupted.append(entry.node)
                continue
            late.append(entry.node)
        interrupted.extend(tasks)  # cancelled before they ever started
        tasks.clear()
        if interrupted:
            # Their turns run again, and count again, when the run resumes.
            self._sched.requeue_front(interrupted)
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


def _forget_cancel_request(task: asyncio.Task[Any] | None) -> None:
    """Drop a pending cancel request that we turn into our own CancelledError."""
    if task is not None and sys.version_info >= (3, 11):
        while task.cancelling():
            task.uncancel()
