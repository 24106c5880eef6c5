"""Fake agents for tests: scripted replies, an echo, and gated turns that expose concurrency.

None of them calls a model. Each one records what it saw on every turn, so a test can
check the broadcast rules, and keeps its position in its script as state, so
``save_state``/``load_state`` resume tests work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..agents import BaseChatAgent
from ..base import CancellationToken, Response
from ..base.internal import check_state_argument
from ..errors import FlowlibError, InvalidTypeError, InvalidValueError, StateError
from ..messages import BaseChatMessage, TextMessage

__all__ = [
    "EchoAgent",
    "GatedAgent",
    "ScriptExhaustedError",
    "ScriptFunction",
    "ScriptedAgent",
    "TurnEvent",
    "TurnRecorder",
]

ScriptFunction = Callable[[int, Sequence[BaseChatMessage]], str]
"""``(turn_index, new_messages) -> reply text``; ``turn_index`` counts from 0."""

_STATE_TYPE = "ScriptedAgentState"


class ScriptExhaustedError(FlowlibError, RuntimeError):
    """A [`ScriptedAgent`][flowlib.testing.ScriptedAgent] was asked for more turns than it was
    scripted for.

    A team run wraps it in [`NodeExecutionError`][flowlib.errors.NodeExecutionError] (its
    ``__cause__``).
    """


@dataclass(frozen=True)
class TurnEvent:
    """One entry of a [`TurnRecorder`][flowlib.testing.TurnRecorder]: an agent's turn started, ended
    or was cancelled.

    Attributes:
        kind: ``"start"``, ``"end"`` or ``"cancel"``.
        agent: The agent's name.
        turn: The agent's turn index (from 0).
    """

    kind: Literal["start", "end", "cancel"]
    agent: str
    turn: int


class TurnRecorder:
    """A shared log of turn starts and ends, to observe concurrency by events, not by time.

    Pass one recorder to several fake agents (``recorder=``); afterwards ask which turns
    overlapped, in what order agents started, and how many ran at once.

    Examples:
        >>> recorder = TurnRecorder()
        >>> recorder.start("a", 0); recorder.start("b", 0); recorder.end("a", 0)
        >>> recorder.overlapped("a", "b"), recorder.max_concurrent, recorder.running
        (True, 2, ['b'])
    """

    def __init__(self) -> None:
        self.events: list[TurnEvent] = []
        self.max_concurrent = 0
        self._running: dict[str, int] = {}

    def start(self, agent: str, turn: int) -> None:
        """Record that ``agent`` started turn ``turn``."""
        self.events.append(TurnEvent("start", agent, turn))
        self._running[agent] = self._running.get(agent, 0) + 1
        self.max_concurrent = max(self.max_concurrent, sum(self._running.values()))

    def end(self, agent: str, turn: int, *, cancelled: bool = False) -> None:
        """Record that ``agent`` finished (or was cancelled in) turn ``turn``."""
        self.events.append(TurnEvent("cancel" if cancelled else "end", agent, turn))
        left = self._running.get(agent, 0) - 1
        if left > 0:
            self._running[agent] = left
        else:
            self._running.pop(agent, None)

    @property
    def running(self) -> list[str]:
        """The agents in a turn right now, in the order they started."""
        return list(self._running)

    @property
    def starts(self) -> list[str]:
        """Agent names in the order their turns started."""
        return [event.agent for event in self.events if event.kind == "start"]

    @property
    def ends(self) -> list[str]:
        """Agent names in the order their turns finished (cancelled turns excluded)."""
        return [event.agent for event in self.events if event.kind == "end"]

    def overlapped(self, first: str, second: str) -> bool:
        """Whether a turn of ``first`` and a turn of ``second`` were running at once."""
        running: dict[str, int] = {}
        for event in self.events:
            if event.kind == "start":
                other = second if event.agent == first else first
                if event.agent in (first, second) and running.get(other, 0) > 0:
                    return True
                running[event.agent] = running.get(event.agent, 0) + 1
            else:
                running[event.agent] = running.get(event.agent, 0) - 1
        return False


class ScriptedAgent(BaseChatAgent):
    """An agent that answers from a script: the next string of ``outputs`` on every turn.

    Args:
        name: The agent's name (a Python identifier).
        outputs: The reply texts, one per turn; or a function
            ``(turn_index, new_messages) -> str`` that computes each reply.
        then: The reply for every turn after the scripted ones. ``None`` (the default)
            makes a turn past the end of the script raise
            [`ScriptExhaustedError`][flowlib.testing.ScriptExhaustedError], so a test notices a node
            that runs more often than expected.
        delay: Seconds to ``asyncio.sleep`` before replying (0: reply without awaiting).
        yields: How many times a turn gives control back to the event loop
            (``asyncio.sleep(0)``) before replying: one count for every turn, or one per
            turn (0 past the end). Varies the order in which concurrent turns finish,
            deterministically and without wall-clock time.
        recorder: A shared [`TurnRecorder`][flowlib.testing.TurnRecorder] to log turn starts and
            ends in.
        description: The agent's description.

    Attributes:
        seen: The new messages the agent was given, one list per completed turn.
        replies: The texts it replied, one per completed turn.
        resets: How many times ``on_reset`` was called.

    Examples:
        >>> import asyncio
        >>> agent = ScriptedAgent("writer", ["draft", "final"])
        >>> asyncio.run(agent.run(task="go")).messages[-1].to_text()
        'draft'
        >>> agent.turns, [[m.to_text() for m in turn] for turn in agent.seen]
        (1, [['go']])
    """

    def __init__(
        self,
        name: str,
        outputs: Sequence[str] | ScriptFunction,
        *,
        then: str | None = None,
        delay: float = 0.0,
        yields: int | Sequence[int] = 0,
        recorder: TurnRecorder | None = None,
        description: str = "A scripted test agent.",
    ) -> None:
        super().__init__(name, description)
        if isinstance(outputs, str):
            raise InvalidTypeError(
                f"ScriptedAgent `{name}` got the string {outputs!r} as outputs; pass a list "
                f"of replies, e.g. [{outputs!r}]."
            )
        if delay < 0:
            raise InvalidValueError(f"delay must be >= 0 seconds, not {delay!r}.")
        counts = (yields,) if isinstance(yields, int) else tuple(yields)
        if any(count < 0 for count in counts):
            raise InvalidValueError(f"yields must be counts >= 0, not {yields!r}.")
        self._script: tuple[str, ...] | ScriptFunction = (
            outputs if callable(outputs) else tuple(outputs)
        )
        self._then = then
        self._delay = delay
        self._yields: int | tuple[int, ...] = yields if isinstance(yields, int) else counts
        self._recorder = recorder
        self._position = 0
        self.seen: list[list[BaseChatMessage]] = []
        self.replies: list[str] = []
        self.resets = 0

    @property
    def turns(self) -> int:
        """How many turns the agent has completed: its position in the script."""
        return self._position

    @property
    def script(self) -> tuple[str, ...] | ScriptFunction:
        """The scripted replies (or the function computing them)."""
        return self._script

    def reply_for(self, turn: int, messages: Sequence[BaseChatMessage]) -> str:
        """The reply of turn ``turn`` (from 0), as the script gives it.

        Raises:
            ScriptExhaustedError: If the script is a list that has no reply for ``turn``
                and no ``then`` reply was given.
        """
        script = self._script
        if not isinstance(script, tuple):
            return script(turn, messages)
        if turn < len(script):
            return script[turn]
        if self._then is not None:
            return self._then
        raise ScriptExhaustedError(
            f"ScriptedAgent `{self.name}` was scripted with {len(script)} output(s) and was "
            f"asked for turn {turn + 1}. Script more outputs, pass `then=` for a reply after "
            "the script ends, or check why the node ran more often than expected."
        )

    async def _before_reply(self, turn: int) -> None:
        """Awaited before replying; subclasses add gates. Cancellation here voids the turn."""
        yields = self._yields
        count = yields if isinstance(yields, int) else (yields[turn] if turn < len(yields) else 0)
        for _ in range(count):
            await asyncio.sleep(0)
        if self._delay > 0:
            await asyncio.sleep(self._delay)

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        """Reply with the next scripted text.

        Raises:
            ScriptExhaustedError: If the script has run out (see ``then``).
        """
        turn = self._position
        text = self.reply_for(turn, messages)
        recorder = self._recorder
        if recorder is not None:
            recorder.start(self.name, turn)
        try:
            await self._before_reply(turn)
        except BaseException:
            if recorder is not None:
                recorder.end(self.name, turn, cancelled=True)
            raise
        # Only a completed turn moves the script on, so a cancelled turn that the team
        # re-runs gets the same reply.
        self._position = turn + 1
        self.seen.append(list(messages))
        self.replies.append(text)
        if recorder is not None:
            recorder.end(self.name, turn)
        return Response(chat_message=TextMessage(content=text, source=self.name))

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        """Go back to the start of the script and forget what was seen."""
        self._position = 0
        self.seen.clear()
        self.replies.clear()
        self.resets += 1

    async def save_state(self) -> Mapping[str, Any]:
        """The agent's position in its script."""
        return {"type": _STATE_TYPE, "version": 1, "position": self._position}

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore the position [`save_state`][flowlib.testing.ScriptedAgent.save_state] returned.

        Raises:
            StateError: If ``state`` is not a scripted agent's state.
        """
        check_state_argument(state, f"Agent `{self.name}`")
        position = state.get("position")
        if state.get("type") != _STATE_TYPE or not isinstance(position, int) or position < 0:
            raise StateError(
                f"ScriptedAgent `{self.name}` cannot load {dict(state)!r}; pass the dict its "
                "save_state() returned."
            )
        self._position = position


def _echo(turn: int, messages: Sequence[BaseChatMessage]) -> str:
    del turn
    return messages[-1].to_text() if messages else ""


class EchoAgent(ScriptedAgent):
    """An agent that repeats the text of the last message it was given ("" if none).

    Args:
        name: The agent's name.
        delay: Seconds to wait before replying.
        yields: Event-loop yields before replying (see
            [`ScriptedAgent`][flowlib.testing.ScriptedAgent]).
        recorder: A shared [`TurnRecorder`][flowlib.testing.TurnRecorder].
        description: The agent's description.

    Examples:
        >>> import asyncio
        >>> asyncio.run(EchoAgent("parrot").run(task="hello")).messages[-1].to_text()
        'hello'
    """

    def __init__(
        self,
        name: str,
        *,
        delay: float = 0.0,
        yields: int | Sequence[int] = 0,
        recorder: TurnRecorder | None = None,
        description: str = "Repeats the last message.",
    ) -> None:
        super().__init__(
            name, _echo, delay=delay, yields=yields, recorder=recorder, description=description
        )


class GatedAgent(ScriptedAgent):
    """A scripted agent whose turns wait at a gate until the test lets them through.

    Each turn sets ``started``, then waits for one [`release`][flowlib.testing.GatedAgent.release]
    (or for [`open`][flowlib.testing.GatedAgent.open]), then replies and sets ``finished``. Tests
    use it to prove by events, not by timing, that nodes run concurrently or that one waits for
    another.

    Args:
        name: The agent's name.
        outputs: As for [`ScriptedAgent`][flowlib.testing.ScriptedAgent].
        then: As for [`ScriptedAgent`][flowlib.testing.ScriptedAgent].
        recorder: A shared [`TurnRecorder`][flowlib.testing.TurnRecorder].
        description: The agent's description.

    Examples:
        >>> import asyncio
        >>> async def demo():
        ...     agent = GatedAgent("slow", ["done"])
        ...     turn = asyncio.ensure_future(agent.run(task="go"))
        ...     await agent.started.wait()
        ...     assert agent.waiting and not turn.done()
        ...     agent.release()
        ...     return (await turn).messages[-1].to_text()
        >>> asyncio.run(demo())
        'done'
    """

    def __init__(
        self,
        name: str,
        outputs: Sequence[str] | ScriptFunction,
        *,
        then: str | None = None,
        recorder: TurnRecorder | None = None,
        description: str = "A gated test agent.",
    ) -> None:
        super().__init__(name, outputs, then=then, recorder=recorder, description=description)
        self.started = asyncio.Event()
        self.finished = asyncio.Event()
        self._permits = 0
        self._opened = False
        self._waiting = 0
        self._changed = asyncio.Event()

    @property
    def waiting(self) -> bool:
        """Whether a turn is waiting at the gate right now."""
        return self._waiting > 0

    def release(self, turns: int = 1) -> None:
        """Let ``turns`` more turns pass the gate (now or when they arrive)."""
        if turns < 1:
            raise InvalidValueError(f"release() needs turns >= 1, not {turns!r}.")
        self._permits += turns
        self._changed.set()

    def open(self) -> None:
        """Let every turn pass from now on."""
        self._opened = True
        self._changed.set()

    async def _before_reply(self, turn: int) -> None:
        self.started.set()
        self._waiting += 1
        try:
            while not self._opened and self._permits == 0:
                self._changed.clear()
                await self._changed.wait()
            if not self._opened:
                self._permits -= 1
        finally:
            self._waiting -= 1
        await super()._before_reply(turn)

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        """Wait at the gate, then reply with the next scripted text."""
        response = await super().on_messages(messages, cancellation_token)
        self.finished.set()
        return response
