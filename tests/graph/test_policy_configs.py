"""Map edges and node policies in component configs (issue 23.5): they dump and load
with a GraphFlow; a map function or cache key loads only with the caller's permission."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from flowlib.agents import AssistantAgent
from flowlib.component import ComponentLoadError, load_component
from flowlib.errors import ConditionSerializationError
from flowlib.graph import CachePolicy, RetryPolicy
from flowlib.messages import BaseChatMessage
from flowlib.models import ReplayChatCompletionClient, SQLiteStore
from flowlib.teams import DiGraphBuilder, GraphFlow


def split(message: BaseChatMessage | None) -> list[str]:
    return message.to_text().split(";") if message is not None else []


def last_word(messages: Any) -> str:
    return str(messages[-1].to_text().split()[-1])


def agents(tmp: Path) -> GraphFlow:
    planner = AssistantAgent("planner", ReplayChatCompletionClient(["a;b"]))
    researcher = AssistantAgent("researcher", ReplayChatCompletionClient(["found it"]))
    writer = AssistantAgent("writer", ReplayChatCompletionClient(["report"]))
    builder = DiGraphBuilder().add_node(planner, timeout=30)
    builder.add_node(
        researcher,
        retry=RetryPolicy(max_attempts=2, retry_on=(ConnectionError,)),
        cache=CachePolicy(store=SQLiteStore(tmp / "cache.db"), ttl=600, key=last_word),
    )
    builder.add_node(writer)
    builder.add_edge("planner", "researcher", map=split, max_concurrency=2)
    builder.add_edge("researcher", "writer")
    return GraphFlow(builder.get_participants(), builder.build(), turn_timeout=60)


async def test_a_graph_flow_with_maps_and_policies_round_trips(tmp_path: Path) -> None:
    team = agents(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the map function and key are noted as code
        config = team.dump_component().model_dump(mode="json")
    nodes = config["config"]["graph"]["nodes"]
    assert nodes["planner"]["edges"][0]["map"] == "split"
    assert nodes["planner"]["timeout"] == 30
    assert nodes["researcher"]["retry"]["retry_on"] == ["ConnectionError"]
    assert nodes["researcher"]["cache"]["ttl"] == 600
    assert nodes["researcher"]["cache"]["key"] == "last_word"
    assert nodes["researcher"]["cache"]["store"]["provider"].endswith("SQLiteStore")

    with pytest.raises(ConditionSerializationError, match="split"):
        load_component(config, allow_paths=[tmp_path], conditions={"last_word": last_word})
    with pytest.raises(ConditionSerializationError, match="last_word"):
        load_component(config, allow_paths=[tmp_path], conditions={"split": split})

    loaded = load_component(
        config, allow_paths=[tmp_path], conditions={"split": split, "last_word": last_word}
    )
    assert isinstance(loaded, GraphFlow) and loaded.turn_timeout == 60
    node = loaded.graph.nodes["researcher"]
    assert node.retry == RetryPolicy(max_attempts=2, retry_on=(ConnectionError,))
    assert node.cache is not None and node.cache.ttl == 600 and node.cache.key is last_word
    assert loaded.graph.nodes["planner"].edges[0].map_function is split
    result = await loaded.run(task="question")
    assert [m.source for m in result.messages] == [
        "user",
        "planner",
        "researcher[0]",
        "researcher[1]",
        "writer",
    ]


async def test_a_cache_store_outside_the_allowed_paths_is_refused(tmp_path: Path) -> None:
    team = agents(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = team.dump_component().model_dump(mode="json")
    with pytest.raises(ComponentLoadError, match=r"cache\.db|allow_paths"):
        load_component(config, conditions={"split": split, "last_word": last_word})
