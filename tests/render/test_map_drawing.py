"""Map edges in drawings and on the run page (issue 23.1)."""

from __future__ import annotations

from flowlib.messages import BaseChatMessage
from flowlib.render import steps_from_run, to_dot, to_mermaid
from flowlib.teams import DiGraphBuilder, GraphFlow


def planner(messages: list[BaseChatMessage]) -> str:
    return "a;b;c"


def researcher(messages: list[BaseChatMessage]) -> str:
    return "about " + messages[0].to_text()


def writer(messages: list[BaseChatMessage]) -> str:
    return "done"


def split(message: BaseChatMessage | None) -> list[str]:
    return message.to_text().split(";") if message is not None else []


def team() -> GraphFlow:
    builder = DiGraphBuilder().add_node(planner).add_node(researcher).add_node(writer)
    builder.add_edge("planner", "researcher", map=split, max_concurrency=2)
    builder.add_edge("researcher", "writer")
    return GraphFlow(builder.get_participants(), builder.build())


def test_a_map_edge_is_drawn_as_one_in_dot_and_mermaid() -> None:
    graph = team().graph
    assert (
        '    "planner" -> "researcher" [label="map split: one per item, 2 at once", '
        "style=bold, arrowhead=crow];"
    ) in to_dot(graph).splitlines()
    assert '    "researcher" -> "writer";' in to_dot(graph).splitlines()
    assert '    n0 ==>|"map split: one per item, 2 at once"| n1' in to_mermaid(graph).splitlines()


async def test_the_run_page_shows_how_many_instances_ran() -> None:
    flow = team()
    items = [item async for item in flow.run_stream(task="go")]
    steps = steps_from_run(flow.trace, [i for i in items if not hasattr(i, "stop_reason")])
    assert [(s.node, s.note) for s in steps] == [
        ("planner", None),
        ("researcher", "3 instances (map)"),
        ("writer", None),
    ]
    assert [m.source for m in steps[1].messages] == [
        "researcher[0]",
        "researcher[1]",
        "researcher[2]",
    ]
