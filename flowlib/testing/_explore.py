"""Property-test a user's own flow: [`explore`][flowlib.testing.explore],
[`assert_flow_sound`][flowlib.testing.assert_flow_sound] and the strategy
[`routing_outcomes`][flowlib.testing.routing_outcomes].

Each example replaces every node of the flow by a stand-in (see
[`StandIn`][flowlib.testing.StandIn]), runs the flow's own compiled graph on the real
executor, and reads what happened: which nodes ran, which edges fired, why the run
stopped, and which rule the run broke. Hypothesis drives the stand-ins' choices, so a
failing run shrinks to a short sequence of replies.

Rules (``Finding.rule``):

- ``join_never_completes``: the run ended with a node still waiting for an ``all`` join;
- ``dead_end``: a node matched none of its outgoing edges and the run ended there;
- ``runaway_loop``: the run reached the exploration's turn bound (the team has no
  ``max_turns``) without the termination condition firing;
- ``handoff_to_non_participant``: a Swarm agent handed off to someone outside the team
  and nothing stopped the run;
- ``selector_picks_nobody``: a selector's ``selector_func``/``candidate_func`` left no
  participant to select;
- ``node_error``: a condition or a router raised during the run;
- ``unreachable_node``: no explored run reached the node;
- ``termination_never_fires``: no explored run fired the termination condition.

Map edges are explored with 0, 1 and 3 items (``MAP_COUNTS``), each instance being the
target's stand-in; node policies are honoured without their waits and stores (no
deadline, no cache, retries at once), and a node with a retry policy draws, per turn, how
many attempts fail first with an error the policy retries (fewer than it allows).
"""

from __future__ import annotations

import asyncio
import functools
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from hypothesis import HealthCheck, Phase, Verbosity, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample, Unsatisfiable

from .._english import counted
from ..base import CancellationToken, Response, TerminationCondition
from ..errors import (
    ArgumentTypeError,
    FlowlibError,
    FlowUnsoundError,
    InvalidArgumentError,
    NodeExecutionError,
)
from ..graph import DiGraph, ExecutionPlan, GraphExecutor, Router, RunTrace, validate_graph
from ..messages import BaseAgentEvent, BaseChatMessage, MessageFactory, StopMessage, TextMessage
from ..teams import TeamPolicy
from ..teams.internal import declared_handoff_targets
from ._standins import (
    Draw,
    GuardedDraw,
    NobodyToPickError,
    StandIn,
    StandInRouter,
    StandInSelector,
    Turn,
    collect_vocabulary,
    inner_speakers,
    termination_leaves,
)

__all__ = [
    "RULES",
    "ExploreReport",
    "Finding",
    "RoutingOutcome",
    "Rule",
    "assert_flow_sound",
    "explore",
    "routing_outcomes",
]

MAP_COUNTS = (0, 1, 3)
"""How many items a map edge produces in exploration: none (the branch is skipped and
the reduce still fires), one, and several (instances run concurrently)."""

Rule = Literal[
    "join_never_completes",
    "dead_end",
    "runaway_loop",
    "handoff_to_non_participant",
    "selector_picks_nobody",
    "node_error",
    "unreachable_node",
    "termination_never_fires",
]
RULES: tuple[Rule, ...] = get_args(Rule)
"""Every rule a [`Finding`][flowlib.testing.Finding] can name."""

DEFAULT_TASK = "Explore the flow."
_DEAD_END = re.compile(r"node `([^`]+)` matched none of its outgoing edges")
# Terminations a stand-in run can fire by itself; others (external, timeout, tokens,
# tool calls, functions) depend on the world, so "never fires" is not judged for them.
# Counting conditions (MaxMessageTermination) always fire given turns enough, which a
# bounded exploration need not reach, so they are not judged either.
_EXPLORABLE = {
    "TextMentionTermination",
    "HandoffTermination",
    "SourceMatchTermination",
    "TextMessageTermination",
}


