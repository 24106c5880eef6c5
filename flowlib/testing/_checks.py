"""A reference checker for runs: replay a team's trace against the activation rules.

The executor keeps its bookkeeping in ``flowlib.graph._activation``; this module
re-derives what a run was allowed to do from the graph alone and compares it with what
the run did (``team.trace``). It shares only the edge-firing rule with the executor
([`fire_edges`][flowlib.graph.fire_edges], which says which out-edges a reply fires); the
activation of joins, starts and absorption are replayed here independently, so a bug in
the executor's bookkeeping is not hidden by the same bug in the checker.

The rules it checks (see ``docs/graph-semantics.md``):

- the first starts of a fresh run are the entry nodes, in order;
- every firing ``(step, edge)`` comes from a turn of the edge's source, at most once;
- an ``all`` group activates its node when every one of its edges has fired since the
  group last activated, an ``any`` group on any firing; groups of a node are OR-ed;
- a node starts only on an activation it has not used yet, and activations that arrive
  before it starts (or while it runs) merge into one further start;
- after a natural completion no activation is left unused;
- with the replies known: an edge fires only if its condition matches the reply, and a
  matching edge may be missing only from an ``any`` group (absorbed); a node whose reply
  matched none of its edges, and a join left waiting, are named in the stop reason.

``trace.fired`` alone does not say *when* each edge fired relative to the starts of
other nodes; a [`RunTimeline`][flowlib.testing.RunTimeline] attached to the team records that
interleaving, and with it the checker is exact. Without one it checks what the trace alone implies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from .._english import counted
from ..errors import ContractError, FlowlibError, InvalidTypeError
from ..graph import (
    COMPLETE_REASON,
    DiGraph,
    DiGraphEdge,
    RunTrace,
    edge_rules,
    fire_edges,
    validate_graph,
)
from ..messages import TextMessage

__all__ = ["RunTimeline", "TraceCheckError", "check_run", "check_trace"]

_T = TypeVar("_T")


class TraceCheckError(FlowlibError, AssertionError):
    """A run's trace breaks the graph's execution rules; the message says which and where."""


@dataclass
class RunTimeline:
    """The interleaving of node starts and edge firings in a team's most recent run.

    ``team.trace`` lists starts and firings separately; this records them in one sequence,
    which is what an exact activation check needs. Attach it before running.

    Attributes:
        events: ``("start", step)`` and ``("fire", position in trace.fired)``, in the order
            they happened.

    Examples:
        >>> import asyncio
        >>> from flowlib.teams import DiGraphBuilder, GraphFlow
        >>> from flowlib.testing import ScriptedAgent
        >>> a, b = ScriptedAgent("a", ["x"]), ScriptedAgent("b", ["y"])
        >>> builder = DiGraphBuilder().add_node(a).add_node(b).add_edge(a, b)
        >>> team = GraphFlow(builder.get_participants(), builder.build())
        >>> timeline = RunTimeline.attach(team)
        >>> _ = asyncio.run(team.run(task="go"))
        >>> timeline.events
        [('start', 0), ('fire', 0), ('start', 1)]
    """

    events: list[tuple[Literal["start", "fire"], int]] = field(default_factory=list)
    trace: RunTrace | None = field(default=None, repr=False, compare=False)
    """The trace observed (None: a timeline built by hand)."""

    @classmethod
    def attach(cls, team: Any) -> RunTimeline:
        """Start recording the runs of ``team`` (anything with a ``trace``: a RunTrace).

        The timeline is added as an observer of the trace
        ([`RunTrace.add_observer`][flowlib.graph.RunTrace.add_observer]).

        Raises:
            TypeError: If ``team.trace`` is not a [`RunTrace`][flowlib.graph.RunTrace].
        """
        trace = getattr(team, "trace", None)
        if not isinstance(trace, RunTrace):
            raise InvalidTypeError(
                f"RunTimeline.attach() needs a team with a `trace` (a RunTrace), not "
                f"{type(team).__name__}."
            )
        timeline = cls(trace=trace)
        trace.add_observer(timeline)
        return timeline

    def detach(self) -> None:
        """Stop recording (the events so far are kept)."""
        if self.trace is not None:
            self.trace.remove_observer(self)

    def on_start(self, trace: RunTrace, step: int) -> None:
        """A step started (called by the trace)."""
        self.events.append(("start", step))

    def on_fire(self, trace: RunTrace, position: int) -> None:
        """An edge fired (called by the trace)."""
        self.events.append(("fire", position))

    def on_clear(self, trace: RunTrace) -> None:
        """A new run starts (called by the trace)."""
        self.events.clear()

    def verify(self, trace: RunTrace) -> None:
        """Check that this timeline saw every start and firing of ``trace``.

        Raises:
            RuntimeError: If it did not (it was attached after the run started, or to
                another trace).
        """
        starts = sum(1 for kind, _ in self.events if kind == "start")
        fires = len(self.events) - starts
        attached = self.trace is None or trace is self.trace  # None: built by hand
        if not attached or (starts, fires) != (len(trace.step_nodes), len(trace.fired)):
            raise ContractError(
                f"RunTimeline saw {starts} starts and {fires} firings but the trace has "
                f"{len(trace.step_nodes)} and {len(trace.fired)}; attach the timeline to the "
                "team before running it, and keep the team's trace object."
            )


@dataclass
class _Group:
    target: int
    name: str
    any: bool
    edges: list[int]
    pending: set[int] = field(default_factory=set)  # fired edges of a partial `all` join


def _edge_text(names: Sequence[str], ends: Sequence[tuple[int, int]], edge: int) -> str:
    source, target = ends[edge]
    return f"`{names[source]} -> {names[target]}` (edge {edge})"


def check_trace(
    graph: DiGraph,
    trace: RunTrace,
    *,
    timeline: RunTimeline | None = None,
    replies: Sequence[str | None] | None = None,
    fresh: bool = True,
    check_steps: bool = True,
) -> None:
    """Check one run's ``trace`` against the activation rules of ``graph``.

    Args:
        graph: The team's graph (``team.graph``).
        trace: The run's trace (``team.trace``), after the run.
        timeline: A [`RunTimeline`][flowlib.testing.RunTimeline] attached before the run; makes the
            check exact. With it, the step of each firing is derived from the timeline (the source's
            latest start before the firing), not read from ``trace.fired``.
        replies: The text each step replied, by step (None where unknown); enables the
            checks of conditions, absorption and the stop reason.
        fresh: Whether the run started from the entry nodes (not resumed from a stop).
        check_steps: With a timeline, also check that ``trace.fired`` records the step of
            the source's turn for every firing.

    Raises:
        TraceCheckError: Naming the first rule the run broke.
    """
    names = list(graph.nodes)
    index = {name: i for i, name in enumerate(names)}
    edges: list[tuple[str, DiGraphEdge]] = list(graph.iter_edges())
    ends = [(index[source], index[edge.target]) for source, edge in edges]
    steps = list(trace.step_nodes)
    fired = list(trace.fired)

    def fail(message: str) -> TraceCheckError:
        path = " ".join(f"{i}:{names[node]}" for i, node in enumerate(steps))
        firing = ", ".join(f"{step}:{_edge_text(names, ends, e)}" for step, e in trace.fired)
        return TraceCheckError(
            f"{message}\n  steps: {path}\n  fired: {firing}\n  stop: {trace.stop_reason}"
        )

    if list(trace.names) != names or [tuple(e) for e in trace.edge_ends] != [
        (names[s], names[t]) for s, t in ends
    ]:
        raise fail("The trace does not belong to this graph (nodes or edges differ).")
    for step, edge in fired:
        if not 0 <= edge < len(ends):
            raise fail(f"Firing ({step}, {edge}) names an edge the graph does not have.")

    if timeline is not None:
        timeline.verify(trace)
        # A node never runs twice at once, so a firing belongs to its source's latest start.
        latest: dict[int, int] = {}
        for kind, number in timeline.events:
            if kind == "start":
                latest[steps[number]] = number
                continue
            recorded, edge = fired[number]
            step = latest.get(ends[edge][0], -1)
            if step < 0:
                raise fail(
                    f"Edge {_edge_text(names, ends, edge)} fired before its source ever started."
                )
            if check_steps and step != recorded:
                raise fail(
                    f"trace.fired records step {recorded} for the firing of "
                    f"{_edge_text(names, ends, edge)}, but the source's turn is step {step}."
                )
            fired[number] = (step, edge)

    analysis = validate_graph(graph, allow_unconditional_cycles=True)
    groups: list[_Group] = []
    group_of: list[int] = []
    by_key: dict[tuple[int, str], int] = {}
    for edge, (_, target) in enumerate(ends):
        key = (target, analysis.edge_groups[edge])
        if key not in by_key:
            by_key[key] = len(groups)
            groups.append(_Group(target, key[1], analysis.edge_activation[edge] == "any", []))
        groups[by_key[key]].edges.append(edge)
        group_of.append(by_key[key])
    rules = edge_rules(graph)
    out_edges = [[rule.index for rule in node_rules] for node_rules in rules]

    # --- what the trace alone implies -------------------------------------------------
    seen_firings: set[tuple[int, int]] = set()
    for step, edge in fired:
        if not 0 <= step < len(steps) or steps[step] != ends[edge][0]:
            raise fail(
                f"Edge {_edge_text(names, ends, edge)} fired at step {step}, which is not a "
                "turn of its source."
            )
        if (step, edge) in seen_firings:
            raise fail(f"Edge {_edge_text(names, ends, edge)} fired twice for step {step}.")
        seen_firings.add((step, edge))

    entry = [index[name] for name in graph.entry_nodes()]
    if fresh:
        head = steps[: len(entry)]
        if head != entry[: len(head)]:
            raise fail(
                "A fresh run must start with the entry nodes "
                f"{[names[n] for n in entry]} in order; it started with "
                f"{[names[n] for n in head]}."
            )

    # Replaying the groups in firing order gives each activation and the step of the turn
    # whose firing caused it; that needs no timing.
    activation_steps: list[list[int]] = [[] for _ in names]
    for step, edge in fired:
        group = groups[group_of[edge]]
        if _fire(group, edge):
            activation_steps[group.target].append(step)
    waiting = [group for group in groups if group.pending]
    for group in groups:
        group.pending = set()
    free = [1 if fresh and node in entry else 0 for node in range(len(names))]
    count = [0] * len(names)
    for step, node in enumerate(steps):
        count[node] += 1
        needed = count[node] - free[node]
        if needed <= 0:
            continue
        # Each start uses an activation of its own, caused by a turn that started before.
        if sum(1 for cause in activation_steps[node] if cause < step) < needed:
            raise fail(
                f"Node `{names[node]}` started at step {step} (its start number "
                f"{count[node]}) without enough activations before it: "
                f"{len(activation_steps[node])} activation(s) in the whole run, caused at "
                f"steps {activation_steps[node]}."
            )

    stop_reason = trace.stop_reason or ""
    natural = stop_reason.startswith(COMPLETE_REASON)
    if natural:
        for group in waiting:
            if f"`{names[group.target]}`" not in stop_reason:
                raise fail(
                    f"Activation group `{group.name}` of `{names[group.target]}` was left "
                    "waiting but the stop reason does not name the node."
                )

    # --- exact replay with the interleaving -------------------------------------------
    start_at: list[int] = []  # event position of each step's start
    last_fire_at: dict[int, int] = {}  # step -> event position of its last firing
    if timeline is not None:
        credit = [bool(f) for f in free]
        activated_by: list[str] = ["the entry" if c else "" for c in credit]
        for position, (kind, number) in enumerate(timeline.events):
            if kind == "start":
                node = steps[number]
                if not credit[node]:
                    raise fail(
                        f"Node `{names[node]}` started at step {number} but had no unused "
                        "activation: it was not activated since its previous start (or it "
                        "was activated once and ran twice)."
                    )
                credit[node] = False
                start_at.append(position)
                continue
            step, edge = fired[number]
            if step >= len(start_at):
                raise fail(
                    f"Edge {_edge_text(names, ends, edge)} fired for step {step} before that "
                    "step started."
                )
            last_fire_at[step] = position
            group = groups[group_of[edge]]
            if _fire(group, edge):
                credit[group.target] = True
                activated_by[group.target] = _edge_text(names, ends, edge)
        if natural:
            for node, left in enumerate(credit):
                if left:
                    raise fail(
                        f"Node `{names[node]}` was activated (last by {activated_by[node]}) "
                        "but never ran, although the run completed."
                    )

    # --- conditions, absorption and the stop reason -----------------------------------
    if replies is not None:
        if len(replies) != len(steps):
            raise fail(
                f"Got {counted(len(replies), 'reply', 'replies')} for "
                f"{counted(len(steps), 'step')}."
            )
        fired_by_step: dict[int, list[int]] = {}
        for step, edge in fired:
            fired_by_step.setdefault(step, []).append(edge)
        previous_step: list[int] = [-1] * len(steps)
        last: dict[int, int] = {}
        for step, node in enumerate(steps):
            previous_step[step] = last.get(node, -1)
            last[node] = step
        for step, node in enumerate(steps):
            reply = replies[step]
            if reply is None:
                continue
            message = TextMessage(content=reply, source=names[node])
            out = rules[node]
            matching = {
                rule.index for rule, ok in zip(out, fire_edges(out, message), strict=True) if ok
            }
            made = set(fired_by_step.get(step, ()))
            for edge in sorted(made - matching):
                raise fail(
                    f"Edge {_edge_text(names, ends, edge)} fired at step {step} although its "
                    f"condition does not match the reply {reply!r}."
                )
            for edge in sorted(matching - made):
                group = groups[group_of[edge]]
                if not group.any:
                    raise fail(
                        f"Edge {_edge_text(names, ends, edge)} matched the reply {reply!r} of "
                        f"step {step} but did not fire; only edges of `any` groups may be "
                        "absorbed."
                    )
                if timeline is not None:
                    # Absorbed: a sibling of the group fired while this source was in
                    # flight for this step, i.e. after its previous turn started and no
                    # later than this turn's own firings (an earlier edge of the same
                    # completion can absorb a later one).
                    before = previous_step[step]
                    low = start_at[before] + 1 if before >= 0 else 0
                    high = last_fire_at.get(step, len(timeline.events) - 1) + 1
                    if not any(
                        kind == "fire"
                        and fired[number][1] != edge
                        and group_of[fired[number][1]] == group_of[edge]
                        for kind, number in timeline.events[low:high]
                    ):
                        raise fail(
                            f"Edge {_edge_text(names, ends, edge)} matched the reply {reply!r} "
                            f"of step {step} but did not fire, and no other edge of its `any` "
                            f"group `{group.name}` fired while `{names[node]}` was in flight, "
                            "so it cannot have been absorbed."
                        )
            # A completion that only cleared an absorbed mark counts as progress, so only
            # a node without `any` out-edges must be named when nothing matched.
            absorbable = any(groups[group_of[e]].any for e in out_edges[node])
            if (
                natural
                and out_edges[node]
                and not matching
                and not absorbable
                and f"`{names[node]}`" not in stop_reason
            ):
                raise fail(
                    f"Node `{names[node]}` matched none of its edges at step {step} (reply "
                    f"{reply!r}) but the stop reason does not name it."
                )


def _fire(group: _Group, edge: int) -> bool:
    """Record a firing into ``group``; return whether it activates the group's node."""
    if group.any:
        return True
    group.pending.add(edge)
    if len(group.pending) == len(group.edges):
        group.pending.clear()
        return True
    return False


