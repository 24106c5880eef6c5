"""The executor's saved state: everything needed to resume a run mid-loop."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

__all__ = ["GRAPH_STATE_VERSION", "GraphManagerState"]

GRAPH_STATE_VERSION = 1


class GraphManagerState(BaseModel):
    """The graph executor's state, JSON-serialisable and versioned.

    Edges are named by ``[source, target, activation group]`` so the state reads well
    and is checked against the graph it is loaded into.

    Attributes:
        version: Format version; loading another version is refused with a clear error.
        message_thread: Every chat message published so far, dumped.
        thread_nodes: For each thread entry, the node that published it (None: the task).
        cursors: Per node, how many thread entries it has already been shown.
        limits: Per node whose interrupted turn is to run again, the thread length that
            turn had seen: the re-run sees no more (later messages wait for its next turn).
        ready: Nodes that are activated and will run next, in order (nodes whose turn was
            running when the state was saved come first: they run again).
        pending: Nodes activated again while their turn was running: they run once more
            after it (after its re-run, if the turn was interrupted).
        fired: Edges that fired into joins that are still waiting for others.
        absorbed: Edges of ``any`` groups whose next firing is void (see the executor).
        current_turn: Turns run in the run that produced the state.
        fresh: Whether the next run starts again from the entry nodes.
        node_turns: Per node, its recorded turns in the run (numbers its turns'
            idempotency keys, see [`call_key`][flowlib.tools.call_key]); absent: none.
        map_items: Per map target whose instances are to run (or running), the items its
            map edge produced, dumped as messages.
        map_done: Per map target, the outputs of the instances that finished and are not
            yet recorded, by item index (a resumed map runs only the others).
        map_next: Per map target, how many of its instances are recorded (their outputs
            are in the thread and their ``any`` out-edges fired): they do not run again.
        map_passed: The out-edges of running map targets (to ``all`` groups) whose
            condition a recorded instance's output passed: they fire when the map ends.
        map_carry: Per target of a map edge out of a running map target, the items the
            recorded instances' outputs mapped to (concatenated in item order).
    """

    type: Literal["GraphManagerState"] = "GraphManagerState"
    version: int = GRAPH_STATE_VERSION
    message_thread: list[dict[str, Any]] = Field(default_factory=list)
    thread_nodes: list[str | None] = Field(default_factory=list)
    cursors: dict[str, int] = Field(default_factory=dict)
    limits: dict[str, int] = Field(default_factory=dict)
    ready: list[str] = Field(default_factory=list)
    pending: list[str] = Field(default_factory=list)
    fired: list[tuple[str, str, str]] = Field(default_factory=list)
    absorbed: list[tuple[str, str, str]] = Field(default_factory=list)
    current_turn: int = 0
    fresh: bool = True
    node_turns: dict[str, int] = Field(default_factory=dict)
    map_items: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    map_done: dict[str, dict[str, list[dict[str, Any]]]] = Field(default_factory=dict)
    map_next: dict[str, int] = Field(default_factory=dict)
    map_passed: list[tuple[str, str, str]] = Field(default_factory=list)
    map_carry: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)

    @model_serializer(mode="wrap")
    def _leave_out_idle_maps(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A graph without a map in progress saves as before map edges existed.
        data = handler(self)
        if isinstance(data, dict):
            for key in ("map_items", "map_done", "map_next", "map_passed", "map_carry"):
                if not data.get(key):
                    data.pop(key, None)
        return data
