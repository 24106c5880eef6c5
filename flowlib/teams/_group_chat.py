"""What every team shares: a compiled graph run by the one executor.

A team subclass decides only how its participants become a [`DiGraph`][flowlib.teams.DiGraph];
running, streaming, stopping, resetting, pausing and saving state live here, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from abc import ABC
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from typing import Any, ClassVar

from pydantic import ValidationError

from .._telemetry import trace_team_run
from ..base import CancellationToken, TaskResult, Team, TerminationCondition
from ..base._arguments import check_state_argument, load_atomically
from ..base._task import task_messages
from ..checkpoint import (
    CheckpointStore,
    FoldedRun,
    Journal,
    RunRecord,
    StateChange,
    appended,
    diff_state,
    json_state,
    patch_of,
)
from ..checkpoint._fork import fork_run
from ..errors import (
    ArgumentTypeError,
    ContractError,
    DuplicateNodeError,
    InvalidArgumentError,
    ParticipantMismatchError,
    StateError,
    TeamRunningError,
)
from ..graph import (
    DiGraph,
    ExecutionPlan,
    GraphExecutor,
    GraphManagerState,
    Node,
    RunTrace,
    graph_description,
    graph_difference,
    graph_signature,
)
from ..graph._executor import Budget
from ..graph._shapes import Participant
from ..graph._state import GRAPH_STATE_VERSION
from ..graph._validate import check_loop_bounded, validate_graph
from ..messages import BaseAgentEvent, BaseChatMessage, MessageFactory
from ._durable import Checkpointer, Durability, StoredRun
from ._policy import TaskContext, TeamPolicy
from ._run import Run

__all__ = ["TEAM_STATE_VERSION", "BaseGroupChat", "reject_runtime"]

TEAM_STATE_VERSION = 1

_ABANDON_SPINS = 8
"""Loop iterations a new run waits for an abandoned ``run_stream`` (left with ``break``)
to start closing; Python closes such a stream through the event loop, in 2 or 3."""


def reject_runtime(runtime: object) -> None:
    """Teams accept ``runtime=`` for AutoGen compatibility; only None is meaningful.

    Raises:
        ValueError: If a runtime was given.
    """
    if runtime is not None:
        raise InvalidArgumentError(
            "flowlib runs teams on its own graph executor and has no separate agent "
            "runtime; remove the `runtime=` argument.",
            argument="runtime",
        )


class BaseGroupChat(Team, ABC):
    """Base class of flowlib's teams: participants, a graph, and the shared executor.

    Args:
        name: The team's name.
        description: What the team does.
        participants: The agents and nested teams, one per graph node.
        graph: The compiled graph; its nodes must be exactly the participants.
        termination_condition: Checked after every turn; stops the run when it fires.
        max_turns: At most this many turns per run.
        custom_message_types: Message classes (beyond the built-ins) the participants
            produce, so saved states can be loaded back.
        allow_unconditional_cycles: Accept loops with no conditional edge (teams bounded
            by their termination condition, such as round-robin).
        emit_team_events: Stream a ``SelectSpeakerEvent`` before each speaker's turn.
        allow_unreachable: Accept nodes no edge leads to from the entry (teams whose new
            tasks can start at any node, such as Swarm).
        checkpoint_store: Where runs are checkpointed (see docs/state.md); None: in
            memory only.
        durability: ``"sync"``: a checkpoint after every recorded turn, written before the
            turn's messages reach the consumer; ``"exit"``: only at the run's stops.

        policy: How the team checks and routes a task and explains a dead end (see
            [`TeamPolicy`][flowlib.teams.TeamPolicy]); None: the default policy.
        turn_timeout: Seconds each turn may take (the default of every node's
            ``timeout``): past it the turn is cancelled, counts as a failed attempt and,
            with no retry left, fails the run resumably.

    Raises:
        ValueError: If there are no participants or ``max_turns`` is below 1.
        GraphError: If the graph is invalid or does not match the participants.
    """

    component_type: ClassVar[str] = "team"

    def __init__(
        self,
        *,
        name: str,
        description: str,
        participants: Sequence[Participant],
        graph: DiGraph,
        termination_condition: TerminationCondition | None = None,
        max_turns: int | None = None,
        custom_message_types: Sequence[type[BaseAgentEvent | BaseChatMessage]] | None = None,
        allow_unconditional_cycles: bool = False,
        emit_team_events: bool = False,
        allow_unreachable: bool = False,
        checkpoint_store: CheckpointStore | None = None,
        durability: Durability = "sync",
        policy: TeamPolicy | None = None,
        turn_timeout: float | None = None,
    ) -> None:
        if policy is not None and not isinstance(policy, TeamPolicy):
            raise ArgumentTypeError(
                f"policy must be a TeamPolicy, not {type(policy).__name__}.", argument="policy"
            )
        if checkpoint_store is not None and not isinstance(checkpoint_store, CheckpointStore):
            raise ArgumentTypeError(
                f"checkpoint_store must be a CheckpointStore (e.g. SQLiteCheckpointStore("
                f"'runs.db')), not {type(checkpoint_store).__name__}.",
                argument="checkpoint_store",
            )
        if durability not in ("sync", "exit"):
            raise InvalidArgumentError(
                f"durability must be 'sync' or 'exit', not {durability!r}.",
                argument="durability",
            )
        if not participants:
            raise InvalidArgumentError(
                f"{type(self).__name__} needs at least one participant; pass a list of agents.",
                argument="participants",
            )
        if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
            raise InvalidArgumentError(
                f"max_turns must be a positive integer or None, not {max_turns!r}.",
                argument="max_turns",
            )
        by_name: dict[str, Participant] = {}
        for participant in participants:
            if participant.name in by_name:
                raise DuplicateNodeError(
                    f"Two participants are named `{participant.name}`; participant names must "
                    "be unique within a team. Rename one of them.",
                    nodes=[participant.name],
                )
            by_name[participant.name] = participant
        analysis = validate_graph(
            graph,
            allow_unconditional_cycles=allow_unconditional_cycles,
            allow_unreachable=allow_unreachable,
            has_termination=termination_condition is not None,
            max_turns=max_turns,
            team=name,
        )
        missing = [name for name in analysis.names if name not in by_name]
        extra = [name for name in by_name if name not in analysis.index]
        if missing or extra:
            parts = []
            if missing:
                parts.append(
                    "graph nodes without a participant: " + ", ".join(f"`{n}`" for n in missing)
                )
            if extra:
                parts.append(
                    "participants that are not graph nodes: " + ", ".join(f"`{n}`" for n in extra)
                )
            raise ParticipantMismatchError(
                f"The participants and the graph's nodes differ ({'; '.join(parts)}). Pass "
                "`builder.get_participants()` as the participants, or add the missing nodes.",
                nodes=missing + extra,
            )
        self._name = name
        self._description = description
        self._graph = graph
        self._participants = [by_name[node] for node in analysis.names]
        self._termination_condition = termination_condition
        self._max_turns = max_turns
        self._message_factory = MessageFactory()
        for message_type in custom_message_types or ():
            if not self._message_factory.is_registered(message_type):
                self._message_factory.register(message_type)
        self._message_factory.register_produced(self._participants)
        self._plan = ExecutionPlan(graph, analysis)
        self._policy = policy if policy is not None else TeamPolicy()
        self._executor = GraphExecutor(
            self._plan,
            self._participants,
            termination_condition=termination_condition,
            max_turns=max_turns,
            message_factory=self._message_factory,
            event_source=name if emit_team_events else None,
            task_router=self._policy.route_task,
            dead_end_reason=self._policy.describe_dead_end,
            turn_timeout=turn_timeout,
        )
        self._emit_team_events = emit_team_events
        self._checkpoint_store = checkpoint_store
        self._durability: Durability = durability
        self._graph_description = graph_description(self._plan)
        self._graph_signature = graph_signature(self._graph_description)
        self._stored: StoredRun | None = None  # the stored run the team's state is at
        self._checkpointer: Checkpointer | None = None
        self._busy = False
        self._closing = False
        self._idle: asyncio.Event | None = None
        self._journal = Journal()  # what save_state_since returned last
        self._run = Run("", executor=self._executor, termination=termination_condition)

    @property
    def policy(self) -> TeamPolicy:
        """How the team checks and routes a task and explains a dead end."""
        return self._policy

    @property
    def plan(self) -> ExecutionPlan:
        """The compiled graph the team runs (read it, do not change it)."""
        return self._plan

    # --- identity -----------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The team's name."""
        return self._name

    @property
    def description(self) -> str:
        """The team's description."""
        return self._description

    @property
    def graph(self) -> DiGraph:
        """The compiled graph IR: validate it, dump it or draw it."""
        return self._graph

    @property
    def participants(self) -> list[Participant]:
        """The participants, in graph-node order."""
        return list(self._participants)

    @property
    def termination_condition(self) -> TerminationCondition | None:
        """The team's termination condition."""
        return self._termination_condition

    @property
    def max_turns(self) -> int | None:
        """The per-run turn limit."""
        return self._max_turns

    @property
    def turn_timeout(self) -> float | None:
        """The deadline of each turn in seconds (None: none), see ``turn_timeout=``."""
        return self._executor.turn_timeout

    @property
    def checkpoint_store(self) -> CheckpointStore | None:
        """Where runs are checkpointed, if anywhere."""
        return self._checkpoint_store

    @property
    def durability(self) -> Durability:
        """When checkpoints are written (``"sync"`` or ``"exit"``)."""
        return self._durability

    @property
    def graph_signature(self) -> str:
        """The hash of the graph stored with each run (a resumed run must match it)."""
        return self._graph_signature

    @property
    def trace(self) -> RunTrace:
        """The path the most recent run took (nodes started, edges fired)."""
        return self._executor.trace

    # --- running ------------------------------------------------------------------------

    async def run(
        self,
        *,
        task: str | BaseChatMessage | Sequence[BaseChatMessage] | None = None,
        cancellation_token: CancellationToken | None = None,
        run_id: str | None = None,
        fork_from: tuple[str, str | int] | None = None,
        output_task_messages: bool = True,
    ) -> TaskResult:
        """Run the team and return every message of the run and why it stopped.

        Args:
            task: A string, a chat message or a list of them; ``None`` resumes where the
                previous run stopped (or starts from the entry nodes).
            cancellation_token: Aborts the run; the await raises ``CancelledError``.
            run_id: The run's id (generated when not given; the result says which). With a
                ``checkpoint_store`` that has this run, the team continues it from its
                latest checkpoint (a ``task`` is a new turn of it); a run that completed
                and no ``task`` returns its stored result without running anything.
            fork_from: ``(run_id, checkpoint_id)``: start the new run ``run_id`` from that
                checkpoint of another stored run.
            output_task_messages: Whether the task messages start the result.

        Raises:
            NodeExecutionError: If a participant raises; the team keeps its state and the
                error's ``partial_result`` holds the messages produced before it.
            TeamRunningError: If the team is already running.
            StateError: If the stored run was made with a different graph.
            CheckpointError: If the store refuses a read or write.

        Examples:
            ```python
            store = SQLiteCheckpointStore("runs.db")
            team = GraphFlow(participants, graph, checkpoint_store=store)
            result = await team.run(task="write", run_id="job-1")
            # later, in another process, after a crash:
            result = await make_team(store).run(run_id="job-1")
            ```
        """
        result: TaskResult | None = None
        async with aclosing(
            self.run_stream(
                task=task,
                cancellation_token=cancellation_token,
                run_id=run_id,
                fork_from=fork_from,
                output_task_messages=output_task_messages,
            )
        ) as stream:
            async for item in stream:
                if isinstance(item, TaskResult):
                    result = item
        if result is None:  # pragma: no cover - run_stream always ends with a TaskResult
            raise ContractError("The run ended without a TaskResult.")
        return result

    async def run_stream(
        self,
        *,
        task: str | BaseChatMessage | Sequence[BaseChatMessage] | None = None,
        cancellation_token: CancellationToken | None = None,
        run_id: str | None = None,
        fork_from: tuple[str, str | int] | None = None,
        output_task_messages: bool = True,
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | TaskResult, None]:
        """Like [`run`][flowlib.teams.BaseGroupChat.run], yielding messages and events as they
        happen, then the result.

        Streaming chunks are yielded but not kept in ``TaskResult.messages``. Leaving the
        loop early (``break``) closes the run: a ``run()`` right afterwards works.
        """
        messages = task_messages(task)
        self._message_factory.check(messages)
        run_id = _check_run_id(run_id)
        fork = _check_fork(fork_from, self._checkpoint_store)
        if fork is not None and run_id is None:
            raise InvalidArgumentError(
                "fork_from needs the new run's `run_id=`; pass a new id for the fork.",
                argument="run_id",
            )
        check_loop_bounded(  # a round-robin ring may be built unbounded; refused here
            self._plan.analysis,
            has_termination=self._termination_condition is not None,
            max_turns=self._max_turns,
            team=self._name,
        )
        await self._claim()
        idle = self._idle
        try:
            if run_id is None:
                run_id = uuid.uuid4().hex
            self._run.run_id = run_id
            checkpointer: Checkpointer | None = None
            if self._checkpoint_store is not None:
                prepared = await self._prepare_stored_run(
                    self._checkpoint_store, run_id, fork, messages
                )
                if isinstance(prepared, TaskResult):
                    yield prepared
                    return
                checkpointer = prepared
            policy = self._policy
            policy.check_task(
                messages,
                TaskContext(
                    [p.name for p in self._participants],
                    self._executor.thread,
                    self._executor.is_running,
                ),
            )
            if messages:
                policy.start_task(messages)
            self._run.begin()
            self._checkpointer = checkpointer
            # Closed at once when the caller stops reading, so the team is free again.
            async with aclosing(
                trace_team_run(  # telemetry (flowlib/_telemetry.py): span and event logs
                    self,
                    self._executor.run_stream(
                        messages,
                        cancellation_token=cancellation_token,
                        output_task_messages=output_task_messages,
                        run_id=run_id,
                        recorder=checkpointer,
                    ),
                )
            ) as stream:
                async for item in stream:
                    try:
                        yield item
                    except GeneratorExit:
                        self._closing = True  # a new run may wait for this cleanup
                        raise
        finally:
            self._checkpointer = None
            self._busy = False
            if idle is not None:
                idle.set()

    async def _claim(self) -> None:
        """Mark the team running, first letting an abandoned stream finish closing.

        Raises:
            TeamRunningError: If another run is in progress.
        """
        spins = 0
        while self._busy:
            if self._closing and self._idle is not None:
                await self._idle.wait()
                continue
            if spins >= _ABANDON_SPINS:
                raise TeamRunningError(
                    f"`{self._name}` is already running; wait for the current run to finish "
                    "(or stop it with ExternalTermination or a cancellation token, or close "
                    "its run_stream) before starting another."
                )
            spins += 1
            await asyncio.sleep(0)
        self._busy = True
        self._closing = False
        self._idle = asyncio.Event()

    # --- stored runs --------------------------------------------------------------------

    def _check_stored_graph(self, run: RunRecord) -> None:
        if run.state_version != GRAPH_STATE_VERSION:
            raise StateError(
                f"Run `{run.run_id}` was stored with state version {run.state_version}; this "
                f"flowlib reads version {GRAPH_STATE_VERSION}. Resume it with the flowlib "
                "version that wrote it."
            )
        if run.graph_signature != self._graph_signature:
            difference = graph_difference(run.graph, self._graph_description)
            raise StateError(
                f"Run `{run.run_id}` was stored by a team with a different graph "
                f"({difference or 'the graphs differ'}). Resume it with a team built with "
                "the same participants and graph, or start a new run.",
            )

    def _new_checkpointer(self, stored: StoredRun) -> Checkpointer:
        assert self._checkpoint_store is not None
        stored.result_from = len(self._executor.thread)
        return Checkpointer(
            self._checkpoint_store,
            stored,
            durability=self._durability,
            executor=self._executor,
            run=self._run,
        )

    def _run_record(self, run_id: str, forked_from: tuple[str, int] | None) -> RunRecord:
        now = time.time()
        return RunRecord(
            run_id=run_id,
            team_type=type(self).__name__,
            graph_signature=self._graph_signature,
            graph=self._graph_description,
            state_version=GRAPH_STATE_VERSION,
            status="running",
            created_at=now,
            updated_at=now,
            forked_from=forked_from,
        )

    async def _prepare_stored_run(
        self,
        store: CheckpointStore,
        run_id: str,
        fork: tuple[str, int] | None,
        task: Sequence[BaseChatMessage],
    ) -> Checkpointer | TaskResult:
        """Load (or create) the stored run ``run_id``; a completed run asked for no new
        task gives its stored result instead."""
        if fork is not None:
            # The fork's run and first record are stored in one transaction; a retried
            # fork uses the fork an interrupted call left whole (see `fork_run`).
            folded = await fork_run(
                store,
                self._run_record(run_id, fork),
                check=self._check_stored_graph,
                install=self._install,
            )
            self._run.run_id = run_id
            stored = StoredRun(
                run_id,
                1,
                dict(folded.participants),
                folded.turn,
                saved_upto=len(folded.messages),
            )
            self._stored = stored
            return self._new_checkpointer(stored)
        run = await store.get_run(run_id)
        if run is not None and run.last_checkpoint > 0:
            self._check_stored_graph(run)
            current = self._stored
            if (
                current is None
                or current.run_id != run_id
                or current.last_checkpoint != run.last_checkpoint
            ):
                folded = await store.load(run_id)
                await self._install(folded)
                current = StoredRun(
                    run_id,
                    folded.last_checkpoint,
                    dict(folded.participants),
                    folded.turn,
                    int(folded.bookkeeping.get("result_from", 0)),
                    len(folded.messages),
                )
                self._stored = current
            if run.status == "complete" and not task:
                return TaskResult(
                    messages=list(self._executor.thread[current.result_from :]),
                    stop_reason=run.stop_reason,
                    run_id=run_id,
                )
            return self._new_checkpointer(current)
        # A new run starts from whatever state the team is in. Its first record is the
        # `start` record, written by the checkpointer once the task is in the thread: it
        # holds the whole state and the task in one append, so a stored record always
        # has the task. (A run stored without any record died before its first write:
        # it starts so, with the task given again.)
        if run is not None:
            self._check_stored_graph(run)
        else:
            await store.create_run(self._run_record(run_id, None))
        stored = StoredRun(run_id, 0)
        self._stored = stored
        return self._new_checkpointer(stored)

    async def _install(self, folded: FoldedRun) -> None:
        """Load a folded stored run into the team (all checked before anything changes)."""
        try:
            manager = GraphManagerState.model_validate(
                {
                    **folded.bookkeeping,
                    "message_thread": folded.messages,
                    "thread_nodes": folded.message_nodes,
                }
            )
        except ValidationError as exc:
            raise StateError(
                f"Stored run `{folded.run_id}` has unreadable bookkeeping: {exc}"
            ) from exc
        await self._load_checked(manager, folded.participants)
        self._run.run_id = folded.run_id
        await self._run.restore(folded.bookkeeping.get("run"), self._executor.thread)

    async def reset(self) -> None:
        """Clear the team's thread and run state and reset every participant.

        Raises:
            RuntimeError: If the team is running.
        """
        self._require_stopped("reset")
        self._executor.reset()
        self._stored = None
        for node in self._executor.nodes:
            await node.reset()
        if self._termination_condition is not None:
            await self._termination_condition.reset()

    async def pause(self) -> None:
        """Pause every participant through its node (``on_pause``; ``pause`` on nested teams)."""
        for node in self._executor.nodes:
            await node.pause()

    async def resume(self) -> None:
        """Resume every participant through its node (``on_resume``; ``resume`` on nested teams)."""
        for node in self._executor.nodes:
            await node.resume()

    def _require_stopped(self, action: str) -> None:
        if self._busy or self._executor.is_running:
            raise TeamRunningError(
                f"Cannot {action} `{self._name}` while it is running; wait for the run to "
                "finish or stop it with ExternalTermination first."
            )

    # --- state --------------------------------------------------------------------------

    @property
    def _manager_key(self) -> str:
        return f"{type(self).__name__}Manager"

    async def save_state(self) -> Mapping[str, Any]:
        """Return the team's state: every participant's state by name, plus the executor's.

        The result is JSON-serialisable and versioned;
        [`load_state`][flowlib.teams.BaseGroupChat.load_state] on a freshly built team with the same
        participants and graph resumes exactly here. During a run it is the last consistent
        point: finished turns are in, running ones are marked to run again (with a
        checkpoint store, their participants' states are the ones from before the turn).
        """
        running = set(self._executor.running)
        checkpointer = self._checkpointer
        agent_states: dict[str, Any] = {}
        for node in self._executor.nodes:
            settled = None
            if node.name in running and checkpointer is not None:
                settled = checkpointer.settled_state(node.name)
            if settled is not None:
                agent_states[node.name] = settled
            else:
                agent_states[node.name] = dict(await node.save_state())
        agent_states[self._manager_key] = self._executor.save_state().model_dump(mode="json")
        return {"type": "TeamState", "version": TEAM_STATE_VERSION, "agent_states": agent_states}

    async def save_state_since(self, base: Any) -> StateChange:
        """The state now (as `save_state()` gives it, in JSON) and the patch from ``base``.

        When ``base`` is the state this returned last and the team is not running, each
        participant reports its own change (see
        [`IncrementalState`][flowlib.checkpoint.IncrementalState]) and only the thread
        entries added since are dumped: a team nested in a checkpointed team costs its
        turn's change, not its whole history.
        """
        executor = self._executor
        lists: list[list[Any]] = [executor.thread, executor.thread_nodes]
        journal = self._journal
        idle = not (self._busy or executor.is_running)
        if (
            not idle
            or type(self).save_state is not BaseGroupChat.save_state
            or not journal.fits(base, lists)
        ):
            state = json_state(await self.save_state())
            if idle:
                journal.keep(state, lists)
            return StateChange(state, diff_state(base, state))
        base_states = base["agent_states"]
        states: dict[str, Any] = {}
        known: dict[str, Any] = {}
        for node in executor.nodes:
            change = await node.save_state_since(base_states.get(node.name))
            states[node.name] = change.state
            known[node.name] = change.patch
        key = self._manager_key
        manager_base = base_states[key]
        start = journal.start(0)
        names = self._plan.names
        added = [dict(message.dump()) for message in executor.thread[start:]]
        origins = [names[n] if n >= 0 else None for n in executor.thread_nodes[start:]]
        manager = {
            **GraphManagerState(**executor.bookkeeping()).model_dump(mode="json"),
            "message_thread": [*manager_base["message_thread"], *added],
            "thread_nodes": [*manager_base["thread_nodes"], *origins],
        }
        threads = {"message_thread": appended(added), "thread_nodes": appended(origins)}
        known[key] = patch_of(manager_base, manager, threads)
        states[key] = manager
        state = {"type": "TeamState", "version": TEAM_STATE_VERSION, "agent_states": states}
        patch = patch_of(base, state, {"agent_states": patch_of(base_states, states, known)})
        if not patch:
            return StateChange(base, {})
        journal.keep(state, lists)
        return StateChange(state, patch)

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore a state returned by [`save_state`][flowlib.teams.BaseGroupChat.save_state].

        Everything is checked before the team changes: a state that does not load leaves
        the team as it was.

        Raises:
            StateError: If the state's version, participants or graph do not fit this team.
            TeamRunningError: If the team is running.
        """
        check_state_argument(state, self._name)
        self._require_stopped("load state into")
        await load_atomically(self._name, state, self.save_state, self._load_state)

    async def _load_state(self, state: Mapping[str, Any]) -> None:
        version = state.get("version")
        if version != TEAM_STATE_VERSION:
            raise StateError(
                f"Team state has version {version!r}; this flowlib reads version "
                f"{TEAM_STATE_VERSION}. Save it again with this version of flowlib."
            )
        agent_states = state.get("agent_states")
        if not isinstance(agent_states, Mapping):
            raise StateError(
                "Team state has no `agent_states` mapping; pass the dict `save_state()` returned."
            )
        expected = {p.name for p in self._participants} | {self._manager_key}
        unknown = sorted(set(agent_states) - expected)
        missing = sorted(expected - set(agent_states))
        if unknown or missing:
            problems = []
            if unknown:
                problems.append("unknown entries " + ", ".join(f"`{n}`" for n in unknown))
            if missing:
                problems.append("missing entries " + ", ".join(f"`{n}`" for n in missing))
            raise StateError(
                f"Team state does not fit `{self._name}`: {'; '.join(problems)}. Load it into "
                "a team built with the same participants."
            )
        try:
            manager = GraphManagerState.model_validate(agent_states[self._manager_key])
        except ValidationError as exc:
            raise StateError(
                f"Team state's `{self._manager_key}` entry is malformed: {exc}"
            ) from exc
        await self._load_checked(
            manager, {p.name: agent_states[p.name] for p in self._participants}
        )
        # A loaded state's next run starts a new budget (as after any stop).
        self._executor.restore_budget(Budget(turns=self._executor.budget().turns))
        self._stored = None

    async def _load_checked(
        self, manager: GraphManagerState, participant_states: Mapping[str, Any]
    ) -> None:
        """Install ``manager`` and the participants' states, or change nothing.

        The executor state is checked first; participants are loaded one by one and, if
        one refuses its state, every participant gets its previous state back.
        """
        loaded = self._executor.check_state(manager)
        nodes = self._executor.nodes
        previous = {node.name: await node.save_state() for node in nodes}
        touched: list[Node] = []
        for node in nodes:
            if node.name not in participant_states:
                continue
            touched.append(node)
            try:
                await node.load_state(participant_states[node.name])
            except Exception as exc:
                for done in touched:
                    with contextlib.suppress(Exception):  # its own state always loads
                        await done.load_state(previous[done.name])
                raise StateError(
                    f"The state of participant `{node.name}` does not load "
                    f"({type(exc).__name__}: {exc}); nothing was changed. Load a state saved "
                    "by a team with the same participants."
                ) from exc
        self._executor.apply_state(loaded)


def _check_run_id(run_id: object) -> str | None:
    if run_id is None:
        return None
    if not isinstance(run_id, str) or not run_id.strip():
        raise InvalidArgumentError(
            f"run_id must be a non-empty string, not {run_id!r}; omit it to get a new id.",
            argument="run_id",
        )
    return run_id


def _check_fork(fork_from: object, store: CheckpointStore | None) -> tuple[str, int] | None:
    if fork_from is None:
        return None
    if store is None:
        raise InvalidArgumentError(
            "fork_from needs a team built with a `checkpoint_store=` holding the run to fork.",
            argument="fork_from",
        )
    valid = isinstance(fork_from, tuple) and len(fork_from) == 2 and isinstance(fork_from[0], str)
    checkpoint: int | None = None
    if valid:
        raw = fork_from[1]  # type: ignore[index]
        if isinstance(raw, int) and not isinstance(raw, bool):
            checkpoint = raw
        elif isinstance(raw, str) and raw.strip().isdigit():
            checkpoint = int(raw)
    if not valid or checkpoint is None or checkpoint < 1:
        raise InvalidArgumentError(
            f"fork_from must be (run_id, checkpoint_id) with a checkpoint id >= 1 (see "
            f"`store.history(run_id)`), not {fork_from!r}.",
            argument="fork_from",
        )
    return (fork_from[0], checkpoint)  # type: ignore[index]
