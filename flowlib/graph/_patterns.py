"""Team patterns: what a pattern's name on a graph means to the validator and the drawing.

A team's graph carries its pattern's name ([`DiGraph.pattern`][flowlib.graph.DiGraph]);
the [`GraphPattern`][flowlib.graph.GraphPattern] registered under that name says what the
shape allows (a loop the team's bound ends, a run that may start at any node, nodes that
end the run when no edge matches) and how its drawing is titled. The validator and the
renderer read these traits, never the name, so a team of your own declares its pattern
once (``class MyTeam(BaseGroupChat, pattern=GraphPattern(...))``) and is checked and drawn
like the built-in ones.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass

from ..errors import InvalidArgumentError

__all__ = ["GraphPattern", "pattern_of", "register_pattern"]


@dataclass(frozen=True)
class GraphPattern:
    """The traits of a team pattern: what its graphs may do, and how they are drawn.

    Attributes:
        name: The name written into the team's graph (``DiGraph.pattern``).
        title: The drawing's title line, followed by ``", bounded by <the team's bound>"``
            (e.g. ``"round-robin ring"``); None: ``"<name> pattern"``.
        note: A second title line saying how the next node is chosen.
        loops_without_exit: The pattern's loops have no conditional edge: the team's
            termination condition or ``max_turns`` ends them. Such cycles are accepted,
            and a team with neither bound may be built (to draw or dump it) but is refused
            when it runs (``UnboundedLoopError``).
        start_anywhere: A new task may start at any node (its policy routes it), so nodes
            no edge reaches from the entry are accepted.
        ends_on_no_match: A node whose edges are all conditional ends the run on purpose
            when none matches (its policy explains why), so ``flowlib validate`` does not
            warn that it lacks a fallback edge.

    Examples:
        >>> debate = GraphPattern("debate", title="debate", note="the judge ends it")
        >>> debate.title_lines("max_turns=9")
        ['debate, bounded by max_turns=9', 'the judge ends it']
    """

    name: str
    title: str | None = None
    note: str | None = None
    loops_without_exit: bool = False
    start_anywhere: bool = False
    ends_on_no_match: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidArgumentError(
                f"A GraphPattern needs a non-empty name, not {self.name!r}.", argument="name"
            )

    def title_lines(self, bound: str) -> list[str]:
        """The lines the drawing's title gets for this pattern, ``bound`` being what
        ends the team's runs."""
        if self.title is None:
            return [f"{self.name} pattern"]
        lines = [f"{self.title}, bounded by {bound}"]
        if self.note:
            lines.append(self.note)
        return lines


_lock = threading.Lock()
_patterns: dict[str, GraphPattern] = {}
_builtins_imported = False
# The built-in patterns are declared by the built-in teams (the same path as yours); a
# graph naming one before flowlib.teams was imported (a hand-built or loaded graph)
# imports it once, by name, as the component registry does.
_BUILTIN_TEAMS = "flowlib.teams"


def register_pattern(pattern: GraphPattern) -> GraphPattern:
    """Make ``pattern``'s traits apply to every graph whose ``pattern`` is its name.

    Registering a name again replaces its traits (a module imported twice, a notebook
    cell run again). Teams call it through their class keyword
    ``class MyTeam(BaseGroupChat, pattern=...)``.

    Raises:
        ArgumentTypeError: ``pattern`` is not a ``GraphPattern``.
    """
    if not isinstance(pattern, GraphPattern):
        from ..errors import ArgumentTypeError

        raise ArgumentTypeError(
            f"register_pattern() takes a GraphPattern, not {type(pattern).__name__}.",
            argument="pattern",
        )
    with _lock:
        _patterns[pattern.name] = pattern
    return pattern


def pattern_of(name: str | None) -> GraphPattern | None:
    """The pattern registered under ``name`` (a graph's ``pattern``), or None."""
    global _builtins_imported
    if name is None:
        return None
    found = _patterns.get(name)
    if found is None and not _builtins_imported:
        _builtins_imported = True
        importlib.import_module(_BUILTIN_TEAMS)
        found = _patterns.get(name)
    return found