@dataclass(frozen=True)
class Finding:
    """One broken rule, with the nodes it is about and a counterexample.

    Attributes:
        rule: Which rule (see [`RULES`][flowlib.testing.RULES]).
        nodes: The nodes the finding is about, in graph order.
        message: What is wrong and how to fix it.
        counterexample: The stand-ins' replies of the (shrunk) failing run, in step
            order; empty for findings about absence (unreachable node, termination
            that never fires).
        outcome: The failing run (its trace draws the path), when there is one.
    """

    rule: Rule
    nodes: tuple[str, ...]
    message: str
    counterexample: tuple[Turn, ...] = ()
    outcome: RoutingOutcome | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        """``(rule, nodes)``: what makes two findings the same."""
        return (self.rule, self.nodes)

    def __str__(self) -> str:
        lines = [f"[{self.rule}] {', '.join(f'`{n}`' for n in self.nodes)}: {self.message}"]
        if self.counterexample:
            lines.append(
                f"  counterexample ({counted(len(self.counterexample), 'reply', 'replies')}):"
            )
            shown = self.counterexample[:12]
            lines.extend(f"    {i}. {turn}" for i, turn in enumerate(shown, start=1))
            if len(self.counterexample) > len(shown):
                lines.append(f"    ... {len(self.counterexample) - len(shown)} more")
        return "\n".join(lines)


@dataclass(frozen=True)
class RoutingOutcome:
    """One stand-in run of a flow: what the stand-ins said and where the run went.

    Attributes:
        turns: The stand-ins' replies (and routers' choices), in step order.
        trace: The executor's record of the run (steps, fired edges, stop reason).
        stop_reason: Why the run stopped.
        terminated: Whether the team's termination condition fired.
        messages: Every chat message and event of the run, task first.
        findings: The rules this run broke.
    """

    turns: tuple[Turn, ...]
    trace: RunTrace
    stop_reason: str
    terminated: bool
    messages: tuple[BaseAgentEvent | BaseChatMessage, ...]
    findings: tuple[Finding, ...]

    @property
    def steps(self) -> list[str]:
        """The nodes in the order they started."""
        return self.trace.steps

    @property
    def visited(self) -> set[str]:
        """The nodes that ran."""
        return self.trace.visited

    @property
    def keys(self) -> set[tuple[str, tuple[str, ...]]]:
        """The ``(rule, nodes)`` of every finding."""
        return {finding.key for finding in self.findings}


@dataclass
class ExploreReport:
    """What [`explore`][flowlib.testing.explore] found.

    Attributes:
        flow: The flow's name.
        findings: One per distinct ``(rule, nodes)``, each with its shrunk counterexample.
        examples: How many stand-in runs were made.
        visited: The nodes some run reached.
    """

    flow: str
    findings: list[Finding]
    examples: int
    visited: set[str]

    @property
    def ok(self) -> bool:
        """True when nothing was found."""
        return not self.findings

    def rules(self) -> set[str]:
        """The rules that were broken."""
        return {finding.rule for finding in self.findings}

    def __str__(self) -> str:
        if self.ok:
            return f"{self.flow}: sound ({self.examples} explored runs, no findings)"
        head = f"{self.flow}: {len(self.findings)} finding(s) in {self.examples} explored runs"
        return "\n".join([head, *(str(f) for f in self.findings)])


class _Terminations(TerminationCondition):
    """Wraps the team's termination condition to record whether it fired."""

    def __init__(self, inner: TerminationCondition) -> None:
        self.inner = inner
        self.fired = False

    @property
    def terminated(self) -> bool:
        return self.inner.terminated

    async def __call__(
        self, messages: Sequence[BaseAgentEvent | BaseChatMessage]
    ) -> StopMessage | None:
        stop = await self.inner(messages)
        if stop is not None:
            self.fired = True
        return stop

    async def reset(self) -> None:
        await self.inner.reset()


