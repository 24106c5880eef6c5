"""SelectorGroupChat: a router at the hub of the graph picks the next speaker.

The team compiles to a hub: a router node (the selector) with an edge to every
participant (condition [`Selected`][flowlib.graph.Selected]) and an unconditional edge from
every participant back to it. Each router turn sees the messages published since its
previous turn and decides one target: ``selector_func`` if it answers, else the only
candidate, else the selector model (retried with feedback, then a fallback).
"""

from __future__ import annotations

import inspect
import json
import logging
import re
import string
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field
from typing_extensions import Unpack

from ..base import CancellationToken, ChatAgent, Team
from ..base.internal import parsed_state
from ..checkpoint import (
    Journal,
    StateChange,
    appended,
    json_state,
    patch_of,
    state_change,
)
from ..component import ComponentModel, dump_field, skip_field
from ..errors import (
    ContractError,
    InvalidValueError,
    StateError,
)
from ..graph import GraphPattern, Router, Routing
from ..graph.internal import hub_graph
from ..messages import (
    BaseAgentEvent,
    BaseChatMessage,
    MessageFactory,
    ModelClientStreamingChunkEvent,
    SelectorEvent,
)
from ..model_context import ChatCompletionContext, UnboundedChatCompletionContext
from ..models import (
    AssistantMessage,
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelFamily,
    SystemMessage,
    UserMessage,
)
from ._arguments import check_team_arguments
from ._config import AUTOGEN_TEAMS, GroupChatConfig
from ._group_chat import BaseGroupChat
from ._options import TeamOptions
from ._policy import TeamPolicy
from ._setup import check_router_name

__all__ = [
    "DEFAULT_SELECTOR_PROMPT",
    "CandidateFunc",
    "SelectorFunc",
    "SelectorGroupChat",
    "SelectorGroupChatConfig",
    "SelectorRouter",
]

logger = logging.getLogger(__name__)

DEFAULT_SELECTOR_PROMPT = (
    "You are in a role play game. The following roles are available:\n{roles}.\n"
    "Read the following conversation. Then select the next role from {participants} to "
    "play. Only return the role.\n\n{history}\n\nRead the above conversation. Then select "
    "the next role from {participants} to play. Only return the role.\n"
)
"""The documented default ``selector_prompt``."""

Thread = Sequence[BaseAgentEvent | BaseChatMessage]
SelectorFunc = Callable[[Thread], str | None] | Callable[[Thread], Awaitable[str | None]]
"""``(thread) -> name | None``, sync or async: the next speaker, or None to ask the model."""
CandidateFunc = Callable[[Thread], list[str]] | Callable[[Thread], Awaitable[list[str]]]
"""``(thread) -> names``, sync or async: who the model may choose from."""

_STATE_VERSION = 1


class _SelectorState(BaseModel):
    type: Literal["SelectorRouterState"] = "SelectorRouterState"
    version: int = _STATE_VERSION
    message_thread: list[dict[str, Any]] = Field(default_factory=list)
    previous_speaker: str | None = None
    model_context: dict[str, Any] = Field(default_factory=dict)
    unfinished: list[str] = Field(default_factory=list)


def check_selector_prompt(prompt: str) -> None:
    """Check that ``prompt`` formats with exactly the documented fields.

    Raises:
        ValueError: If the template names another field or is malformed.
    """
    try:
        _check_format_specs(prompt)
        prompt.format(roles="", participants="", history="")
    except (KeyError, IndexError, ValueError) as exc:
        raise InvalidValueError(
            f"selector_prompt is not a valid template ({type(exc).__name__}: {exc}). It may "
            "use only the fields {roles}, {participants} and {history}; write other braces "
            "doubled ({{ and }})."
        ) from exc


_MAX_FORMAT_NUMBER = 10_000


