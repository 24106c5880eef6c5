"""What every team shares: a compiled graph run by the one executor.

A team subclass decides only how its participants become a [`DiGraph`][flowlib.teams.DiGraph];
running, streaming, stopping, resetting, pausing and saving state live here, once.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from abc import ABC
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from typing import Any, ClassVar

from pydantic import BaseModel
from typing_extensions import Self

from .._named import Named
from .._telemetry import in_team_turn
from ..agents import UserProxyAgent
from ..base import CancellationToken, ChatAgent, TaskResult, Team, TerminationCondition
from ..base.internal import task_messages
from ..checkpoint import (
    CheckpointStore,
    FoldedRun,
    StateChange,
)
from ..component import dump_field, dump_fields, skip_field
from ..errors import (
    ArgumentTypeError,
    ContractError,
    InvalidArgumentError,
    ParticipantMismatchError,
    RunNotFoundError,
    TeamRunningError,
)
from ..graph import (
    DiGraph,
    ExecutionPlan,
    GraphExecutor,
    GraphPattern,
    Router,
    RunTrace,
    graph_description,
    graph_signature,
    register_pattern,
)
from ..graph.internal import (
    Checkpointer,
    Durability,
    HumanRequest,
    Participant,
    Run,
    RunSpans,
    check_loop_bounded,
    validate_graph,
)
from ..logging import MessageEvent, event_logger
from ..messages import (
    BaseAgentEvent,
    BaseChatMessage,
    HandoffMessage,
    MessageFactory,
    TextMessage,
    UserInputRequestedEvent,
)
from ._arguments import check_team_arguments
from ._config import TeamConfig, register_team, team_arguments
from ._lifecycle import RunLifecycle
from ._policy import TaskContext, TeamPolicy
from ._setup import by_unique_name
from ._stored_runs import EntryMode, StoredRuns
from ._team_state import TEAM_STATE_VERSION, TeamStateCodec

__all__ = ["TEAM_STATE_VERSION", "BaseGroupChat", "reject_runtime"]


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


class BaseGroupChat(Named, Team, ABC):
    """Base class of every team, flowlib's and yours: participants, a graph, and the
    shared executor.

    A team of your own subclasses it, says how its participants become a graph
    ([`build_graph`][flowlib.teams.BaseGroupChat.build_graph]) and, if it routes tasks or
    explains stops its own way, passes a [`TeamPolicy`][flowlib.teams.TeamPolicy]. Running,
    streaming, checkpoints, state, configs and drawing come from here. Class keywords:
    ``pattern=`` a [`GraphPattern`][flowlib.graph.GraphPattern] (registered; written into
    the team's graph, read by the validator and the drawing) and ``provider=`` (with
    ``aliases=``) registers the class for ``load_component``. See docs/extending.md.

    Args:
        participants: The agents and nested teams, one per graph node.
        graph: The compiled graph (its nodes must be exactly the participants and
            ``routers``); None: [`build_graph`][flowlib.teams.BaseGroupChat.build_graph]
            builds it from the checked participants.
        policy: How the team checks and routes a task and explains a dead end (see
            [`TeamPolicy`][flowlib.teams.TeamPolicy]); None: the default policy.
        routers: Router nodes the team adds to its participants (a selector, an
            orchestrator); they are built by the team, so its config leaves them out.
        allow_unconditional_cycles: Accept loops with no conditional edge; None: as the
            graph's pattern says.
        allow_unreachable: Accept nodes no edge leads to from the entry; None: as the
            graph's pattern says.
        name: The team's name; None: the class's ``DEFAULT_NAME``, else its name.
        description: What the team does; None: the class's ``DEFAULT_DESCRIPTION``.
        termination_condition: Checked after every turn; stops the run when it fires.
        max_turns: At most this many turns per run (router turns do not count).
        runtime: Only None (AutoGen compatibility).
        custom_message_types: Message classes (beyond the built-ins) the participants
            produce, so saved states can be loaded back.
        emit_team_events: Stream a ``SelectSpeakerEvent`` before each speaker's turn.
        checkpoint_store: Where runs are checkpointed (see docs/state.md); None: in
            memory only.
        durability: ``"sync"``: a checkpoint after every recorded turn, written before the
            turn's messages reach the consumer; ``"exit"``: only at the run's stops.
        turn_timeout: Seconds each turn may take (the default of every node's
            ``timeout``): past it the turn is cancelled, counts as a failed attempt and,
            with no retry left, fails the run resumably.

    These options are [`TeamOptions`][flowlib.teams.TeamOptions]: a team of your own takes
    them as ``**options: Unpack[TeamOptions]`` and passes them on.

    Raises:
        ValueError: If there are no participants or ``max_turns`` is below 1.
        GraphError: If the graph is invalid or does not match the participants.
    """

    component_type: ClassVar[str] = "team"
    component_config_schema: ClassVar[type[BaseModel]] = TeamConfig
    DEFAULT_NAME: ClassVar[str | None] = None
    """The ``name`` when none is given; None: the class's name."""
    DEFAULT_DESCRIPTION: ClassVar[str] = "A team of agents."
    """The ``description`` when none is given."""
    pattern: ClassVar[GraphPattern | None] = None
    component_provider_override: ClassVar[str | None] = None
    """The class's pattern (class keyword ``pattern=``), written into its graph."""

    def __init_subclass__(
        cls,
        *,
        pattern: GraphPattern | None = None,
        provider: str | None = None,
        aliases: Sequence[str] = (),
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if pattern is not None:
            cls.pattern = register_pattern(pattern)
        if provider is not None:
            cls.component_provider_override = provider
            register_team(cls, provider, tuple(aliases))

    def __init__(
        self,
        participants: Sequence[ChatAgent | Team],
        graph: DiGraph | None = None,
        *,
        policy: TeamPolicy | None = None,
        routers: Sequence[Router] = (),
        allow_unconditional_cycles: bool | None = None,
        allow_unreachable: bool | None = None,
        name: str | None = None,
        description: str | None = None,
        termination_condition: TerminationCondition | None = None,
        max_turns: int | None = None,
        runtime: Any = None,
        custom_message_types: Sequence[type[BaseAgentEvent | BaseChatMessage]] | None = None,
        emit_team_events: bool = False,
        checkpoint_store: CheckpointStore | None = None,
        durability: Durability = "sync",
        turn_timeout: float | None = None,
    ) -> None:
        cls = type(self)
        reject_runtime(runtime)
        check_team_arguments(
            cls.__name__,
            participants,
            termination_condition=termination_condition,
            max_turns=max_turns,
        )
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
        name = name or cls.DEFAULT_NAME or cls.__name__
        description = description or cls.DEFAULT_DESCRIPTION
        by_name = by_unique_name([*routers, *participants])
        if graph is None:
            graph = self.build_graph(list(participants))
            if not isinstance(graph, DiGraph):
                raise ContractError(
                    f"{cls.__name__}.build_graph() returned {type(graph).__name__}, not a DiGraph."
                )
        if cls.pattern is not None and graph.pattern is None:
            graph = graph.model_copy(update={"pattern": cls.pattern.name})
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
        # Telemetry: the run and turn spans observe the executor's trace.
        self._executor.trace.add_observer(RunSpans(name, type(self).__name__, self._executor.nodes))
        self._emit_team_events = emit_team_events
        self._checkpoint_store = checkpoint_store
        self._durability: Durability = durability
        self._graph_description = graph_description(self._plan)
        self._graph_signature = graph_signature(self._graph_description)
        self._checkpointer: Checkpointer | None = None
        # One home for the run (graph/_run.py); the lifecycle holds the one running guard
        # and the run's lease (_lifecycle.py); stored runs are resolved in _stored_runs.py
        # and the state codec is _team_state.py.
        self._run = Run("", executor=self._executor, termination=termination_condition)
        self._lifecycle = RunLifecycle(name)
        self._stored_runs: StoredRuns | None = None
        if checkpoint_store is not None:
            self._stored_runs = StoredRuns(
                checkpoint_store,
                team_type=type(self).__name__,
                graph_signature=self._graph_signature,
                graph_description=self._graph_description,
                executor=self._executor,
                run=self._run,
                install=self._install,
                durability=durability,
                max_turns=max_turns,
            )
        self._codec = TeamStateCodec(
            name=name,
            manager_key=f"{type(self).__name__}Manager",
            executor=self._executor,
            participants=self._participants,
            plan=self._plan,
            run=self._run,
            busy=lambda: self._lifecycle.busy,
            checkpointer=lambda: self._checkpointer,
            forget_stored=self._forget_stored,
            require_stopped=self._require_stopped,
            save_state=self.save_state,
        )

    def build_graph(self, participants: Sequence[ChatAgent | Team]) -> DiGraph:
        """The graph ``participants`` compile to, when the constructor got no ``graph``.

        Override it in a team of your own (the participants are checked: a list of
        agents and teams with unique names). It runs inside ``BaseGroupChat.__init__``,
        so set what it reads before calling ``super().__init__``. The graph's ``pattern``
        is set from the class's ``pattern=`` keyword when the graph names none.

        Raises:
            ContractError: The class neither passes a ``graph`` nor overrides this.
        """
        raise ContractError(
            f"{type(self).__name__} passed no `graph` to BaseGroupChat.__init__ and does not "
            "override build_graph(participants); do one of the two."
        )

    # --- the component protocol (configs: teams/_config.py) ------------------------------

    def config_fields(self) -> dict[str, Any]:
        """The values of the fields the class's config adds to
        [`TeamConfig`][flowlib.teams.TeamConfig] (its ``component_config_schema``).

        The default dump writes the team's common fields (name, description,
        participants, termination condition, max_turns, turn_timeout, and
        emit_team_events when the schema has it) and these; loading passes each of them
        back to the constructor as the keyword of the same name (a nested component,
        dumped here with ``dump_field``, is built again first; None leaves the
        constructor's default). Override it when your config has fields of its own.
        """
        return {}

    def _to_config(self) -> BaseModel:
        schema = type(self).component_config_schema
        fields = self._team_fields()
        if "emit_team_events" in schema.model_fields:
            fields["emit_team_events"] = self._emit_team_events
        fields.update(self.config_fields())
        return schema(**fields)

    def _team_fields(self) -> dict[str, Any]:
        """The fields of [`TeamConfig`][flowlib.teams.TeamConfig] (the message factory's
        custom types are left out, with a warning). Routers (the selector, the
        orchestrator) are built by the team, not configured: they are not participants
        there."""
        custom_types = self._message_factory.custom_types
        if custom_types:
            names = ", ".join(message_type.__name__ for message_type in custom_types)
            skip_field(
                "custom_message_types",
                f"message classes ({names}) are Python types; pass custom_message_types= "
                "again to the loaded team (or register them) before loading saved state.",
            )
        members = [p for p in self.participants if not isinstance(p, Router)]
        termination = self.termination_condition
        return {
            "name": self.name,
            "description": self.description,
            "participants": dump_fields(members, "participants"),
            "termination_condition": (
                None if termination is None else dump_field(termination, "termination_condition")
            ),
            "max_turns": self.max_turns,
            "turn_timeout": self.turn_timeout,
        }

    @classmethod
    def _from_config(cls, config: BaseModel) -> Self:
        members, options = team_arguments(cls, config)
        return cls(members, **options)

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
    def lease_ttl(self) -> float:
        """Seconds a stored run's lease lasts without renewal (default 30); renewed every
        third of it while the run executes (docs/state.md, "Leases"). A dead executor's
        run can be taken over once its lease expired."""
        return self._lifecycle.lease_ttl

    @lease_ttl.setter
    def lease_ttl(self, seconds: float) -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
            raise InvalidArgumentError(
                f"lease_ttl must be a positive number of seconds, not {seconds!r}.",
                argument="lease_ttl",
            )
        self._lifecycle.lease_ttl = float(seconds)

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
        return await _final_result(
            self.run_stream(
                task=task,
                cancellation_token=cancellation_token,
                run_id=run_id,
                fork_from=fork_from,
                output_task_messages=output_task_messages,
            )
        )

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
        run_id = _check_run_id(run_id)
        fork = _check_fork(fork_from, self._checkpoint_store)
        if fork is not None and run_id is None:
            raise InvalidArgumentError(
                "fork_from needs the new run's `run_id=`; pass a new id for the fork.",
                argument="run_id",
            )
        mode: EntryMode = "fork" if fork is not None else "auto"
        async with aclosing(
            self._execute(mode, task, run_id, fork, cancellation_token, output_task_messages)
        ) as stream:
            async for item in stream:
                yield item

    # --- explicit entry points (docs/state.md, "Entry points") -----------------------------

    async def start_run(
        self,
        task: str | BaseChatMessage | Sequence[BaseChatMessage] | None,
        *,
        run_id: str,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
    ) -> TaskResult:
        """Start a new stored run ``run_id`` with ``task``.

        Raises:
            RunExistsError: If the store already holds records under ``run_id``.
            RunLeaseError: If another executor holds the id's lease.
            InvalidArgumentError: If the team has no ``checkpoint_store``.
        """
        return await self._result(
            "start",
            task,
            _stored_id(run_id, self._checkpoint_store, "start_run"),
            None,
            cancellation_token,
            output_task_messages,
        )

    async def resume_run(
        self, run_id: str, *, cancellation_token: CancellationToken | None = None
    ) -> TaskResult:
        """Resume the interrupted (or failed) run ``run_id`` from its latest checkpoint;
        its budget (``max_turns``, the termination condition's progress) continues.

        A run that stopped or completed is not run again: its stored result is returned
        and no model is called.

        Raises:
            RunNotFoundError: If the store has no run ``run_id`` (nothing is created).
            RunStatusError: If the run has no records (its process died before its first
                checkpoint; start it again).
            RunLeaseError: If another executor is executing it.
            StateError: If the stored run was made with a different graph.
        """
        return await self._result(
            "resume",
            None,
            _stored_id(run_id, self._checkpoint_store, "resume_run"),
            None,
            cancellation_token,
            False,
        )

    async def continue_run(
        self,
        run_id: str,
        task: str | BaseChatMessage | Sequence[BaseChatMessage] | None = None,
        *,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
    ) -> TaskResult:
        """Continue the stopped (or completed) run ``run_id`` with new input: a new
        budget, as a new ``run()`` call of an AutoGen team.

        Raises:
            RunNotFoundError: If the store has no run ``run_id``.
            RunStatusError: If the run was interrupted (resume it first) or has no records.
            RunLeaseError: If another executor is executing it.
        """
        return await self._result(
            "continue",
            task,
            _stored_id(run_id, self._checkpoint_store, "continue_run"),
            None,
            cancellation_token,
            output_task_messages,
        )

    async def fork_run(
        self,
        source_run_id: str,
        *,
        at: int,
        run_id: str,
        task: str | BaseChatMessage | Sequence[BaseChatMessage] | None = None,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
    ) -> TaskResult:
        """Fork checkpoint ``at`` of ``source_run_id`` into the new run ``run_id``, then go
        on from there: with a ``task``, as ``continue_run``; without, as ``resume_run`` (a
        checkpoint where the source had stopped gives its stored result, running nothing).

        The fork's run and first record are stored in one transaction; calling again
        with the same arguments after an interruption is safe.

        Raises:
            RunNotFoundError: If the store has no run ``source_run_id``.
            CheckpointArgumentError: If ``run_id`` exists and is not this fork.
        """
        store = self._checkpoint_store
        run_id = _stored_id(run_id, store, "fork_run")
        fork = _check_fork((source_run_id, at), store)
        assert fork is not None and store is not None
        if await store.get_run(fork[0]) is None:
            raise RunNotFoundError(
                f"This store has no run `{fork[0]}` to fork; nothing was created.",
                run_id=fork[0],
            )
        return await self._result(
            "fork", task, run_id, fork, cancellation_token, output_task_messages
        )

    async def answer(
        self,
        run_id: str,
        request_id: str,
        reply: str,
        *,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
    ) -> TaskResult:
        """Answer the pending human request ``request_id`` of run ``run_id`` and go on.

        The reply becomes the run's next input, as the person it was asked of: a
        ``HandoffMessage`` back to the agent that handed off (Swarm, handoff
        termination), else a ``TextMessage``. The request is marked answered in the
        run's checkpoints; a second answer to it is refused and runs nothing.

        Raises:
            RunNotFoundError: If the store has no run ``run_id``.
            RequestAlreadyAnsweredError: If the request was answered already.
            HumanRequestError: If the run is not waiting for ``request_id``.
            RunLeaseError: If another executor is executing the run.
        """
        if not isinstance(reply, str):
            raise ArgumentTypeError(
                f"reply must be the person's answer as a string, not {type(reply).__name__}.",
                argument="reply",
            )
        return await self._result(
            "answer",
            None,
            _stored_id(run_id, self._checkpoint_store, "answer"),
            None,
            cancellation_token,
            output_task_messages,
            answer=(request_id, reply),
        )

    async def edit_run(
        self,
        run_id: str,
        *,
        append: Sequence[BaseChatMessage] = (),
        replace: Mapping[int, BaseChatMessage] | None = None,
        author: str,
        reason: str,
    ) -> int:
        """Edit run ``run_id``'s thread at its latest checkpoint (LangGraph's
        ``update_state``): replace messages by thread index and append new ones, written
        as a new checkpoint whose ``bookkeeping["edit"]`` records ``author``, ``reason``,
        the time and what changed. Then go on with ``resume_run`` (an interrupted run)
        or ``continue_run`` (a stopped one): every agent receives the appended messages
        on its next turn. A fork is edited the same way (its source is untouched).

        Returns the new checkpoint's id. Nothing is run and no model is called.

        Raises:
            RunNotFoundError: If the store has no run ``run_id``.
            RunStatusError: If the run has no records.
            RunLeaseError: If an executor is running the run (it holds the lease).
            InvalidArgumentError: An empty ``author``/``reason``, no change, or a
                ``replace`` index outside the thread. A refused edit changes nothing.
        """
        checked = _stored_id(run_id, self._checkpoint_store, "edit_run")
        for name, text in (("author", author), ("reason", reason)):
            if not isinstance(text, str) or not text.strip():
                raise InvalidArgumentError(
                    f"edit_run() needs `{name}` as a non-empty string (the edit is audited).",
                    argument=name,
                )
        appended = list(append)
        replaced = dict(replace or {})
        for message in [*appended, *replaced.values()]:
            if not isinstance(message, BaseChatMessage):
                raise ArgumentTypeError(
                    "edit_run() takes chat messages (e.g. TextMessage), not "
                    f"{type(message).__name__}.",
                    argument="append" if message in appended else "replace",
                )
        if any(not isinstance(index, int) or isinstance(index, bool) for index in replaced):
            raise InvalidArgumentError(
                "replace maps thread indexes (ints) to messages.", argument="replace"
            )
        if not appended and not replaced:
            raise InvalidArgumentError(
                "edit_run() needs messages to `append` or `replace`.", argument="append"
            )
        self._message_factory.check([*appended, *replaced.values()])
        assert self._stored_runs is not None  # _stored_id checked the store
        return await self._stored_runs.edit(
            checked,
            append=appended,
            replace=replaced,
            author=author,
            reason=reason,
            lease_ttl=self._lifecycle.lease_ttl,
        )

    async def _result(
        self,
        mode: EntryMode,
        task: str | BaseChatMessage | Sequence[BaseChatMessage] | None,
        run_id: str,
        fork: tuple[str, int] | None,
        token: CancellationToken | None,
        output_task_messages: bool,
        *,
        answer: tuple[str, str] | None = None,
    ) -> TaskResult:
        return await _final_result(
            self._execute(mode, task, run_id, fork, token, output_task_messages, answer)
        )

    async def _execute(
        self,
        mode: EntryMode,
        task: str | BaseChatMessage | Sequence[BaseChatMessage] | None,
        run_id: str | None,
        fork: tuple[str, int] | None,
        cancellation_token: CancellationToken | None,
        output_task_messages: bool,
        answer: tuple[str, str] | None = None,
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | TaskResult, None]:
        """Every entry point's execution: claim the team, resolve the stored run, hold
        its lease, run the executor (the run lifecycle, docs/state.md)."""
        messages = task_messages(task)
        self._message_factory.check(messages)
        check_loop_bounded(  # a round-robin ring may be built unbounded; refused here
            self._plan.analysis,
            has_termination=self._termination_condition is not None,
            max_turns=self._max_turns,
            team=self._name,
        )
        lifecycle = self._lifecycle
        await lifecycle.claim()
        try:
            if run_id is None:
                run_id = uuid.uuid4().hex
            self._run.run_id = run_id
            stored_runs = self._stored_runs
            async with contextlib.AsyncExitStack() as held:
                checkpointer: Checkpointer | None = None
                if stored_runs is not None:
                    # Refused by name before the lease is taken: nothing is created.
                    await stored_runs.check_entry(mode, run_id, bool(messages))
                    owner = await held.enter_async_context(
                        lifecycle.lease(stored_runs.store, run_id)
                    )
                    await held.enter_async_context(stored_runs.unstarted(run_id))
                    prepared = await stored_runs.prepare(mode, run_id, messages, fork)
                    if prepared.result is not None:
                        yield prepared.result
                        return
                    checkpointer = prepared.checkpointer
                    assert checkpointer is not None
                    checkpointer.hold_lease(owner, lifecycle.lease_ttl)
                    if answer is not None:  # refused here, before anything runs
                        request = self._run.take_answer(answer[0])
                        if request.kind == "input":  # for the turn that asks it again
                            self._run.give(request, answer[1])
                        else:
                            messages = [self._reply(request, answer[1])]
                policy = self._policy
                policy.check_task(
                    messages,
                    TaskContext(
                        [p.name for p in self._participants],
                        self._executor.scheduler.thread,
                        self._executor.is_running,
                    ),
                )
                if messages:
                    policy.start_task(messages)
                self._run.begin()
                self._checkpointer = checkpointer
                participants = {node.name for node in self._executor.nodes}
                held.enter_context(UserProxyAgent.given_answers(self._run.given))
                # The structured event log of the run's messages, unless an outer team's
                # turn runs this team (that team logs them).
                logs = event_logger.isEnabledFor(logging.INFO) and not in_team_turn.get()
                # Closed at once when the caller stops reading, so the team is free again.
                async with aclosing(
                    self._executor.run_stream(
                        messages,
                        cancellation_token=cancellation_token,
                        output_task_messages=output_task_messages,
                        run_id=run_id,
                        recorder=checkpointer,
                    )
                ) as stream:
                    async for item in stream:
                        if logs and not isinstance(item, TaskResult):
                            event_logger.info(MessageEvent(message=item, team=self._name))
                        if (
                            checkpointer is not None
                            and isinstance(item, UserInputRequestedEvent)
                            and item.source in participants
                        ):  # recorded as a pending request before anyone sees it
                            await checkpointer.waiting(item.request_id, item.source)
                        try:
                            yield item
                        except GeneratorExit:
                            lifecycle.closing()  # a new run may wait for this cleanup
                            raise
        finally:
            self._checkpointer = None
            lifecycle.release()

    @staticmethod
    def _reply(request: HumanRequest, reply: str) -> BaseChatMessage:
        """The person's reply as the run's next input (docs/state.md, "Human requests")."""
        if request.kind == "handoff" and request.by is not None:
            return HandoffMessage(source=request.asked, target=request.by, content=reply)
        return TextMessage(source=request.asked, content=reply)

    # --- stored runs --------------------------------------------------------------------

    async def _install(self, folded: FoldedRun) -> None:
        await self._codec.install(folded)

    def _forget_stored(self) -> None:
        if self._stored_runs is not None:
            self._stored_runs.current = None

    async def reset(self) -> None:
        """Clear the team's thread and run state and reset every participant.

        Raises:
            RuntimeError: If the team is running.
        """
        self._require_stopped("reset")
        self._executor.reset()
        self._forget_stored()
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
        if self._lifecycle.busy or self._executor.is_running:
            raise TeamRunningError(
                f"Cannot {action} `{self._name}` while it is running; wait for the run to "
                "finish or stop it with ExternalTermination first."
            )

    # --- state (flowlib/teams/_team_state.py) ----------------------------------------------

    async def save_state(self) -> Mapping[str, Any]:
        """Return the team's state: every participant's state by name, plus the executor's.

        The result is JSON-serialisable and versioned;
        [`load_state`][flowlib.teams.BaseGroupChat.load_state] on a freshly built team with the same
        participants and graph resumes exactly here. During a run it is the last consistent
        point: finished turns are in, running ones are marked to run again (with a
        checkpoint store, their participants' states are the ones from before the turn).
        """
        return await self._codec.save()

    async def save_state_since(self, base: Any) -> StateChange:
        """The state now (as `save_state()` gives it, in JSON) and the patch from ``base``.

        When ``base`` is the state this returned last and the team is not running, each
        participant reports its own change (see
        [`IncrementalState`][flowlib.checkpoint.IncrementalState]) and only the thread
        entries added since are dumped: a team nested in a checkpointed team costs its
        turn's change, not its whole history.
        """
        plain = type(self).save_state is BaseGroupChat.save_state
        return await self._codec.save_since(base, plain=plain)

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore a state returned by [`save_state`][flowlib.teams.BaseGroupChat.save_state].

        Everything is checked before the team changes: a state that does not load leaves
        the team as it was.

        Raises:
            StateError: If the state's version, participants or graph do not fit this team.
            TeamRunningError: If the team is running.
        """
        await self._codec.load(state)


async def _final_result(
    stream: AsyncGenerator[BaseAgentEvent | BaseChatMessage | TaskResult, None],
) -> TaskResult:
    """The ``TaskResult`` a run's stream ends with (the stream is closed either way)."""
    result: TaskResult | None = None
    async with aclosing(stream) as items:
        async for item in items:
            if isinstance(item, TaskResult):
                result = item
    if result is None:  # pragma: no cover - a run's stream always ends with a TaskResult
        raise ContractError("The run ended without a TaskResult.")
    return result


def _stored_id(run_id: object, store: CheckpointStore | None, entry: str) -> str:
    if store is None:
        raise InvalidArgumentError(
            f"{entry}() needs a team built with a `checkpoint_store=`; without one, use "
            "`team.run(task=...)`.",
            argument="checkpoint_store",
        )
    checked = _check_run_id(run_id)
    if checked is None:
        raise InvalidArgumentError(f"{entry}() needs a `run_id`.", argument="run_id")
    return checked


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