def check_run(
    team: Any,
    *,
    timeline: RunTimeline | None = None,
    fresh: bool = True,
    check_steps: bool = True,
) -> None:
    """Check the most recent run of a graph team (e.g. [`GraphFlow`][flowlib.teams.GraphFlow]).

    Like [`check_trace`][flowlib.testing.check_trace] on ``team.graph`` and ``team.trace``, with the
    replies taken from the team's [`ScriptedAgent`][flowlib.testing.ScriptedAgent] participants
    (their latest replies, one per start in the trace).

    Raises:
        TraceCheckError: Naming the first rule the run broke.
    """
    from ._agents import ScriptedAgent

    trace: RunTrace = team.trace
    by_name = {participant.name: participant for participant in team.participants}
    starts: dict[str, int] = {}
    for node in trace.step_nodes:
        name = trace.names[node]
        starts[name] = starts.get(name, 0) + 1
    taken: dict[str, int] = {}
    replies: list[str | None] = []
    for node in trace.step_nodes:
        name = trace.names[node]
        agent = by_name.get(name)
        if not isinstance(agent, ScriptedAgent) or len(agent.replies) < starts[name]:
            replies.append(None)
            continue
        offset = len(agent.replies) - starts[name]
        replies.append(agent.replies[offset + taken.get(name, 0)])
        taken[name] = taken.get(name, 0) + 1
    check_trace(
        team.graph,
        trace,
        timeline=timeline,
        replies=replies,
        fresh=fresh,
        check_steps=check_steps,
    )
