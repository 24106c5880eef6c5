"""Stand-ins: the nodes [`explore`][flowlib.testing.explore] runs in place of a flow's own.

Every node of the flow is replaced for one exploration run. An agent (or nested team)
becomes a [`StandIn`][flowlib.testing.StandIn] whose reply is drawn, turn by turn, to aim at
a subset of the node's outgoing conditions: it contains the substrings, matches the
regexes (drawn with hypothesis' ``from_regex``), hands off to the chosen handoff target
and, for callable conditions, is a drawn text (words the flow's conditions use, the
node's own earlier replies, or free text). Termination keywords are drawn in the same
way. A router becomes a stand-in router that chooses among the targets the real one
could choose: a selector runs the team's own ``selector_func`` and ``candidate_func``
and draws among the candidates; other routers draw a target or a stop.

The real edges decide what fires: the stand-in only aims, the executor checks.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from ..agents import BaseChatAgent
from ..base import (
    AndTerminationCondition,
    CancellationToken,
    OrTerminationCondition,
    Response,
    Team,
    TerminationCondition,
)
from ..conditions import TextMentionTermination
from ..errors import ContractError
from ..graph import (
    AllOf,
    AnyOf,
    Contains,
    DiGraphEdge,
    HandoffTo,
    IsHandoff,
    Not,
    Regex,
    Router,
    Routing,
)
from ..messages import BaseAgentEvent, BaseChatMessage, HandoffMessage, TextMessage

__all__ = ["Draw", "NobodyToPickError", "StandIn", "StandInRouter", "StandInSelector", "Turn"]

T = TypeVar("T")
Draw = Callable[[st.SearchStrategy[T]], T]
"""The ``draw`` function of a hypothesis composite strategy."""

_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", max_size=8)


@dataclass(frozen=True)
class Turn:
    """One stand-in turn of a counterexample.

    Attributes:
        node: The node that spoke (or routed).
        text: Its reply text; for a router, ``"selected <name>"`` or ``"stopped"``.
        handoff: The handoff target when the reply was a ``HandoffMessage``.
        source: The message's source when it differs from ``node`` (a nested team's
            stand-in speaks as one of its inner agents).
    """

    node: str
    text: str
    handoff: str | None = None
    source: str | None = None

    def __str__(self) -> str:
        speaker = self.node if self.source is None else f"{self.node} (as {self.source})"
        if self.handoff is not None:
            return f"{speaker}: hands off to {self.handoff}: {self.text!r}"
        return f"{speaker}: {self.text!r}"


class DrawAborted(ContractError):
    """Hypothesis stopped a draw inside a turn; the run ends and the stop is re-raised."""


class GuardedDraw:
    """Wraps a composite's ``draw`` for use inside the executor's turns.

    Hypothesis ends an example by raising a ``BaseException`` from ``draw`` (it ran out of
    data, or the example is being discarded). Inside a concurrently running turn that
    would escape the executor's task without a trace, so it is kept here, a plain
    [`DrawAborted`][flowlib.testing._standins.DrawAborted] ends the run, and the caller
    re-raises the original after the run.
    """

    def __init__(self, draw: Draw[Any]) -> None:
        self._draw = draw
        self.aborted: BaseException | None = None

    def __call__(self, strategy: st.SearchStrategy[T]) -> T:
        if self.aborted is not None:
            raise DrawAborted("the example was stopped")
        try:
            value: T = self._draw(strategy)
        except Exception:
            raise
        except BaseException as stop:
            self.aborted = stop
            raise DrawAborted("the example was stopped") from None
        return value


class NobodyToPickError(ContractError):
    """A selector stand-in found no participant it could select (raised inside the run)."""

    def __init__(self, router: str, detail: str) -> None:
        super().__init__(f"selector `{router}` can pick nobody: {detail}")
        self.router = router
        self.detail = detail


@dataclass
class Vocabulary:
    """What stand-ins may say, collected once from the flow."""

    words: list[str] = field(default_factory=list)  # condition substrings, keywords
    keywords: list[tuple[str, tuple[str, ...] | None]] = field(default_factory=list)
    """Termination texts with the sources they count from (None: any source)."""

    def add_word(self, word: str) -> None:
        if word and word not in self.words:
            self.words.append(word)


def collect_vocabulary(
    out_edges: Mapping[str, Sequence[DiGraphEdge]], termination: TerminationCondition | None
) -> Vocabulary:
    """The substrings of every condition and the termination keywords."""
    vocabulary = Vocabulary()
    for edges in out_edges.values():
        for edge in edges:
            for leaf in _leaves(edge.condition):
                if isinstance(leaf, str):
                    vocabulary.add_word(leaf)
                elif isinstance(leaf, Contains):
                    vocabulary.add_word(leaf.text)
    for leaf in termination_leaves(termination):
        if isinstance(leaf, TextMentionTermination):
            vocabulary.keywords.append((leaf.text, leaf.sources))
            vocabulary.add_word(leaf.text)
    return vocabulary


def _leaves(condition: object) -> list[object]:
    pending: list[object] = [condition]
    found: list[object] = []
    while pending:
        item = pending.pop()
        if isinstance(item, Not):
            pending.append(item.condition)
        elif isinstance(item, (AnyOf, AllOf)):
            pending.extend(item.conditions)
        elif item is not None:
            found.append(item)
    return found


def termination_leaves(condition: TerminationCondition | None) -> list[TerminationCondition]:
    """The leaf conditions of an ``|``/``&`` tree (built-in combinators only)."""
    if condition is None:
        return []
    pending = [condition]
    found: list[TerminationCondition] = []
    while pending:
        item = pending.pop()
        if isinstance(item, (OrTerminationCondition, AndTerminationCondition)):
            pending.extend(item.conditions)
        else:
            found.append(item)
    return found


def inner_speakers(participant: object) -> list[str]:
    """Who speaks for a nested team node: its participants' names, recursively."""
    if not isinstance(participant, Team):
        return []
    names: list[str] = []
    pending: list[Any] = list(getattr(participant, "participants", ()))
    while pending:
        member = pending.pop(0)
        if isinstance(member, Team):
            pending[:0] = list(getattr(member, "participants", ()))
        elif not isinstance(member, Router):
            names.append(member.name)
    return names