def _check_format_specs(prompt: str) -> None:
    """Refuse a format spec that would make formatting itself costly, before formatting:
    ``{roles:>400000000}`` pads to 400 million characters (issue 21.7). A spec may not
    hold a nested field or a width or precision over 10,000."""
    for _, field, spec, _ in string.Formatter().parse(prompt):
        if field is None or not spec:
            continue
        if "{" in spec or "}" in spec:
            raise InvalidValueError(f"the field {{{field}}} has a nested field in its format spec")
        numbers = [int(number) for number in re.findall(r"\d+", spec)]
        if any(number > _MAX_FORMAT_NUMBER for number in numbers):
            raise InvalidValueError(
                f"the format spec of {{{field}}} (`{spec[:40]}`) asks for more than "
                f"{_MAX_FORMAT_NUMBER:,} characters"
            )


def format_names(names: Sequence[str]) -> str:
    """The ``{participants}`` rendering: ``["a", "b"]``, as the documents show it."""
    return json.dumps(list(names), ensure_ascii=False)


def format_roles(roles: Sequence[tuple[str, str]]) -> str:
    """One ``name: description`` line per role, inner whitespace collapsed."""
    return "\n".join(" ".join(f"{name}: {description}".split()) for name, description in roles)


def format_history(messages: Sequence[LLMMessage]) -> str:
    """``name: text`` per user/assistant message, separated by blank lines.

    System messages, tool calls and tool results are not part of the conversation the
    selector reads, so they are left out.
    """
    entries: list[str] = []
    for message in messages:
        if not isinstance(message, (UserMessage, AssistantMessage)):
            continue
        if isinstance(message.content, str):
            text = message.content
        elif isinstance(message, AssistantMessage):
            continue  # tool calls, not speech
        else:
            text = " ".join(p if isinstance(p, str) else "[image]" for p in message.content)
        entries.append(f"{message.source}: {text}".rstrip())
    return "\n\n".join(entries)