class _Flow:
    """What every run of one flow shares: the plan, participants and vocabulary."""

    def __init__(self, obj: object, *, max_turns: int, task: str) -> None:
        if not isinstance(max_turns, int) or isinstance(max_turns, bool) or max_turns < 1:
            raise InvalidArgumentError(
                f"max_turns must be a positive integer, not {max_turns!r}.",
                argument="max_turns",
            )
        participants: list[Any]
        if isinstance(obj, DiGraph):
            analysis = validate_graph(obj, allow_unconditional_cycles=True)
            self.plan = ExecutionPlan(obj, analysis)
            self.name = "graph"
            participants = [None] * len(analysis.names)
            self.termination: TerminationCondition | None = None
            team_turns: int | None = None
            self.team: Any = None
        elif isinstance(getattr(obj, "plan", None), ExecutionPlan) and isinstance(
            getattr(obj, "policy", None), TeamPolicy
        ):
            self.plan = obj.plan  # type: ignore[attr-defined]
            self.name = str(getattr(obj, "name", type(obj).__name__))
            participants = list(obj.participants)  # type: ignore[attr-defined]
            self.termination = obj.termination_condition  # type: ignore[attr-defined]
            team_turns = obj.max_turns  # type: ignore[attr-defined]
            self.team = obj
        else:
            raise ArgumentTypeError(
                f"explore() needs a flowlib team (GraphFlow, RoundRobinGroupChat, Swarm, "
                f"SelectorGroupChat, ...) or a DiGraph, not {type(obj).__name__}.",
                argument="team",
            )
        self._current: dict[str, Any] = {}  # this run's stand-ins by node name
        self._draw: Draw[Any] | None = None  # this run's draw
        self.plan = self._exploration_plan(self.plan)
        self.graph: DiGraph = self.plan.graph
        self.participants = participants
        self.names = list(self.plan.names)
        self.out_edges = {name: list(self.graph.nodes[name].edges) for name in self.names}
        self.bounded_by_team = team_turns is not None
        self.max_turns = team_turns if team_turns is not None else max_turns
        self.task = task
        self.vocabulary = collect_vocabulary(self.out_edges, self.termination)
        leaves = termination_leaves(self.termination)
        self.judge_termination = bool(leaves) and all(
            type(leaf).__name__ in _EXPLORABLE for leaf in leaves
        )

    def _exploration_plan(self, plan: ExecutionPlan) -> ExecutionPlan:
        """The plan explored: node policies made instant and storeless (no deadline, no
        cache, retries without waiting), each map edge drawing its item count (0, 1 or
        many) and each map instance the node's stand-in."""
        graph = plan.graph
        has_policies = any(
            node.timeout is not None or node.retry is not None or node.cache is not None
            for node in graph.nodes.values()
        )
        if not has_policies and all(edge is None for edge in plan.map_in):
            return plan
        nodes = {}
        for name, node in graph.nodes.items():
            update: dict[str, Any] = {"timeout": None, "cache": None}
            if node.retry is not None:
                update["retry"] = node.retry.model_copy(
                    update={"initial_interval": 0.0, "jitter": False}
                )
            if plan.map_in[plan.index[name]] is not None:
                update["instances"] = functools.partial(self._instance, name)
            nodes[name] = node.model_copy(update=update)
        explored = DiGraph.model_construct(
            nodes=nodes, default_start_node=graph.default_start_node, pattern=graph.pattern
        )
        copy = ExecutionPlan(explored, plan.analysis)
        for edge in copy.edges:
            if edge.mapper is not None:
                edge.mapper = self._items
        return copy

    def _instance(self, name: str, index: int) -> Any:
        """A map instance in exploration: the node's stand-in (its replies are drawn)."""
        return self._current[name]

    def _items(self, message: BaseChatMessage | None) -> list[str]:
        """A map edge in exploration: none, one or several items, drawn."""
        assert self._draw is not None
        count = self._draw(st.sampled_from(MAP_COUNTS))
        return [f"item {index}" for index in range(count)]

    def stand_ins(self, draw: Draw[Any], record: Any) -> list[Any]:
        from ..teams.internal import SelectorRouter

        stand_ins: list[Any] = []
        for name, participant in zip(self.names, self.participants, strict=True):
            targets = [self.names[e.target] for e in self.plan.out_edges[self.plan.index[name]]]
            if isinstance(participant, Router):
                if isinstance(participant, SelectorRouter):
                    stand_ins.append(
                        StandInSelector(
                            name,
                            participant.speakers,
                            draw,
                            selector_func=participant.selector_func,
                            candidate_func=participant.candidate_func,
                            allow_repeated=participant.allow_repeated_speaker,
                            record=record,
                        )
                    )
                else:
                    stand_ins.append(
                        StandInRouter(name, targets, draw, can_stop=True, record=record)
                    )
                continue
            if participant is None and self.graph.nodes[name].kind == "router":
                stand_ins.append(StandInRouter(name, targets, draw, can_stop=False, record=record))
                continue
            failures = self._transient_failures(name)
            stand_in_class = StandIn if failures is None else _FlakyStandIn
            stand_in = stand_in_class(
                name,
                self.out_edges[name],
                draw,
                self.vocabulary,
                handoffs=declared_handoff_targets(participant),
                speakers=inner_speakers(participant),
                record=record,
            )
            if isinstance(stand_in, _FlakyStandIn) and failures is not None:
                stand_in.failures = failures
            stand_ins.append(stand_in)
        return stand_ins

    def _transient_failures(self, name: str) -> tuple[int, type[BaseException]] | None:
        """For a node with a retry policy (not a map target): how many failed attempts a
        turn may draw (fewer than the policy allows, so it recovers) and of what type."""
        retry = self.graph.nodes[name].retry
        if retry is None or retry.max_attempts < 2:
            return None
        if self.plan.map_in[self.plan.index[name]] is not None:
            return None  # instances share the stand-in: their draws would interleave
        candidates: list[type[BaseException]] = [ConnectionError, *(retry.retry_on or ())]
        for error in candidates:
            try:
                sample = error("drawn")
            except Exception:
                continue  # an error class that needs other arguments
            if retry.retries(sample):
                return retry.max_attempts - 1, error
        return None

    # --- one run -------------------------------------------------------------------------

    async def run(self, raw_draw: Draw[Any]) -> RoutingOutcome:
        draw = GuardedDraw(raw_draw)
        try:
            return await self._run(draw)
        finally:
            if draw.aborted is not None:
                raise draw.aborted

    async def _run(self, draw: GuardedDraw) -> RoutingOutcome:
        turns: list[Turn] = []
        stand_ins = self.stand_ins(draw, turns.append)
        self._current = dict(zip(self.names, stand_ins, strict=True))
        self._draw = draw
        termination = _Terminations(self.termination) if self.termination is not None else None
        if termination is not None:
            await termination.reset()
        team = self.team
        executor = GraphExecutor(
            self.plan,
            stand_ins,
            termination_condition=termination,
            max_turns=self.max_turns,
            message_factory=MessageFactory(),
            task_router=team.policy.route_task if team is not None else None,
            dead_end_reason=team.policy.describe_dead_end if team is not None else None,
        )
        messages: list[BaseAgentEvent | BaseChatMessage] = []
        stop_reason = ""
        error: NodeExecutionError | None = None
        try:
            async for item in executor.run_stream([TextMessage(content=self.task, source="user")]):
                if isinstance(item, (BaseAgentEvent, BaseChatMessage)):
                    messages.append(item)
                else:
                    stop_reason = item.stop_reason or ""
        except NodeExecutionError as exc:
            error = exc
            stop_reason = f"error in `{exc.node}`: {exc.__cause__}"
            executor.trace.stop_reason = stop_reason
        finally:
            if termination is not None:
                await termination.reset()
        fired = termination.fired if termination is not None else False
        stopped = any(isinstance(s, StandInRouter) and s.stopped for s in stand_ins)
        partial = RoutingOutcome(
            tuple(turns), executor.trace, stop_reason, fired, tuple(messages), ()
        )
        findings = self._judge(partial, executor, error, natural=not (fired or stopped))
        return RoutingOutcome(
            tuple(turns), executor.trace, stop_reason, fired, tuple(messages), tuple(findings)
        )

    def _ordered(self, nodes: Sequence[str]) -> tuple[str, ...]:
        chosen = set(nodes)
        return tuple(name for name in self.names if name in chosen)

    def _judge(
        self,
        outcome: RoutingOutcome,
        executor: GraphExecutor,
        error: NodeExecutionError | None,
        *,
        natural: bool,
    ) -> list[Finding]:
        found: list[Finding] = []

        def add(rule: Rule, nodes: Sequence[str], message: str) -> None:
            found.append(Finding(rule, self._ordered(nodes), message, outcome.turns, outcome))

        if error is not None:
            cause = error.__cause__
            if isinstance(cause, NobodyToPickError):
                add(
                    "selector_picks_nobody",
                    [cause.router],
                    f"{cause}; make candidate_func return at least one participant name "
                    "on every thread (or selector_func return a participant or None).",
                )
            else:
                add(
                    "node_error",
                    [error.node],
                    f"the run raised {type(cause).__name__}: {cause}",
                )
            return found
        if executor.scheduler.ready and natural:
            if not self.bounded_by_team:
                ran: dict[str, int] = {}
                for name in outcome.steps:
                    ran[name] = ran.get(name, 0) + 1
                # The loop: every node of the strongly connected components that
                # repeated, so one loop is one finding whichever way it was driven.
                analysis = self.plan.analysis
                repeated = {analysis.scc[self.plan.index[n]] for n, c in ran.items() if c > 1}
                looping = [
                    name
                    for i, name in enumerate(self.names)
                    if analysis.scc[i] in repeated and analysis.scc[i] in analysis.cyclic
                ] or list(ran)
                add(
                    "runaway_loop",
                    looping,
                    f"the loop ran {self.max_turns} turns without the termination condition "
                    "firing; bound it (max_turns=..., MaxMessageTermination) or give it an "
                    "exit the agents reliably take.",
                )
            return found
        if not natural or executor.scheduler.ready:
            return found
        participants = set(self.names)
        last: dict[str, Turn] = {turn.node: turn for turn in outcome.turns}
        dead = set(_DEAD_END.findall(outcome.stop_reason))
        for name in self.names:
            final = last.get(name)
            if (
                final is not None
                and final.handoff is not None
                and final.handoff not in participants
            ):
                turn = final
                said = f"`{name}` handed off to `{turn.handoff}`"
                if name in dead or said in outcome.stop_reason:
                    add(
                        "handoff_to_non_participant",
                        [name],
                        f"{said}, who is not a participant, and nothing stopped the run; "
                        f"add HandoffTermination(target={turn.handoff!r}) to the "
                        f"termination condition, or make `{turn.handoff}` a participant.",
                    )
                    continue
            if name not in dead:
                continue
            edges = ", ".join(
                f"`{name} -> {e.target}`" for e in self.out_edges.get(name, ()) if e.is_conditional
            )
            add(
                "dead_end",
                [name],
                f"`{name}`'s reply matched none of its outgoing edges ({edges}), so the run "
                "ended there; add a fallback edge (no condition, or the negation of the "
                "others) or make the conditions cover every reply.",
            )
        for group_id, missing in executor.scheduler.tracker.waiting():
            group = self.plan.groups[group_id]
            target = self.names[group.target]
            waited = [self.plan.edges[e] for e in missing]
            shown = ", ".join(f"`{self.plan.describe_edge(e)}`" for e in waited)
            add(
                "join_never_completes",
                [target],
                f"`{target}` was left waiting for {shown} (an `all` join) when the run ended; "
                "if only some of its inputs can fire, give those edges "
                "activation_condition='any' (or separate activation groups).",
            )
        return found