def _satisfy(condition: object, draw: Draw[Any], free: Callable[[object], str]) -> list[str]:
    """Text parts that make ``condition`` true (handoff conditions are handled apart)."""
    if condition is None or isinstance(condition, (Not, HandoffTo, IsHandoff)):
        return []
    if isinstance(condition, str):
        return [condition]
    if isinstance(condition, Contains):
        return [condition.text]
    if isinstance(condition, Regex):
        flags = re.IGNORECASE if condition.ignore_case else 0
        try:
            return [draw(st.from_regex(re.compile(condition.pattern, flags)))]
        except InvalidArgument:  # a construct from_regex cannot generate: a drawn text
            return [free(condition)]
    if isinstance(condition, AnyOf):
        chosen = draw(st.sampled_from(condition.conditions))
        return _satisfy(chosen, draw, free)
    if isinstance(condition, AllOf):
        parts: list[str] = []
        for part in condition.conditions:
            parts.extend(_satisfy(part, draw, free))
        return parts
    return [free(condition)]  # a callable or an unknown condition kind: a drawn text


def code_words(function: object) -> list[str]:
    """The string constants in a callable's code (and its nested code), e.g. ``"YES"``.

    A callable condition usually compares the message with literals; offering them to
    the stand-in lets it reach the branch the callable guards.
    """
    code = getattr(function, "__code__", None)
    if code is None:
        call = vars(type(function)).get("__call__")
        code = getattr(call, "__code__", None)
    words: list[str] = []
    pending = [code] if code is not None else []
    while pending:
        current = pending.pop()
        for constant in current.co_consts:
            if isinstance(constant, str) and 0 < len(constant) <= 40 and constant not in words:
                words.append(constant)
            elif hasattr(constant, "co_consts"):
                pending.append(constant)
    return words


