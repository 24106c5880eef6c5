"""A record of the path one run took: which nodes ran, in what order, and which edges fired."""

from __future__ import annotations

from array import array
from collections.abc import AsyncGenerator, Iterable, Iterator, MutableSequence, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar

__all__ = ["FiredEdges", "RunObserver", "RunTrace", "StepNodes", "TraceObserver", "TurnScope"]


class TraceObserver(Protocol):
    """Told about every change to a [`RunTrace`][flowlib.graph.RunTrace], as it happens.

    Add one with [`RunTrace.add_observer`][flowlib.graph.RunTrace.add_observer]; e.g.
    [`RunTimeline`][flowlib.testing.RunTimeline] records the interleaving of starts and
    firings this way. An observer that also has the methods of
    [`RunObserver`][flowlib.graph.RunObserver] is told when runs start and end and when
    each turn starts, takes a step and ends (flowlib's OpenTelemetry run and turn spans
    are such an observer).
    """

    def on_start(self, trace: RunTrace, step: int) -> None:
        """Step ``step`` started (``trace.step_nodes[step]`` is its node)."""

    def on_fire(self, trace: RunTrace, position: int) -> None:
        """An edge fired (``trace.fired[position]`` is the firing)."""

    def on_clear(self, trace: RunTrace) -> None:
        """The trace was cleared: a new run starts."""


class TurnScope(Protocol):
    """What a [`RunObserver`][flowlib.graph.RunObserver] keeps of one turn (one attempt
    of it, under a retry policy), from its start to its end.

    The executor calls ``enter`` before each step of the turn (each item it streams) and
    ``exit`` right after it, in the task that runs the turn, so what ``enter`` makes
    current (a span, a context variable) is current while the turn works and never while
    the run's consumer holds an item. ``end`` is the turn-ended event.
    """

    def enter(self) -> None:
        """The turn takes a step."""

    def exit(self) -> None:
        """The step is done (the turn is suspended at an item, or ended)."""

    def end(self, error: BaseException | None) -> None:
        """The turn ended: ``None`` when it finished, else what stopped it (its error,
        ``CancelledError``, or ``GeneratorExit`` when the run's consumer stopped reading
        during it)."""


class RunObserver(TraceObserver, Protocol):
    """A [`TraceObserver`][flowlib.graph.TraceObserver] told about runs and turns too:
    the seam telemetry attaches to (docs/observability.md)."""

    def on_run_start(self, trace: RunTrace) -> None:
        """A run starts (called by its first step, in the consumer's context)."""

    def on_run_end(
        self, trace: RunTrace, messages: int | None, error: BaseException | None
    ) -> None:
        """The run ended: ``messages`` is how many its result holds (None when it ended
        without one), ``error`` what ended it early (None when it ran to its result).
        ``trace.stop_reason`` says why it stopped."""

    def on_turn_start(self, trace: RunTrace, step: int) -> TurnScope | None:
        """Step ``step``'s turn starts running (each attempt under a retry policy); the
        scope returned is told about its steps and its end (None: not interested)."""


_T = TypeVar("_T")