class _FlakyStandIn(StandIn):
    """A stand-in for a node with a retry policy: before each reply it draws how many
    attempts fail first with an error the policy retries (fewer than it allows), so the
    exploration walks the retried turns too."""

    failures: tuple[int, type[BaseException]] = (0, ConnectionError)
    _pending: int | None = None

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        """Fail as drawn, then reply with a drawn message."""
        most, error = self.failures
        if self._pending is None:
            self._pending = self._draw(st.integers(0, most))
        if self._pending > 0:
            self._pending -= 1
            raise error(f"stand-in `{self.name}`: a drawn transient failure")
        self._pending = None
        return await super().on_messages(messages, cancellation_token)


def _run_sync(flow: _Flow, draw: Draw[Any]) -> RoutingOutcome:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(flow.run(draw))
    raise InvalidArgumentError(
        "routing_outcomes() draws by running the flow on its own event loop, and an event "
        "loop is already running here; use it from a synchronous test (a plain `def`), "
        "or call explore() instead.",
        argument="team",
    )


def routing_outcomes(
    team: object, *, max_turns: int = 25, task: str = DEFAULT_TASK
) -> st.SearchStrategy[RoutingOutcome]:
    """A hypothesis strategy of stand-in runs of ``team``; see [`explore`][flowlib.testing.explore].

    Each drawn [`RoutingOutcome`][flowlib.testing.RoutingOutcome] is one run of the flow with
    every node replaced by a stand-in whose replies are drawn; its ``findings`` list the
    rules the run broke. Use it in your own ``@given`` tests to state properties of your
    flow's routing.

    Args:
        team: A flowlib team or a [`DiGraph`][flowlib.graph.DiGraph].
        max_turns: The turn bound for teams without ``max_turns`` of their own.
        task: The task message each run starts with.

    Raises:
        ArgumentTypeError: If ``team`` is not a team or graph.
        InvalidArgumentError: If ``max_turns`` is not a positive integer.

    Examples:
        ```python
        from hypothesis import given
        from flowlib.testing import routing_outcomes

        @given(routing_outcomes(build()))
        def test_publisher_runs_last(outcome):
            if "publisher" in outcome.steps:
                assert outcome.steps[-1] == "publisher"
        ```
    """
    return _strategy(_Flow(team, max_turns=max_turns, task=task))


