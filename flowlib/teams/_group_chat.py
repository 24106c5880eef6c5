"""What every team shares: a compiled graph run by the one executor.

A team subclass decides only how its participants become a [`DiGraph`][flowlib.teams.DiGraph];
running, streaming, stopping, resetting, pausing and saving state live here, once.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from typing import Any, ClassVar

from .._telemetry import trace_team_run
from ..base import CancellationToken, TaskResult, Team, TerminationCondition
from ..base._arguments import check_state_argument, load_atomically
from ..base._task import task_messages
from ..errors import DuplicateNodeError, ParticipantMismatchError, StateError
from ..graph import (
    DiGraph,
    ExecutionPlan,
    GraphExecutor,
    GraphManagerState,
    Router,
    RunTrace,
)
from ..graph._shapes import Participant
from ..graph._validate import check_loop_bounded, validate_graph
from ..messages import BaseAgentEvent, BaseChatMessage, MessageFactory

__all__ = ["TEAM_STATE_VERSION", "BaseGroupChat", "reject_runtime"]

TEAM_STATE_VERSION = 1


def reject_runtime(runtime: object) -> None:
    """Teams accept ``runtime=`` for AutoGen compatibility; only None is meaningful.

    Raises:
        ValueError: If a runtime was given.
    """
    if runtime is not None:
        raise ValueError(
            "flowlib runs teams on its own graph executor and has no separate agent "
            "runtime; remove the `runtime=` argument."
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

    Subclasses may override ``_route_task`` (choose the next speakers from a new
    task) and ``_describe_dead_end`` (explain a node that matched none of its edges).

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
    ) -> None:
        if not participants:
            raise ValueError(
                f"{type(self).__name__} needs at least one participant; pass a list of agents."
            )
        if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
            raise ValueError(f"max_turns must be a positive integer or None, not {max_turns!r}.")
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
        self._plan = ExecutionPlan(graph, analysis)
        self._executor = GraphExecutor(
            self._plan,
            self._participants,
            termination_condition=termination_condition,
            max_turns=max_turns,
            message_factory=self._message_factory,
            event_source=name if emit_team_events else None,
            task_router=self._route_task,
            dead_end_reason=self._describe_dead_end,
        )
        self._emit_team_events = emit_team_events

    def _route_task(self, task: Sequence[BaseChatMessage]) -> Sequence[str] | None:
        """The nodes to run next for a new ``task``, or None to keep the ready set."""
        return None

    def _describe_dead_end(self, node: str, final: BaseChatMessage | None) -> str | None:
        """Why ``node`` matched none of its edges, or None for the generic explanation."""
        return None

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
    def trace(self) -> RunTrace:
        """The path the most recent run took (nodes started, edges fired)."""
        return self._executor.trace

    # --- running ------------------------------------------------------------------------

    async def run(
        self,
        *,
        task: str | BaseChatMessage | Sequence[BaseChatMessage] | None = None,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
    ) -> TaskResult:
        """Run the team and return every message of the run and why it stopped.

        Args:
            task: A string, a chat message or a list of them; ``None`` resumes where the
                previous run stopped (or starts from the entry nodes).
            cancellation_token: Aborts the run; the await raises ``CancelledError``.
            output_task_messages: Whether the task messages start the result.

        Raises:
            NodeExecutionError: If a participant raises; the team keeps its state.
            RuntimeError: If the team is already running.
        """
        result: TaskResult | None = None
        async for item in self.run_stream(
            task=task,
            cancellation_token=cancellation_token,
            output_task_messages=output_task_messages,
        ):
            if isinstance(item, TaskResult):
                result = item
        if result is None:  # pragma: no cover - run_stream always ends with a TaskResult
            raise RuntimeError("The run ended without a TaskResult.")
        return result

    async def run_stream(
        self,
        *,
        task: str | BaseChatMessage | Sequence[BaseChatMessage] | None = None,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | TaskResult, None]:
        """Like [`run`][flowlib.teams.BaseGroupChat.run], yielding messages and events as they
        happen, then the result.

        Streaming chunks are yielded but not kept in ``TaskResult.messages``.
        """
        messages = task_messages(task)
        check_loop_bounded(  # a round-robin ring may be built unbounded; refused here
            self._plan.analysis,
            has_termination=self._termination_condition is not None,
            max_turns=self._max_turns,
            team=self._name,
        )
        # Closed at once when the caller stops reading, so the team is free again.
        async with aclosing(
            trace_team_run(  # telemetry (flowlib/_telemetry.py): span and event logs
                self,
                self._executor.run_stream(
                    messages,
                    cancellation_token=cancellation_token,
                    output_task_messages=output_task_messages,
                ),
            )
        ) as stream:
            async for item in stream:
                yield item

    async def reset(self) -> None:
        """Clear the team's thread and run state and reset every participant.

        Raises:
            RuntimeError: If the team is running.
        """
        self._require_stopped("reset")
        self._executor.reset()
        token = CancellationToken()
        for participant in self._participants:
            if isinstance(participant, (Team, Router)):
                await participant.reset()
            else:
                await participant.on_reset(token)
        if self._termination_condition is not None:
            await self._termination_condition.reset()

    async def pause(self) -> None:
        """Call ``on_pause`` on every participant (``pause`` on nested teams)."""
        token = CancellationToken()
        for participant in self._participants:
            if isinstance(participant, Team):
                await participant.pause()
            elif not isinstance(participant, Router):
                await participant.on_pause(token)

    async def resume(self) -> None:
        """Call ``on_resume`` on every participant (``resume`` on nested teams)."""
        token = CancellationToken()
        for participant in self._participants:
            if isinstance(participant, Team):
                await participant.resume()
            elif not isinstance(participant, Router):
                await participant.on_resume(token)

    def _require_stopped(self, action: str) -> None:
        if self._executor.is_running:
            raise RuntimeError(
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
        participants and graph resumes exactly here.
        """
        agent_states: dict[str, Any] = {}
        for participant in self._participants:
            agent_states[participant.name] = dict(await participant.save_state())
        agent_states[self._manager_key] = self._executor.save_state().model_dump(mode="json")
        return {"type": "TeamState", "version": TEAM_STATE_VERSION, "agent_states": agent_states}

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore a state returned by [`save_state`][flowlib.teams.BaseGroupChat.save_state].

        Raises:
            StateError: If the state's version, participants or graph do not fit this team.
            RuntimeError: If the team is running.
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
        manager = GraphManagerState.model_validate(agent_states[self._manager_key])
        self._executor.load_state(manager)
        for participant in self._participants:
            await participant.load_state(agent_states[participant.name])