def _handoff_of(condition: object) -> list[str | None]:
    """Handoff targets a condition asks for (None: any handoff)."""
    found: list[str | None] = []
    for leaf in _leaves(condition):
        if isinstance(leaf, HandoffTo):
            found.append(leaf.target)
        elif isinstance(leaf, IsHandoff):
            found.append(None)
    return found


class StandIn(BaseChatAgent):
    """An agent whose replies are drawn to satisfy a chosen subset of its node's conditions.

    Args:
        name: The node name.
        edges: The node's outgoing edges.
        draw: Draws from a hypothesis strategy (a composite strategy's ``draw``).
        vocabulary: Words and termination keywords of the flow.
        handoffs: Handoff targets the real agent declares (participants or not).
        speakers: Sources the stand-in may speak as (a nested team's agents); empty
            means its own name.
        record: Called with each [`Turn`][flowlib.testing.Turn] as it is taken.
    """

    def __init__(
        self,
        name: str,
        edges: Sequence[DiGraphEdge],
        draw: Draw[Any],
        vocabulary: Vocabulary,
        *,
        handoffs: Sequence[str] = (),
        speakers: Sequence[str] = (),
        record: Callable[[Turn], None],
    ) -> None:
        super().__init__(name, "A stand-in drawn by flowlib.testing.explore.")
        self._edges = list(edges)
        self._draw = draw
        self._vocabulary = vocabulary
        self._speakers = list(speakers)
        self._record = record
        targets = list(handoffs)
        for edge in self._edges:
            for target in _handoff_of(edge.condition):
                if target is not None and target not in targets:
                    targets.append(target)
        self._handoffs = targets
        self._aimed = [e for e in self._edges if e.is_conditional and not _handoff_of(e.condition)]
        self.replies: list[str] = []
        self._sticky: Turn | None = None

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        """Text and handoff messages."""
        return (TextMessage, HandoffMessage)

    def _free_text(self, condition: object = None) -> str:
        pool = [*code_words(condition), *self._vocabulary.words, *self.replies]
        pool = list(dict.fromkeys(pool))
        if pool:
            text: str = self._draw(st.one_of(_WORDS, st.sampled_from(pool)))
            return text
        plain: str = self._draw(_WORDS)
        return plain

    def draw_turn(self) -> Turn:
        """Draw one reply (synchronously: the draws of a run stay in start order).

        On its first turn the stand-in also draws whether it is *sticky*: a sticky
        stand-in repeats its first reply on every later turn, so a loop that one
        repeated answer keeps going is found with a handful of draws.
        """
        if self._sticky is not None:
            turn = self._sticky
            self.replies.append(turn.text)
            self._record(turn)
            return turn
        draw = self._draw
        first = not self.replies
        source = self.name
        if self._speakers:
            source = draw(st.sampled_from(self._speakers))
        parts: list[str] = []
        for edge in self._aimed:
            if draw(st.booleans()):
                condition = edge.condition_function or edge.condition
                parts.extend(_satisfy(condition, draw, self._free_text))
        for text, sources in self._vocabulary.keywords:
            if (sources is None or source in sources) and draw(st.booleans()):
                parts.append(text)
        if not parts and draw(st.booleans()):
            parts.append(self._free_text())
        handoff: str | None = None
        if self._handoffs:
            handoff = draw(st.sampled_from([None, *self._handoffs]))
        text = " ".join(parts)
        turn = Turn(self.name, text, handoff, None if source == self.name else source)
        if first and draw(st.booleans()):
            self._sticky = turn
        self.replies.append(text)
        self._record(turn)
        return turn

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        """Reply with a drawn message."""
        turn = self.draw_turn()
        source = turn.source or self.name
        if turn.handoff is not None:
            message: BaseChatMessage = HandoffMessage(
                content=turn.text, source=source, target=turn.handoff
            )
        else:
            message = TextMessage(content=turn.text, source=source)
        return Response(chat_message=message)

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        """Forget earlier replies."""
        self.replies.clear()
        self._sticky = None