def _strategy(flow: _Flow) -> st.SearchStrategy[RoutingOutcome]:
    @st.composite
    def outcomes(draw: Draw[Any]) -> RoutingOutcome:
        return _run_sync(flow, draw)

    strategy: st.SearchStrategy[RoutingOutcome] = outcomes()
    return strategy


class _Found(FlowlibError):
    """Stops a hypothesis search at the first new finding (caught inside explore)."""

    def __init__(self, outcome: RoutingOutcome) -> None:
        super().__init__("a new finding")
        self.outcome = outcome


def _settings(max_examples: int) -> settings:
    return settings(
        max_examples=max_examples,
        database=None,
        deadline=None,
        derandomize=True,
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate, Phase.shrink],
    )


def _search(
    strategy: st.SearchStrategy[RoutingOutcome],
    known: set[tuple[str, tuple[str, ...]]],
    seen: list[RoutingOutcome],
    max_examples: int,
) -> RoutingOutcome | None:
    """One hypothesis search for a run with a finding not in ``known``; shrunk."""

    @_settings(max_examples)
    @given(strategy)
    def search(outcome: RoutingOutcome) -> None:
        seen.append(outcome)
        if outcome.keys - known:
            raise _Found(outcome)

    try:
        search()
    except _Found as found:
        return found.outcome
    return None


