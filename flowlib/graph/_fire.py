"""The one edge-firing rule: which of a finished turn's out-edges fire.

The scheduler records turns with it, the renderer rebuilds a path from a
[`TaskResult`][flowlib.base.TaskResult] with it, the trace checker checks replies against
it, and [`DiGraphEdge.check_condition`][flowlib.graph.DiGraphEdge.check_condition] is it for
one edge. An edge fires when:

- it is not absorbed (an ``any`` join already taken while its source was in flight);
- for a router's turn: its target is one the router selected;
- otherwise: it has no condition, or its string condition is a substring of the final
  message's ``to_model_text()``, or its condition object or function returns true for
  the final message. A turn with no final message fires only unconditional edges.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ..messages import BaseChatMessage
from ._conditions import EdgeCondition
from ._ir import EdgeIR, GraphIR

__all__ = ["ALWAYS", "PREDICATE", "SUBSTRING", "EdgeRule", "edge_rule", "edge_rules", "fire_edges"]

ALWAYS, SUBSTRING, PREDICATE = 0, 1, 2

Predicate = Callable[[BaseChatMessage], bool]


@dataclass(slots=True)
class EdgeRule:
    """One edge reduced to what firing needs.

    Attributes:
        index: The edge's index in ``graph.iter_edges()`` order.
        source: The source node's index in ``graph.nodes`` order.
        target: The target node's index (-1: not a node of the graph).
        test: ``ALWAYS``, ``SUBSTRING`` or ``PREDICATE``.
        text: The substring (``SUBSTRING``).
        predicate: The condition (``PREDICATE``).
    """

    index: int
    source: int
    target: int
    test: int
    text: str
    predicate: Predicate | None


def edge_rule(edge: EdgeIR, *, index: int = 0, source: int = 0, target: int = 0) -> EdgeRule:
    """The [`EdgeRule`][flowlib.graph.EdgeRule] of ``edge`` (a
    [`DiGraphEdge`][flowlib.graph.DiGraphEdge])."""
    test, text, predicate = ALWAYS, "", None
    if edge.condition_function is not None:
        test, predicate = PREDICATE, edge.condition_function
    elif isinstance(edge.condition, str):
        test, text = SUBSTRING, edge.condition
    elif isinstance(edge.condition, EdgeCondition):
        test, predicate = PREDICATE, edge.condition.check
    return EdgeRule(index, source, target, test, text, predicate)


def edge_rules(graph: GraphIR) -> list[list[EdgeRule]]:
    """Every node's out-edges as rules, by node index (``graph.nodes`` order); no
    validation, so any graph can be drawn or checked."""
    index = {name: number for number, name in enumerate(graph.nodes)}
    rules: list[list[EdgeRule]] = [[] for _ in index]
    for position, (source, edge) in enumerate(graph.iter_edges()):
        rule = edge_rule(
            edge, index=position, source=index[source], target=index.get(edge.target, -1)
        )
        rules[rule.source].append(rule)
    return rules


_E = TypeVar("_E", bound=EdgeRule)


def _call(edge: EdgeRule, message: BaseChatMessage) -> bool:
    assert edge.predicate is not None
    return bool(edge.predicate(message))


def fire_edges(
    edges: Sequence[_E],
    final: BaseChatMessage | None,
    selected: Collection[int] | None = None,
    absorbed: Callable[[_E], bool] | None = None,
    check: Callable[[_E, BaseChatMessage], bool] | None = None,
) -> list[bool]:
    """Whether each of a finished turn's out-edges fires (the module's rule).

    Args:
        edges: The source's out-edges.
        final: The message conditions are evaluated on (None: the turn had none).
        selected: For a router's turn, the target indices it chose.
        absorbed: Says whether an edge is absorbed (it then does not fire).
        check: Evaluates a ``PREDICATE`` edge (default: call it); the scheduler's wraps
            an exception in a `NodeExecutionError`, a drawing's turns it into False.

    Returns:
        One bool per edge, in order.

    Examples:
        ```python
        from flowlib.graph import DiGraphEdge, edge_rule, fire_edges
        from flowlib.messages import TextMessage

        rules = [edge_rule(DiGraphEdge(target="b", condition="yes"))]
        fire_edges(rules, TextMessage(content="yes", source="a"))  # [True]
        ```
    """
    test = _call if check is None else check
    text: str | None = None
    passed: list[bool] = []
    for edge in edges:
        if absorbed is not None and absorbed(edge):
            ok = False
        elif selected is not None:
            ok = edge.target in selected
        elif edge.test == ALWAYS:
            ok = True
        elif final is None:
            ok = False
        elif edge.test == SUBSTRING:
            if text is None:
                text = final.to_model_text()
            ok = edge.text in text
        else:
            ok = test(edge, final)
        passed.append(ok)
    return passed
