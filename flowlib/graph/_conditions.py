"""Serialisable edge conditions.

An edge condition decides, from the source node's final chat message, whether the edge
fires. Besides ``None`` (always), a string (substring of ``to_model_text()``) and a plain
callable, a condition can be one of the small objects here: they are plain data, so a
graph that uses them dumps to JSON and loads back whole, and the renderer can label
them. New kinds register themselves by subclassing [`EdgeCondition`][flowlib.graph.EdgeCondition]
with a unique ``kind``.
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr

from ..errors import ArgumentTypeError, ConditionSerializationError, InvalidConditionError
from ..messages import BaseChatMessage, HandoffMessage

__all__ = [
    "AllOf",
    "AnyOf",
    "CallableCondition",
    "Contains",
    "EdgeCondition",
    "HandoffTo",
    "IsHandoff",
    "Not",
    "Regex",
    "check_condition",
    "condition_from_data",
    "describe_condition",
]


class EdgeCondition(BaseModel):
    """Base class of serialisable edge conditions. Subclasses set ``kind`` and ``check``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    registry: ClassVar[dict[str, type[EdgeCondition]]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        field = cls.model_fields.get("kind")
        default = field.default if field is not None else None
        if isinstance(default, str):
            EdgeCondition.registry[default] = cls

    def check(self, message: BaseChatMessage) -> bool:
        """Return whether the edge fires for ``message``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement check()")

    def __call__(self, message: BaseChatMessage) -> bool:
        return self.check(message)

    def label(self) -> str:
        """A short human-readable label, used when drawing the edge."""
        return self.kind


class Contains(EdgeCondition):
    """Fires when ``text`` is a substring of the message's ``to_model_text()``."""

    kind: Literal["contains"] = "contains"
    text: str

    def check(self, message: BaseChatMessage) -> bool:
        return self.text in message.to_model_text()

    def label(self) -> str:
        return repr(self.text)


class Regex(EdgeCondition):
    """Fires when ``pattern`` matches anywhere in the message's ``to_model_text()``.

    The pattern runs on RE2 (``google-re2``), whose matching time is linear in the text
    (issue 21.2): a pattern such as ``^(a+)+$`` that makes Python's ``re`` backtrack for
    seconds on 25 ``a``s answers in microseconds. RE2 takes Python's syntax except the
    features that need backtracking (backreferences such as ``\\1``, lookahead and
    lookbehind): a pattern using them is an ``InvalidConditionError`` when the graph is
    built; route on such a pattern with a callable condition in your own code. As in
    RE2, ``$`` matches only at the very end of the text, not before a final newline.
    """

    kind: Literal["regex"] = "regex"
    pattern: str
    ignore_case: bool = False
    # A private attribute, not a cached_property: an extra key in the instance dict
    # made pydantic dump the condition as a bare EdgeCondition, losing the pattern.
    _regex: Any = PrivateAttr(default=None)

    def compiled(self) -> Any:
        """The compiled RE2 pattern (compiled once); it has ``search(text)``.

        Raises:
            re.error: If the pattern does not compile, or needs backtracking (build
                checks it first).
        """
        if self._regex is None:
            self._regex = _compile_linear(self.pattern, self.ignore_case)
        return self._regex

    def check(self, message: BaseChatMessage) -> bool:
        return self.compiled().search(message.to_model_text()) is not None

    def label(self) -> str:
        return f"/{self.pattern}/" + ("i" if self.ignore_case else "")


def _compile_linear(pattern: str, ignore_case: bool) -> Any:
    """``pattern`` compiled by RE2, or ``re.error`` saying why it cannot be."""
    import re2  # type: ignore[import-untyped,unused-ignore]

    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern to stderr
    options.case_sensitive = not ignore_case
    try:
        return re2.compile(pattern, options)
    except re2.error as error:
        detail = error.args[0] if error.args else error
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        try:
            with warnings.catch_warnings():  # only asking whether `re` would take it
                warnings.simplefilter("ignore")
                re.compile(pattern)
        except re.error:
            raise re.error(str(detail)) from None
        raise re.error(
            f"it needs backtracking ({detail}), which can take time exponential in the "
            "message's length; backreferences, lookahead and lookbehind are not supported "
            "(use a callable condition in code for them)"
        ) from None


class HandoffTo(EdgeCondition):
    """Fires when the message is a ``HandoffMessage`` whose target is ``target``."""

    kind: Literal["handoff_to"] = "handoff_to"
    target: str

    def check(self, message: BaseChatMessage) -> bool:
        return isinstance(message, HandoffMessage) and message.target == self.target

    def label(self) -> str:
        return f"handoff to {self.target}"


class IsHandoff(EdgeCondition):
    """Fires when the message is a ``HandoffMessage`` (to anyone)."""

    kind: Literal["is_handoff"] = "is_handoff"

    def check(self, message: BaseChatMessage) -> bool:
        return isinstance(message, HandoffMessage)

    def label(self) -> str:
        return "handoff"


class Not(EdgeCondition):
    """Fires when ``condition`` does not."""

    kind: Literal["not"] = "not"
    condition: ConditionData

    def check(self, message: BaseChatMessage) -> bool:
        return not as_condition(self.condition).check(message)

    def label(self) -> str:
        return "not " + as_condition(self.condition).label()


class _Combination(EdgeCondition):
    """``conditions`` combined: how they fire together and the word their labels are
    joined by come from the subclass's ``kind``."""

    conditions: list[ConditionData]
    _combine: ClassVar[dict[str, tuple[Callable[[Iterable[bool]], bool], str]]] = {
        "any_of": (any, "or"),
        "all_of": (all, "and"),
    }

    def check(self, message: BaseChatMessage) -> bool:
        fires, _ = self._combine[self.kind]
        return fires(as_condition(c).check(message) for c in self.conditions)

    def label(self) -> str:
        _, word = self._combine[self.kind]
        return f" {word} ".join(as_condition(c).label() for c in self.conditions)


class AnyOf(_Combination):
    """Fires when at least one of ``conditions`` fires."""

    kind: Literal["any_of"] = "any_of"


class AllOf(_Combination):
    """Fires when every one of ``conditions`` fires."""

    kind: Literal["all_of"] = "all_of"


class CallableCondition(EdgeCondition):
    """Placeholder a dump writes for a callable condition, which JSON cannot hold.

    Loading it back needs the callable: pass ``conditions={name: func}`` to
    [`DiGraph.load`][flowlib.graph.DiGraph.load]. Checking a placeholder raises, so it never
    silently passes.
    """

    kind: Literal["callable"] = "callable"
    name: str
    serializable: Literal[False] = False

    def check(self, message: BaseChatMessage) -> bool:
        raise ConditionSerializationError(
            f"Condition `{self.name}` is a callable that was not restored when the graph "
            f"was loaded; pass `conditions={{'{self.name}': func}}` to `DiGraph.load()`.",
        )

    def label(self) -> str:
        return self.name


# A nested condition inside Not/AnyOf/AllOf: either a condition object or a bare
# string (substring test), so JSON stays short.
ConditionData = Any


def as_condition(data: Any) -> EdgeCondition:
    """Turn a nested condition (object, substring or dict) into an
    [`EdgeCondition`][flowlib.graph.EdgeCondition]."""
    if isinstance(data, EdgeCondition):
        return data
    if isinstance(data, str):
        return Contains(text=data)
    if isinstance(data, Mapping):
        return condition_from_data(data)
    raise ArgumentTypeError(
        f"A nested edge condition must be a condition object or a string, "
        f"not {type(data).__name__}.",
        argument="condition",
    )


def condition_from_data(
    data: Mapping[str, Any],
    *,
    callables: Mapping[str, Callable[[BaseChatMessage], bool]] | None = None,
) -> EdgeCondition:
    """Rebuild a condition object from its dumped form.

    Raises:
        ConditionSerializationError: If ``data`` names an unknown kind.
    """
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in EdgeCondition.registry:
        known = ", ".join(sorted(EdgeCondition.registry))
        raise ConditionSerializationError(
            f"Unknown edge condition kind `{kind}`; known kinds are {known}. Register a new "
            "kind by subclassing flowlib.graph.EdgeCondition before loading."
        )
    return EdgeCondition.registry[kind].model_validate(dict(data))


def check_condition(condition: object, *, source: str, target: str) -> None:
    """Reject, at build time, a condition that could never work on edge ``source -> target``.

    A condition is ``None``, a string, an `EdgeCondition` or a plain (sync)
    callable on the message. Conditions are checked synchronously once per completion,
    so an ``async def`` callable is rejected: its coroutine would always count as true.
    Every `Regex`, also inside ``Not``/``AnyOf``/``AllOf``, must compile.

    Raises:
        InvalidConditionError: An ``async`` callable or a regex that does not compile
            (also a ``ValueError``); the message names the edge.
        ArgumentTypeError: A value that is no condition at all (also a ``TypeError``).
    """
    if condition is None or isinstance(condition, str):
        return
    edge = f"`{source} -> {target}`"
    if isinstance(condition, EdgeCondition):
        pending: list[Any] = [condition]
        while pending:
            item = pending.pop()
            if isinstance(item, Regex):
                try:
                    item.compiled()
                except re.error as error:
                    raise InvalidConditionError(
                        f"Edge {edge}: the regex condition {item.pattern!r} does not compile "
                        f"({error}); fix the pattern (use re.escape() for literal text).",
                        edges=[(source, target)],
                    ) from None
            elif isinstance(item, Not):
                pending.append(as_condition(item.condition))
            elif isinstance(item, (AnyOf, AllOf)):
                pending.extend(as_condition(c) for c in item.conditions)
        return
    if not callable(condition):
        raise ArgumentTypeError(
            f"Edge {edge}: `condition` must be None, a string, a condition object "
            f"(flowlib.graph.Contains, Regex, ...) or a function of the message, not "
            f"{type(condition).__name__}.",
            argument="condition",
        )
    # An instance whose class defines ``async def __call__`` is async too.
    call = inspect.getattr_static(type(condition), "__call__", None)
    if any(
        inspect.iscoroutinefunction(f) or inspect.isasyncgenfunction(f) for f in (condition, call)
    ):
        name = getattr(condition, "__name__", type(condition).__name__)
        raise InvalidConditionError(
            f"Edge {edge}: the condition `{name}` is async, but edge conditions are checked "
            "synchronously (its coroutine would always count as true). Use a plain `def` "
            "that returns a bool; do async work in the source node instead.",
            edges=[(source, target)],
        )


def describe_condition(condition: Any) -> str:
    """A short label for any condition form: None, str, object or callable."""
    if condition is None:
        return ""
    if isinstance(condition, str):
        return repr(condition)
    if isinstance(condition, EdgeCondition):
        return condition.label()
    name = getattr(condition, "__name__", None) or type(condition).__name__
    return "<lambda>" if name == "<lambda>" else str(name)


for _model in (Not, _Combination, AnyOf, AllOf):
    _model.model_rebuild()