def _confirm_absent(
    strategy: st.SearchStrategy[RoutingOutcome], predicate: Any, max_examples: int
) -> bool:
    try:
        find(strategy, predicate, settings=_settings(max_examples))
    except (NoSuchExample, Unsatisfiable):
        return True
    return False


def _explore(flow: _Flow, strategy: Any, max_examples: int, max_findings: int) -> ExploreReport:
    known: set[tuple[str, tuple[str, ...]]] = set()
    findings: list[Finding] = []
    seen: list[RoutingOutcome] = []
    for _ in range(max_findings):
        outcome = _search(strategy, known, seen, max_examples)
        if outcome is None:
            break
        for finding in outcome.findings:
            if finding.key not in known:
                known.add(finding.key)
                findings.append(finding)
    visited: set[str] = set()
    fired = False
    for outcome in seen:
        visited |= outcome.visited
        fired = fired or outcome.terminated
    for name in flow.names:
        if name in visited:
            continue
        if _confirm_absent(strategy, lambda o, n=name: n in o.visited, max_examples):
            findings.append(
                Finding(
                    "unreachable_node",
                    (name,),
                    f"no explored run reached `{name}` ({counted(len(seen), 'run')}); check the "
                    "conditions on the edges into it, or remove it.",
                )
            )
        else:
            visited.add(name)
    never = flow.judge_termination and not fired
    if never and _confirm_absent(strategy, lambda o: o.terminated, max_examples):
        findings.append(
            Finding(
                "termination_never_fires",
                (),
                f"the termination condition {flow.termination!r} never fired in "
                f"{len(seen)} explored runs; check the texts and sources it waits for "
                "(a source that is not a participant never speaks).",
            )
        )
    order = {rule: i for i, rule in enumerate(RULES)}
    findings.sort(key=lambda f: (order[f.rule], [flow.names.index(n) for n in f.nodes]))
    return ExploreReport(flow.name, findings, len(seen), visited)


