"""A graph's signature: a stable hash of what a stored run depends on.

A stored run can only be resumed by a team whose graph has the same nodes (names and
kinds) and the same edges (ends, conditions, activation groups). The description the
hash is made from is stored next to it, so a refusal names exactly what differs.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ._conditions import EdgeCondition
from ._plan import ExecutionPlan

__all__ = ["graph_description", "graph_difference", "graph_signature"]


def _condition_text(condition: Any, function: Any) -> str:
    if function is not None:
        return "callable " + str(getattr(function, "__qualname__", type(function).__name__))
    if condition is None:
        return "always"
    if isinstance(condition, str):
        return "contains " + json.dumps(condition)
    if isinstance(condition, EdgeCondition):
        return condition.model_dump_json()
    return "callable " + str(getattr(condition, "__qualname__", type(condition).__name__))


def graph_description(plan: ExecutionPlan) -> dict[str, Any]:
    """The nodes (name: kind) and edges (one line each) of ``plan``, JSON-ready.

    Examples:
        ```python
        description = graph_description(team._plan)
        description["edges"][0]  # 'a -> b [group=..., all, always]'
        ```
    """
    edges: list[str] = []
    for position, edge in enumerate(plan.analysis.edges):
        group = plan.groups[plan.edges[position].group]
        edges.append(
            f"{plan.names[plan.edges[position].source]} -> {edge.target} "
            f"[group={group.name}, {'any' if group.any else 'all'}, "
            f"{_condition_text(edge.condition, edge.condition_function)}"
            f"{', map' if getattr(edge, 'is_map', False) else ''}]"
        )
    return {
        "nodes": {name: str(kind) for name, kind in zip(plan.names, plan.kinds, strict=True)},
        "entry": [plan.names[node] for node in plan.entry],
        "edges": edges,
    }


def graph_signature(description: dict[str, Any]) -> str:
    """A SHA-256 hex digest of a [`graph_description`][flowlib.graph.graph_description]."""
    text = json.dumps(description, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def graph_difference(stored: dict[str, Any], current: dict[str, Any]) -> str:
    """Name the nodes and edges that differ between two descriptions ("" if none)."""
    parts: list[str] = []
    old_nodes: dict[str, str] = dict(stored.get("nodes", {}))
    new_nodes: dict[str, str] = dict(current.get("nodes", {}))
    gone = [n for n in old_nodes if n not in new_nodes]
    added = [n for n in new_nodes if n not in old_nodes]
    changed = [n for n in old_nodes if n in new_nodes and old_nodes[n] != new_nodes[n]]
    if gone:
        parts.append("nodes only in the stored run: " + ", ".join(f"`{n}`" for n in gone))
    if added:
        parts.append("nodes only in this team: " + ", ".join(f"`{n}`" for n in added))
    if changed:
        parts.append(
            "nodes of another kind: "
            + ", ".join(f"`{n}` ({old_nodes[n]} -> {new_nodes[n]})" for n in changed)
        )
    old_edges = list(stored.get("edges", []))
    new_edges = list(current.get("edges", []))
    only_old = [e for e in old_edges if e not in new_edges]
    only_new = [e for e in new_edges if e not in old_edges]
    if only_old:
        parts.append("edges only in the stored run: " + ", ".join(f"`{e}`" for e in only_old))
    if only_new:
        parts.append("edges only in this team: " + ", ".join(f"`{e}`" for e in only_new))
    if not parts and stored.get("entry") != current.get("entry"):
        parts.append(f"entry nodes {stored.get('entry')} -> {current.get('entry')}")
    return "; ".join(parts)
