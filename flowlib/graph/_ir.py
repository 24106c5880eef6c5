"""What the graph's analyses read of the IR: protocols that
[`DiGraph`][flowlib.graph.DiGraph], its nodes and its edges satisfy. The validator and the
edge rule read graphs through them, so that `DiGraph`'s own queries
(`graph_validate()`, `get_has_cycles()`, ...) can call them without an import cycle."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal, Protocol

__all__ = ["EdgeIR", "GraphIR", "NodeIR"]


class EdgeIR(Protocol):
    """An edge as the validator (and the plan compiled from its analysis) reads it."""

    @property
    def target(self) -> str: ...

    @property
    def condition(self) -> Any: ...

    @property
    def condition_function(self) -> Callable[[Any], bool] | None: ...

    @property
    def activation_group(self) -> str: ...

    @property
    def activation_condition(self) -> Literal["all", "any"] | None: ...

    @property
    def is_conditional(self) -> bool: ...

    def check_condition(self, message: Any) -> bool: ...


class NodeIR(Protocol):
    """A node as the validator reads it."""

    @property
    def name(self) -> str: ...

    @property
    def edges(self) -> Sequence[EdgeIR]: ...

    @property
    def activation(self) -> Literal["all", "any"]: ...

    @property
    def kind(self) -> str: ...


class GraphIR(Protocol):
    """A graph as the validator reads it ([`DiGraph`][flowlib.graph.DiGraph])."""

    @property
    def nodes(self) -> Mapping[str, NodeIR]: ...

    @property
    def default_start_node(self) -> str | None: ...

    @property
    def pattern(self) -> str | None: ...

    def iter_edges(self) -> Iterator[tuple[str, EdgeIR]]: ...