STOP = "\x00stop"


class StandInRouter(Router):
    """A router that draws one of its edge targets, or (when ``can_stop``) a stop."""

    def __init__(
        self,
        name: str,
        targets: Sequence[str],
        draw: Draw[Any],
        *,
        can_stop: bool,
        record: Callable[[Turn], None],
    ) -> None:
        super().__init__(name)
        self._targets = list(targets)
        self._draw = draw
        self._can_stop = can_stop
        self._record = record
        self.stopped = False

    async def route(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Routing:
        """Draw the next target."""
        options = [*self._targets, STOP] if self._can_stop else list(self._targets)
        chosen = self._draw(st.sampled_from(options))
        if chosen == STOP:
            self.stopped = True
            self._record(Turn(self.name, "stopped"))
            return Routing(stop_reason=f"stand-in router `{self.name}` stopped the run")
        self._record(Turn(self.name, f"selected {chosen}"))
        return Routing(targets=[chosen])


async def _call(func: Callable[..., Any], thread: Sequence[Any]) -> Any:
    result = func(thread)
    if inspect.isawaitable(result):
        result = await result
    return result


class StandInSelector(Router):
    """A selector whose model is replaced by a drawn choice among the candidates.

    It keeps the team's ``selector_func``, ``candidate_func`` and
    ``allow_repeated_speaker`` rules; a rule that leaves nobody to select raises
    [`NobodyToPickError`][flowlib.testing.NobodyToPickError].
    """

    def __init__(
        self,
        name: str,
        names: Sequence[str],
        draw: Draw[Any],
        *,
        selector_func: Callable[..., Any] | None,
        candidate_func: Callable[..., Any] | None,
        allow_repeated: bool,
        record: Callable[[Turn], None],
    ) -> None:
        super().__init__(name)
        self._names = list(names)
        self._draw = draw
        self._selector_func = selector_func
        self._candidate_func = candidate_func
        self._allow_repeated = allow_repeated
        self._record = record
        self._thread: list[BaseAgentEvent | BaseChatMessage] = []
        self._previous: str | None = None

    async def route(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Routing:
        """Select the next speaker as the real selector would, the model drawn."""
        self._thread.extend(messages)
        thread = list(self._thread)
        speaker: str | None = None
        if self._selector_func is not None:
            chosen = await _call(self._selector_func, thread)
            if chosen is not None:
                if chosen not in self._names:
                    raise NobodyToPickError(
                        self.name, f"selector_func returned {chosen!r}, not a participant"
                    )
                speaker = chosen
        if speaker is None:
            candidates = await self._candidates(thread)
            speaker = candidates[0] if len(candidates) == 1 else None
            if speaker is None:
                speaker = self._draw(st.sampled_from(candidates))
        self._previous = speaker
        self._record(Turn(self.name, f"selected {speaker}"))
        return Routing(targets=[speaker])

    async def _candidates(self, thread: Sequence[Any]) -> list[str]:
        if self._candidate_func is None:
            if self._previous is None or self._allow_repeated:
                return list(self._names)
            return [n for n in self._names if n != self._previous]
        names = await _call(self._candidate_func, thread)
        if not names or isinstance(names, str):
            raise NobodyToPickError(self.name, f"candidate_func returned {names!r}")
        unknown = [n for n in names if n not in self._names]
        if unknown:
            raise NobodyToPickError(
                self.name, f"candidate_func returned {unknown!r}, not participants"
            )
        return list(dict.fromkeys(names))