def _mention_pattern(name: str) -> re.Pattern[str]:
    # A name counts when it stands alone (not inside a longer word); models often write
    # underscores as spaces or escape them for Markdown, so those spellings count too.
    variants = dict.fromkeys((name, name.replace("_", " "), name.replace("_", "\\_")))
    alternatives = "|".join(re.escape(v) for v in sorted(variants, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)")


async def _call(func: Callable[[Thread], Any], thread: Thread) -> Any:
    result = func(thread)
    if inspect.isawaitable(result):
        result = await result
    return result


class SelectorRouter(Router):
    """The selector: the router node of a [`SelectorGroupChat`][flowlib.teams.SelectorGroupChat].

    It keeps the conversation (every chat message it is shown) and the previous speaker,
    and on each turn routes to exactly one participant. See
    [`SelectorGroupChat`][flowlib.teams.SelectorGroupChat] for the selection rules.

    Args:
        name: The node name.
        participants: ``(name, description)`` of each participant, in team order.
        model_client: The selector model.
        selector_prompt: The prompt template.
        allow_repeated_speaker: Whether the previous speaker is a candidate.
        max_selector_attempts: Model attempts before falling back.
        selector_func: Overrides the model when it returns a name.
        candidate_func: Chooses the candidates for the model.
        model_client_streaming: Stream the selector model's tokens as chunk events.
        model_context: Holds the history the prompt shows; unbounded by default.
        custom_message_types: Extra message classes, to load a saved thread.
        turn_timeout: Seconds each turn may take; past it the turn is cancelled and
            the run fails resumably (``run()`` re-runs the turn). A node's own
            ``timeout`` wins. See docs/graph-semantics.md.
    """

    def __init__(
        self,
        name: str,
        participants: Sequence[tuple[str, str]],
        model_client: ChatCompletionClient,
        *,
        selector_prompt: str = DEFAULT_SELECTOR_PROMPT,
        allow_repeated_speaker: bool = False,
        max_selector_attempts: int = 3,
        selector_func: SelectorFunc | None = None,
        candidate_func: CandidateFunc | None = None,
        model_client_streaming: bool = False,
        model_context: ChatCompletionContext | None = None,
        custom_message_types: Sequence[type[BaseAgentEvent | BaseChatMessage]] | None = None,
    ) -> None:
        super().__init__(name, "Selects the next speaker of the group chat.")
        check_selector_prompt(selector_prompt)
        if not isinstance(max_selector_attempts, int) or max_selector_attempts < 1:
            raise InvalidValueError(
                f"max_selector_attempts must be a positive integer, not {max_selector_attempts!r}."
            )
        self._names = [participant for participant, _ in participants]
        self._descriptions = dict(participants)
        self._patterns = {n: _mention_pattern(n) for n in self._names}
        self._model_client = model_client
        self._prompt = selector_prompt
        self._allow_repeated = allow_repeated_speaker
        self._max_attempts = max_selector_attempts
        self._selector_func = selector_func
        self._candidate_func = candidate_func
        self._streaming = model_client_streaming
        self._context = model_context or UnboundedChatCompletionContext()
        self._factory = MessageFactory()
        for message_type in custom_message_types or ():
            if not self._factory.is_registered(message_type):
                self._factory.register(message_type)
        self._thread: list[BaseAgentEvent | BaseChatMessage] = []
        self._journal = Journal()  # what save_state_since returned last
        self._previous: str | None = None
        # Ids of messages taken in a turn that has not finished: the executor re-delivers
        # them when it retries the turn, and they must not enter the history twice.
        self._unfinished: set[str] = set()

    @property
    def thread(self) -> list[BaseAgentEvent | BaseChatMessage]:
        """The conversation so far (a copy)."""
        return list(self._thread)

    @property
    def speakers(self) -> list[str]:
        """The names of the participants it selects from, in order (a copy)."""
        return list(self._names)

    @property
    def previous_speaker(self) -> str | None:
        """The participant selected last, or None before the first selection."""
        return self._previous

    @property
    def model_context(self) -> ChatCompletionContext:
        """The context the prompt's ``{history}`` is read from."""
        return self._context

    @property
    def model_client(self) -> ChatCompletionClient:
        """The model that selects speakers."""
        return self._model_client

    @property
    def selector_prompt(self) -> str:
        """The prompt template."""
        return self._prompt

    @property
    def allow_repeated_speaker(self) -> bool:
        """Whether the previous speaker may be selected again."""
        return self._allow_repeated

    @property
    def max_selector_attempts(self) -> int:
        """How often the model is asked before falling back."""
        return self._max_attempts

    @property
    def model_client_streaming(self) -> bool:
        """Whether the selection is streamed."""
        return self._streaming

    @property
    def selector_func(self) -> SelectorFunc | None:
        """The custom selector function, if any."""
        return self._selector_func

    @property
    def candidate_func(self) -> CandidateFunc | None:
        """The custom candidate filter, if any."""
        return self._candidate_func

    # --- one turn -----------------------------------------------------------------------

    async def route(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Routing:
        """Take the new messages and select the next speaker."""
        routing: Routing | None = None
        async for item in self.route_stream(messages, cancellation_token):
            if isinstance(item, Routing):
                routing = item
        assert routing is not None
        return routing

    async def route_stream(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Routing, None]:
        """Like [`route`][flowlib.graph.Router.route], streaming the selector model's chunks when
        enabled.

        Raises:
            ValueError: If ``selector_func`` returns an unknown name, or
                ``candidate_func`` returns no names or unknown ones.
        """
        await self._absorb(messages)
        speaker: str | None = None
        if self._selector_func is not None:
            chosen = await _call(self._selector_func, self.thread)
            if chosen is not None:
                speaker = self._checked_name(chosen, "selector_func")
        if speaker is None:
            candidates = await self._candidates()
            if len(candidates) == 1:
                speaker = candidates[0]
            else:
                async for item in self._ask_model(candidates, cancellation_token):
                    if isinstance(item, str):
                        speaker = item
                    else:
                        yield item
        assert speaker is not None
        self._previous = speaker
        self._unfinished.clear()
        yield Routing(targets=[speaker])

    async def _absorb(self, messages: Sequence[BaseChatMessage]) -> None:
        unfinished = self._unfinished
        for message in messages:
            if message.id in unfinished:
                continue
            unfinished.add(message.id)
            self._thread.append(message)
            await self._context.add_message(message.to_model_message())

    def _checked_name(self, name: object, what: str) -> str:
        if not isinstance(name, str) or name not in self._descriptions:
            raise InvalidValueError(
                f"{what} returned {name!r}, which is not a participant of this "
                f"SelectorGroupChat; return one of {format_names(self._names)}"
                + (" or None." if what == "selector_func" else ".")
            )
        return name

    async def _candidates(self) -> list[str]:
        if self._candidate_func is None:
            if self._previous is None or self._allow_repeated:
                return list(self._names)
            return [name for name in self._names if name != self._previous]
        names = await _call(self._candidate_func, self.thread)
        if not names or isinstance(names, str):
            raise InvalidValueError(
                f"candidate_func returned {names!r}; it must return a non-empty list of "
                f"participant names (from {format_names(self._names)})."
            )
        return list(dict.fromkeys(self._checked_name(n, "candidate_func") for n in names))

    async def _ask_model(
        self, candidates: list[str], cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | str, None]:
        """Yield chunk events, then the selected name (a ``str``)."""
        listed = format_names(candidates)
        prompt = self._prompt.format(
            roles=format_roles([(n, self._descriptions[n]) for n in candidates]),
            participants=listed,
            history=format_history(await self._context.get_messages()),
        )
        family = str(self._model_client.model_info.get("family", ModelFamily.UNKNOWN))
        request: list[LLMMessage] = [
            SystemMessage(content=prompt)
            if ModelFamily.is_openai(family)
            else UserMessage(content=prompt, source="user")
        ]
        repeats_barred = self._candidate_func is None and not self._allow_repeated
        for attempt in range(1, self._max_attempts + 1):
            result: CreateResult | None = None
            if self._streaming:
                async for chunk in self._model_client.create_stream(
                    request, cancellation_token=cancellation_token
                ):
                    if isinstance(chunk, CreateResult):
                        result = chunk
                    else:
                        yield ModelClientStreamingChunkEvent(content=chunk, source=self.name)
                if result is None:
                    raise ContractError(
                        "The selector model's stream ended without a final CreateResult."
                    )
                yield SelectorEvent(content=str(result.content), source=self.name)  # AutoGen's
            else:
                result = await self._model_client.create(
                    request, cancellation_token=cancellation_token
                )
            reply = result.content if isinstance(result.content, str) else ""
            request.append(AssistantMessage(content=reply, source=self.name))
            mentions = [n for n in self._names if self._patterns[n].search(reply)]
            if len(mentions) == 1 and mentions[0] in candidates:
                yield mentions[0]
                return
            if len(mentions) == 1 and repeats_barred and mentions[0] == self._previous:
                logger.warning(
                    "The selector model chose the previous speaker `%s` although "
                    "allow_repeated_speaker is False (attempt %d of %d).",
                    mentions[0],
                    attempt,
                    self._max_attempts,
                )
                feedback = (
                    f"Repeated speaker is not allowed, please select a different name from: "
                    f"{listed}."
                )
            elif len(mentions) == 1:
                feedback = f"{mentions[0]} cannot speak next. Please select one from: {listed}."
            elif mentions:
                feedback = (
                    f"Expected exactly one name to be mentioned. Please select only one from: "
                    f"{listed}."
                )
            else:
                feedback = f"No valid name was mentioned. Please select from: {listed}."
            logger.debug("Selector attempt %d failed on %r: %s", attempt, reply, feedback)
            request.append(UserMessage(content=feedback, source="user"))
        fallback = self._previous if self._previous is not None else candidates[0]
        logger.warning(
            "The selector model did not select a speaker in %d attempt(s); using %s `%s`.",
            self._max_attempts,
            "the previous speaker" if self._previous is not None else "the first candidate",
            fallback,
        )
        yield fallback

    # --- lifecycle ----------------------------------------------------------------------

    async def reset(self) -> None:
        """Forget the conversation, the previous speaker and the model context."""
        self._thread.clear()
        self._previous = None
        self._unfinished.clear()
        await self._context.clear()

    async def save_state(self) -> Mapping[str, Any]:
        """The conversation, previous speaker and model context (JSON-serialisable)."""
        return _SelectorState(
            message_thread=[message.dump() for message in self._thread],
            previous_speaker=self._previous,
            model_context=dict(await self._context.save_state()),
            unfinished=sorted(self._unfinished),
        ).model_dump(mode="json")

    async def save_state_since(self, base: Any) -> StateChange:
        """The state now and the patch from ``base``: when ``base`` is the state this
        returned last, only the messages and model-context entries added since are
        dumped (see [`IncrementalState`][flowlib.checkpoint.IncrementalState])."""
        thread = self._thread
        if not self._journal.fits(base, [thread]) or type(self).save_state is not (
            SelectorRouter.save_state
        ):
            return self._journal.whole(base, json_state(await self.save_state()), [thread])
        added = [message.dump() for message in thread[self._journal.start(0) :]]
        context = await state_change(self._context, base["model_context"])
        small = _SelectorState(
            previous_speaker=self._previous, unfinished=sorted(self._unfinished)
        ).model_dump(mode="json")
        state = {
            **small,
            "message_thread": [*base["message_thread"], *added],
            "model_context": context.state,
        }
        known = {"message_thread": appended(added), "model_context": context.patch}
        return self._journal.grown(base, state, patch_of(base, state, known), [thread])

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore [`save_state`][flowlib.graph.Router.save_state] output.

        Raises:
            StateError: If ``state`` is not a selector's state or names unknown speakers.
        """
        loaded = parsed_state(
            _SelectorState, state, f"Selector `{self.name}`", version=_STATE_VERSION
        )
        previous = loaded.previous_speaker
        if previous is not None and previous not in self._descriptions:
            raise StateError(
                f"Selector state names previous speaker `{previous}`, which is not a "
                "participant; load it into a team built with the same participants."
            )
        try:
            thread = [self._factory.create(data) for data in loaded.message_thread]
        except ValueError as exc:
            raise StateError(f"Selector `{self.name}` cannot rebuild its thread: {exc}") from exc
        await self._context.load_state(loaded.model_context)
        self._thread = thread
        self._previous = previous
        self._unfinished = set(loaded.unfinished)


class SelectorGroupChatConfig(GroupChatConfig):
    """The config of [`SelectorGroupChat`][flowlib.teams.SelectorGroupChat]; the prompt's
    default is the team's."""

    model_client: ComponentModel
    selector_prompt: str | None = None
    allow_repeated_speaker: bool = False
    max_selector_attempts: int = 3
    model_client_streaming: bool = False
    model_context: ComponentModel | None = None


SELECTOR = GraphPattern("selector", title="selector hub", note="the router picks each next speaker")
"""The selector pattern: a router hub that picks each next speaker."""


class SelectorPolicy(TeamPolicy):
    """SelectorGroupChat's policy: a new task is always answered by a fresh selection."""

    def __init__(self, router: str) -> None:
        self._router = router

    def route_task(self, task: Sequence[BaseChatMessage]) -> Sequence[str] | None:
        """The selector router."""
        return [self._router]


class SelectorGroupChat(
    BaseGroupChat,
    pattern=SELECTOR,
    provider="flowlib.teams.SelectorGroupChat",
    aliases=(AUTOGEN_TEAMS + "SelectorGroupChat", "SelectorGroupChat"),
):
    """A team where a model (or your function) picks the next speaker after each message.

    It compiles to a hub graph: the selector router ``"<team name>_selector"`` is the
    entry, with an edge to each participant (``Selected(target=...)``) and one back from
    each participant. Each chat message is broadcast to every participant; the selector's
    turns do not count toward ``max_turns``.

    Selection, on each selector turn:

    1. ``selector_func(thread)`` (sync or async), if given; a name selects that
       participant, ``None`` falls through to the model.
    2. Candidates: ``candidate_func(thread)`` (sync or async) if given (it overrides
       ``allow_repeated_speaker``), else every participant except the previous speaker
       unless ``allow_repeated_speaker``. A single candidate is selected without a model
       call.
    3. The model is asked with ``selector_prompt`` (``{roles}``: ``name: description``
       lines of the candidates, ``{participants}``: ``["a", "b"]``, ``{history}``:
       ``name: text`` entries separated by blank lines, from ``model_context``). The
       reply must mention exactly one candidate; otherwise feedback is added and the
       model asked again, up to ``max_selector_attempts`` times, then the previous
       speaker is used, or the first candidate if there is none.

    A new task always starts with a selection; ``run()`` with no task resumes where the
    run stopped (normally with a fresh selection).

    Args:
        participants: At least two agents or nested teams, with unique names.
        model_client: The selector model (it can be smaller than the agents' models).
        selector_prompt: The prompt template (see ``DEFAULT_SELECTOR_PROMPT``).
        allow_repeated_speaker: Whether the previous speaker may be selected again.
        max_selector_attempts: Model attempts before the fallback.
        selector_func: Chooses the next speaker, or returns None to ask the model.
        candidate_func: Chooses whom the model may select; empty or None is an error.
        model_client_streaming: Stream the selector model's tokens as chunk events.
        model_context: The context the selector's history is read from; it can be
            preloaded and is cleared by ``reset()``.
        **options: The [`TeamOptions`][flowlib.teams.TeamOptions] (``max_turns`` counts
            participant turns only); ``name`` defaults to ``"SelectorGroupChat"``,
            ``description`` to ``"A team of agents."``.

    Raises:
        ValueError: Fewer than two participants, duplicate names, a participant named
            like the selector, an invalid ``selector_prompt``, ``max_selector_attempts``
            below 1, or a ``runtime``.

    Examples:
        >>> import asyncio
        >>> from flowlib.models import ReplayChatCompletionClient
        >>> from flowlib.testing import ScriptedAgent
        >>> team = SelectorGroupChat(
        ...     [ScriptedAgent("writer", ["draft"]), ScriptedAgent("critic", ["ok"])],
        ...     ReplayChatCompletionClient(["writer"]),
        ...     max_turns=2,
        ... )
        >>> result = asyncio.run(team.run(task="Write a haiku."))
        >>> [m.source for m in result.messages]
        ['user', 'writer', 'critic']
    """

    DEFAULT_NAME = "SelectorGroupChat"
    component_config_schema = SelectorGroupChatConfig

    def __init__(
        self,
        participants: Sequence[ChatAgent | Team],
        model_client: ChatCompletionClient,
        *,
        selector_prompt: str = DEFAULT_SELECTOR_PROMPT,
        allow_repeated_speaker: bool = False,
        max_selector_attempts: int = 3,
        selector_func: SelectorFunc | None = None,
        candidate_func: CandidateFunc | None = None,
        model_client_streaming: bool = False,
        model_context: ChatCompletionContext | None = None,
        **options: Unpack[TeamOptions],
    ) -> None:
        check_team_arguments(
            "SelectorGroupChat", participants, minimum=2, model_client=model_client
        )
        router_name = f"{options.get('name') or self.DEFAULT_NAME}_selector"
        check_router_name(
            participants,
            router_name,
            role="selector",
            fix="rename the participant or give the team another `name=`.",
        )
        self._router = SelectorRouter(
            router_name,
            [(p.name, p.description) for p in participants],
            model_client,
            selector_prompt=selector_prompt,
            allow_repeated_speaker=allow_repeated_speaker,
            max_selector_attempts=max_selector_attempts,
            selector_func=selector_func,
            candidate_func=candidate_func,
            model_client_streaming=model_client_streaming,
            model_context=model_context,
            custom_message_types=options.get("custom_message_types"),
        )
        super().__init__(
            participants,
            hub_graph(router_name, participants, pattern=SELECTOR.name),
            routers=[self._router],
            policy=SelectorPolicy(router_name),
            **options,
        )

    def config_fields(self) -> dict[str, Any]:
        """The selector's model, prompt and options (its functions are code: left out)."""
        router = self._router
        for field_name, value in (
            ("selector_func", router.selector_func),
            ("candidate_func", router.candidate_func),
        ):
            if value is not None:
                skip_field(
                    field_name,
                    "it is a Python callable (documented as ignored by configs); the loaded "
                    "team selects speakers with its model.",
                )
        return {
            "model_client": dump_field(router.model_client, "model_client"),
            "selector_prompt": router.selector_prompt,
            "allow_repeated_speaker": router.allow_repeated_speaker,
            "max_selector_attempts": router.max_selector_attempts,
            "model_client_streaming": router.model_client_streaming,
            "model_context": dump_field(router.model_context, "model_context"),
        }

    @property
    def selector(self) -> SelectorRouter:
        """The selector router (its thread, previous speaker and model context)."""
        return self._router