class _IntRecords(MutableSequence[_T]):
    """A list of records of a few ints, kept in one ``array`` per column.

    A run trace keeps a record per turn for as long as the team lives; machine ints cost
    a few bytes each, where a list keeps a slot, often a tuple, and an int object for
    every number past 256. Reads as a list does: an item or a slice (a plain list) is
    made when it is read, and it compares equal to a list or tuple of the same items.
    """

    __slots__ = ("_columns",)
    _typecodes: ClassVar[tuple[str, ...]]

    def __init__(self, items: Iterable[_T] = ()) -> None:
        self._columns = tuple(array(code) for code in self._typecodes)
        self.extend(items)

    def _pack(self, item: _T) -> tuple[int, ...]:
        raise NotImplementedError

    def _unpack(self, ints: tuple[int, ...]) -> _T:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._columns[0])

    def __iter__(self) -> Iterator[_T]:
        return map(self._unpack, zip(*self._columns, strict=True))

    def __reversed__(self) -> Iterator[_T]:
        return map(self._unpack, zip(*map(reversed, self._columns), strict=True))

    def __getitem__(self, index: Any) -> Any:  # the overloads are MutableSequence's
        if not isinstance(index, slice):
            return self._unpack(tuple(column[index] for column in self._columns))
        return list(map(self._unpack, zip(*(c[index] for c in self._columns), strict=True)))

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, slice):
            rows = [self._pack(item) for item in value]
            for position, column in enumerate(self._columns):
                column[index] = array(column.typecode, [row[position] for row in rows])
        else:
            for column, number in zip(self._columns, self._pack(value), strict=True):
                column[index] = number

    def __delitem__(self, index: int | slice) -> None:
        for column in self._columns:
            del column[index]

    def insert(self, index: int, value: _T) -> None:
        """Insert ``value`` before ``index``, as ``list.insert`` does."""
        for column, number in zip(self._columns, self._pack(value), strict=True):
            column.insert(index, number)

    def clear(self) -> None:
        """Forget every item."""
        for column in self._columns:
            del column[:]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (_IntRecords, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(list(self))


class StepNodes(_IntRecords[int]):
    """The node number of each step (4 bytes a step); reads as a list of ints."""

    __slots__ = ()
    _typecodes = ("i",)

    def _pack(self, item: int) -> tuple[int, ...]:
        return (item,)

    def _unpack(self, ints: tuple[int, ...]) -> int:
        return ints[0]

    def append(self, value: int) -> None:
        """Add the node of a new step."""
        self._columns[0].append(value)


class FiredEdges(_IntRecords[tuple[int, int]]):
    """``(step, edge index)`` for each firing (12 bytes a firing); reads as a list of
    pairs."""

    __slots__ = ()
    _typecodes = ("q", "i")

    def _pack(self, item: tuple[int, int]) -> tuple[int, ...]:
        step, edge = item
        return step, edge

    def _unpack(self, ints: tuple[int, ...]) -> tuple[int, int]:
        return ints[0], ints[1]

    def append(self, value: tuple[int, int]) -> None:
        """Add a firing."""
        steps, edges = self._columns
        steps.append(value[0])
        edges.append(value[1])


@dataclass
class RunTrace:
    """The path of the most recent run of a team.

    The executor writes it through [`start`][flowlib.graph.RunTrace.start],
    [`fire`][flowlib.graph.RunTrace.fire] and [`clear`][flowlib.graph.RunTrace.clear],
    which tell the trace's observers.

    Attributes:
        names: Node names, indexed by node number.
        step_nodes: The node started at each step (step ``i`` is ``step_nodes[i]``); a
            [`StepNodes`][flowlib.graph.StepNodes] (it reads as a list of ints).
        fired: ``(step, edge index)`` for every edge that fired; ``step`` is the step of
            the source's turn. A [`FiredEdges`][flowlib.graph.FiredEdges] (it reads as a
            list of pairs).
        edge_ends: ``(source, target)`` names by edge index.
        stop_reason: Why the run stopped, once it has.
        attempts: For each step that took more than one attempt (a node's retry policy),
            how many it took.
        cache_hits: The steps answered from their node's cache, in order.
        instances: ``(step, "<target>[i]")`` for every map instance that finished, in the
            order they finished (the step is the map target's turn).
        edge_groups: The activation group of each edge, by edge index (empty when
            unknown).
    """

    names: list[str]
    edge_ends: list[tuple[str, str]]
    step_nodes: MutableSequence[int] = field(default_factory=StepNodes)
    fired: MutableSequence[tuple[int, int]] = field(default_factory=FiredEdges)
    stop_reason: str | None = None
    attempts: dict[int, int] = field(default_factory=dict)
    cache_hits: list[int] = field(default_factory=list)
    instances: list[tuple[int, str]] = field(default_factory=list)
    edge_groups: list[str] = field(default_factory=list)
    _observers: list[TraceObserver] = field(
        default_factory=list, init=False, repr=False, compare=False
    )
    # The observers that also follow runs and turns (RunObserver).
    _run_observers: list[RunObserver] = field(
        default_factory=list, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        # Lists given to the constructor are kept compact too (see StepNodes, FiredEdges).
        if not isinstance(self.step_nodes, StepNodes):
            self.step_nodes = StepNodes(self.step_nodes)
        if not isinstance(self.fired, FiredEdges):
            self.fired = FiredEdges(self.fired)

    def add_observer(self, observer: TraceObserver) -> None:
        """Tell ``observer`` about every later start, firing and clear (and, if it has
        [`RunObserver`][flowlib.graph.RunObserver]'s methods, every run and turn)."""
        self._observers.append(observer)
        if all(hasattr(observer, m) for m in ("on_run_start", "on_run_end", "on_turn_start")):
            self._run_observers.append(observer)  # type: ignore[arg-type]

    def remove_observer(self, observer: TraceObserver) -> None:
        """Stop telling ``observer`` (no error if it was not added)."""
        if observer in self._observers:
            self._observers.remove(observer)
        if observer in self._run_observers:
            self._run_observers.remove(observer)

    def run_started(self) -> None:
        """Tell the run observers that a run starts."""
        for observer in self._run_observers:
            observer.on_run_start(self)

    def run_ended(self, messages: int | None, error: BaseException | None) -> None:
        """Tell the run observers that the run ended (see `RunObserver.on_run_end`)."""
        for observer in self._run_observers:
            observer.on_run_end(self, messages, error)

    def turn_started(self, step: int) -> list[TurnScope]:
        """Tell the run observers that step ``step``'s turn starts running; the scopes
        they keep of it (none when nobody follows turns)."""
        scopes: list[TurnScope] = []
        for observer in self._run_observers:
            scope = observer.on_turn_start(self, step)
            if scope is not None:
                scopes.append(scope)
        return scopes

    def activation_group(self, step: int) -> str | None:
        """The activation group of the latest edge that fired into step ``step``'s node
        before it (None for an entry turn, or when the groups are unknown)."""
        target = self.names[self.step_nodes[step]]
        for _, edge in reversed(self.fired):
            if self.edge_ends[edge][1] == target:
                return self.edge_groups[edge] if edge < len(self.edge_groups) else None
        return None

    def start(self, node: int) -> int:
        """Record that ``node`` starts a turn; return the turn's step."""
        step = len(self.step_nodes)
        self.step_nodes.append(node)
        for observer in self._observers:
            observer.on_start(self, step)
        return step

    def fire(self, step: int, edge: int) -> None:
        """Record that edge ``edge`` fired for the turn at ``step``."""
        self.fired.append((step, edge))
        if self._observers:
            position = len(self.fired) - 1
            for observer in self._observers:
                observer.on_fire(self, position)

    def note_attempts(self, step: int, attempts: int, *, cache_hit: bool = False) -> None:
        """Record how many attempts the turn at ``step`` took and whether its node's cache
        answered it."""
        if attempts > 1:
            self.attempts[step] = attempts
        if cache_hit:
            self.cache_hits.append(step)

    def note_instance(self, step: int, name: str) -> None:
        """Record that map instance ``name`` of the turn at ``step`` finished."""
        self.instances.append((step, name))

    def instance_counts(self) -> dict[int, int]:
        """For each map turn (by step), how many instances finished in this run."""
        counts: dict[int, int] = {}
        for step, _ in self.instances:
            counts[step] = counts.get(step, 0) + 1
        return counts

    def clear(self) -> None:
        """Forget the previous run's path (a new run starts)."""
        self.step_nodes.clear()
        self.fired.clear()
        self.attempts.clear()
        self.cache_hits.clear()
        self.instances.clear()
        self.stop_reason = None
        for observer in self._observers:
            observer.on_clear(self)

    @property
    def steps(self) -> list[str]:
        """The names of the nodes in the order they started."""
        return [self.names[node] for node in self.step_nodes]

    @property
    def fired_edges(self) -> list[tuple[int, str, str]]:
        """``(step, source, target)`` for every edge that fired, in firing order."""
        return [(step, *self.edge_ends[edge]) for step, edge in self.fired]

    @property
    def visited(self) -> set[str]:
        """The names of the nodes that ran at least once."""
        return {self.names[node] for node in self.step_nodes}


class ObservedTurn:
    """A turn's stream with its observers' [`TurnScope`][flowlib.graph.TurnScope]s:
    entered around each step, ended once when the turn ends. A plain async iterator
    (no generator frame of its own), made only when some observer follows the turn."""

    __slots__ = ("_ended", "_scopes", "_stream")

    def __init__(self, stream: AsyncGenerator[Any, None], scopes: Sequence[TurnScope]) -> None:
        self._stream, self._scopes, self._ended = stream, scopes, False

    def __aiter__(self) -> ObservedTurn:
        return self

    async def __anext__(self) -> Any:
        for scope in self._scopes:
            scope.enter()
        error: BaseException | None = None
        try:
            return await self._stream.__anext__()
        except StopAsyncIteration:
            self._ended = True
            raise
        except BaseException as exc:
            self._ended = True
            error = exc
            raise
        finally:
            for scope in reversed(self._scopes):
                scope.exit()
            if self._ended:
                self._end(error)

    def _end(self, error: BaseException | None) -> None:
        scopes, self._scopes = self._scopes, ()
        for scope in scopes:
            scope.end(error)

    async def asend(self, value: Any) -> Any:
        return await self.__anext__()

    async def athrow(self, *args: Any) -> Any:
        for scope in self._scopes:
            scope.enter()
        try:
            return await self._stream.athrow(*args)
        finally:
            for scope in reversed(self._scopes):
                scope.exit()

    async def aclose(self) -> None:
        """Close the turn (its consumer stopped reading during it)."""
        if self._ended:
            return
        self._ended = True
        for scope in self._scopes:
            scope.enter()
        try:
            await self._stream.aclose()
        finally:
            for scope in reversed(self._scopes):
                scope.exit()
            self._end(GeneratorExit())
