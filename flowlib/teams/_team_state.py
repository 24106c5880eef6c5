"""A team's state codec: its state as a versioned JSON mapping, saved whole or as a patch,
and loaded back all or nothing (participants, executor bookkeeping, a stored run)."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..base.internal import check_state_argument, load_atomically
from ..checkpoint import (
    FoldedRun,
    Journal,
    StateChange,
    appended,
    json_state,
    patch_of,
)
from ..errors import StateError
from ..graph import ExecutionPlan, GraphExecutor, GraphManagerState, Node
from ..graph.internal import Budget, Checkpointer, Participant, Run

__all__ = ["TEAM_STATE_VERSION", "TeamStateCodec"]

TEAM_STATE_VERSION = 1


@dataclass(kw_only=True, eq=False)
class TeamStateCodec:
    """Saves and loads one team's state (``BaseGroupChat.save_state`` and friends).

    Args:
        name: The team's name (in errors).
        manager_key: The executor's entry in ``agent_states`` (``"<Team>Manager"``).
        executor: The team's executor.
        participants: The participants, in graph-node order.
        plan: The compiled graph.
        run: The team's run object (a stored run's run state is restored into it).
        busy: Whether a run of the team is in progress.
        checkpointer: The running execution's checkpointer, if any.
        forget_stored: Called when a loaded state detaches the team from its stored run.
        require_stopped: Raises ``TeamRunningError`` while the team runs.
        save_state: What saves the whole state: the team's ``save_state``, which a subclass
            may override (default: `save`).
    """

    name: str
    manager_key: str
    executor: GraphExecutor
    participants: list[Participant]
    plan: ExecutionPlan
    run: Run
    busy: Callable[[], bool]
    checkpointer: Callable[[], Checkpointer | None]
    forget_stored: Callable[[], None]
    require_stopped: Callable[[str], None]
    save_state: Callable[[], Awaitable[Mapping[str, Any]]] | None = None
    journal: Journal = field(default_factory=Journal, init=False)  # what save_since returned last

    def _whole(self) -> Awaitable[Mapping[str, Any]]:
        """The whole state, by the team's own ``save_state`` when it gave one."""
        return (self.save_state or self.save)()

    async def save(self) -> Mapping[str, Any]:
        """The team's ``save_state`` (its docstring says what the state holds)."""
        running = {
            name
            for name, run in zip(self.plan.names, self.executor.scheduler.nodes, strict=True)
            if run.running
        }
        checkpointer = self.checkpointer()
        agent_states: dict[str, Any] = {}
        for node in self.executor.nodes:
            settled = None
            if node.name in running and checkpointer is not None:
                settled = checkpointer.settled_state(node.name)
            if settled is not None:
                agent_states[node.name] = settled
            else:
                agent_states[node.name] = dict(await node.save_state())
        manager = self.executor.scheduler.save_state()
        agent_states[self.manager_key] = manager.model_dump(mode="json")
        return {"type": "TeamState", "version": TEAM_STATE_VERSION, "agent_states": agent_states}

    async def save_since(self, base: Any, *, plain: bool) -> StateChange:
        """The state now (as `save_state()` gives it, in JSON) and the patch from ``base``.

        When ``base`` is the state this returned last and the team is not running, each
        participant reports its own change (see
        [`IncrementalState`][flowlib.checkpoint.IncrementalState]) and only the thread
        entries added since are dumped: a team nested in a checkpointed team costs its
        turn's change, not its whole history.
        """
        executor = self.executor
        lists: list[Sequence[Any]] = [executor.scheduler.thread, executor.scheduler.thread_node]
        journal = self.journal
        idle = not (self.busy() or executor.is_running)
        if not idle or not plain or not journal.fits(base, lists):
            return journal.whole(base, json_state(await self._whole()), lists, keep=idle)
        base_states = base["agent_states"]
        states: dict[str, Any] = {}
        known: dict[str, Any] = {}
        for node in executor.nodes:
            change = await node.save_state_since(base_states.get(node.name))
            states[node.name] = change.state
            known[node.name] = change.patch
        key = self.manager_key
        manager_base = base_states[key]
        start = journal.start(0)
        names = self.plan.names
        added = executor.scheduler.thread.dumps(start)
        origins = [names[n] if n >= 0 else None for n in executor.scheduler.thread_node[start:]]
        manager = {
            **GraphManagerState(**executor.scheduler.bookkeeping()).model_dump(mode="json"),
            "message_thread": [*manager_base["message_thread"], *added],
            "thread_nodes": [*manager_base["thread_nodes"], *origins],
        }
        threads = {"message_thread": appended(added), "thread_nodes": appended(origins)}
        known[key] = patch_of(manager_base, manager, threads)
        states[key] = manager
        state = {"type": "TeamState", "version": TEAM_STATE_VERSION, "agent_states": states}
        patch = patch_of(base, state, {"agent_states": patch_of(base_states, states, known)})
        return journal.grown(base, state, patch, lists)

    async def load(self, state: Mapping[str, Any]) -> None:
        """The team's ``load_state`` (its docstring says what is checked and raised)."""
        check_state_argument(state, self.name)
        self.require_stopped("load state into")
        await load_atomically(self.name, state, self._whole, self._load_state)

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
        expected = {p.name for p in self.participants} | {self.manager_key}
        unknown = sorted(set(agent_states) - expected)
        missing = sorted(expected - set(agent_states))
        if unknown or missing:
            problems = []
            if unknown:
                problems.append("unknown entries " + ", ".join(f"`{n}`" for n in unknown))
            if missing:
                problems.append("missing entries " + ", ".join(f"`{n}`" for n in missing))
            raise StateError(
                f"Team state does not fit `{self.name}`: {'; '.join(problems)}. Load it into "
                "a team built with the same participants."
            )
        try:
            manager = GraphManagerState.model_validate(agent_states[self.manager_key])
        except ValidationError as exc:
            raise StateError(
                f"Team state's `{self.manager_key}` entry is malformed: {exc}"
            ) from exc
        await self._load_checked(manager, {p.name: agent_states[p.name] for p in self.participants})
        # A loaded state's next run starts a new budget (as after any stop).
        self.executor.restore_budget(Budget(turns=self.executor.budget().turns))
        self.forget_stored()

    async def _load_checked(
        self,
        manager: GraphManagerState,
        participant_states: Mapping[str, Any],
        thread: Sequence[Any] | None = None,
    ) -> None:
        """Install ``manager`` and the participants' states, or change nothing.

        The executor state is checked first; participants are loaded one by one and, if
        one refuses its state, every participant gets its previous state back.
        """
        loaded = self.executor.scheduler.check_state(manager, thread=thread)
        nodes = self.executor.nodes
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
        self.executor.scheduler.apply_state(loaded)

    async def install(self, folded: FoldedRun) -> None:
        """Load a folded stored run into the team (all checked before anything changes)."""
        # The thread's messages are checked by class and rebuilt when first read (a long
        # run's resume must not validate every message it ever published).
        try:
            manager = GraphManagerState.model_validate(
                {**folded.bookkeeping, "message_thread": [], "thread_nodes": folded.message_nodes}
            )
        except ValidationError as exc:
            raise StateError(
                f"Stored run `{folded.run_id}` has unreadable bookkeeping: {exc}"
            ) from exc
        await self._load_checked(manager, folded.participants, folded.messages)
        self.run.run_id = folded.run_id
        await self.run.restore(folded.bookkeeping.get("run"), self.executor.scheduler.thread)