def explore(
    team: object,
    *,
    max_turns: int = 25,
    max_examples: int = 100,
    task: str = DEFAULT_TASK,
    max_findings: int = 10,
) -> ExploreReport:
    """Explore a flow's control structure with stand-ins and report what can go wrong.

    Every node is replaced by a stand-in whose reply is drawn to satisfy a chosen subset
    of its outgoing conditions; the flow's own graph runs on the real executor. Each
    distinct finding comes with the shrunk sequence of replies that produces it. The
    exploration is deterministic (the same flow gives the same report).

    Args:
        team: A flowlib team (GraphFlow, RoundRobinGroupChat, Swarm, SelectorGroupChat,
            ...) or a [`DiGraph`][flowlib.graph.DiGraph]. Its agents are never called.
        max_turns: The turn bound of a run when the team has no ``max_turns`` of its own;
            a run that reaches it without terminating is a ``runaway_loop``. Raise it
            when the termination condition needs more turns (e.g.
            ``MaxMessageTermination(40)``).
        max_examples: Runs per hypothesis search (one search per finding, plus one).
        task: The task message each run starts with.
        max_findings: Stop after this many distinct findings.

    Returns:
        The report; ``report.ok`` is True when nothing was found.

    Raises:
        ArgumentTypeError: If ``team`` is not a team or graph.
        InvalidArgumentError: If ``max_turns`` is not a positive integer.

    Examples:
        ```python
        from flowlib.testing import explore

        report = explore(build())
        for finding in report.findings:
            print(finding.rule, finding.nodes, finding.counterexample)
        ```
    """
    if not isinstance(max_examples, int) or max_examples < 1:
        raise InvalidArgumentError(
            f"max_examples must be a positive integer, not {max_examples!r}.",
            argument="max_examples",
        )
    flow = _Flow(team, max_turns=max_turns, task=task)
    strategy = _strategy(flow)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _explore(flow, strategy, max_examples, max_findings)
    # Called from async code: explore on a thread with its own event loops.
    result: list[ExploreReport] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            result.append(_explore(flow, strategy, max_examples, max_findings))
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=work, name="flowlib-explore")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


def assert_flow_sound(
    team: object,
    *,
    max_turns: int = 25,
    max_examples: int = 100,
    task: str = DEFAULT_TASK,
) -> ExploreReport:
    """Explore ``team`` and fail with the report if anything was found.

    Args:
        team: A flowlib team or [`DiGraph`][flowlib.graph.DiGraph].
        max_turns: See [`explore`][flowlib.testing.explore].
        max_examples: See [`explore`][flowlib.testing.explore].
        task: See [`explore`][flowlib.testing.explore].

    Returns:
        The (empty) report.

    Raises:
        FlowUnsoundError: An ``AssertionError`` whose message lists every finding with
            its counterexample; ``.report`` holds the report.

    Examples:
        ```python
        from flowlib.testing import assert_flow_sound

        def test_my_flow_is_sound():
            assert_flow_sound(build())
        ```
    """
    report = explore(team, max_turns=max_turns, max_examples=max_examples, task=task)
    if not report.ok:
        raise FlowUnsoundError(str(report), report=report)
    return report
