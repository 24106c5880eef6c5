"""Fuzz the loaders (issue 11): mutated and random JSON thrown at ``load_state`` of every
team type, at ``load_component`` and at ``DiGraph.load``. Every failure is a FlowlibError,
and the object called on is unchanged afterwards (its dump before == after).

The mutations start from real data (a saved state mid-run, a dumped team, a dumped
graph) and change one place: replace a value with random JSON, drop a key, add a key,
or wrap/unwrap a value, so most inputs get past the first checks."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowlib.agents import AssistantAgent
from flowlib.base import Team
from flowlib.component import ComponentSerializationWarning, dump_component, load_component
from flowlib.conditions import MaxMessageTermination, TextMentionTermination
from flowlib.errors import FlowlibError
from flowlib.graph import DiGraph
from flowlib.graph._conditions import check_condition
from flowlib.models import ReplayChatCompletionClient
from flowlib.teams import (
    DiGraphBuilder,
    GraphFlow,
    MagenticOneGroupChat,
    RoundRobinGroupChat,
    SelectorGroupChat,
    Swarm,
)
from flowlib.testing import ScriptedAgent

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(["TeamState", "TextMessage", "agent", "any", "all", "a", "b", "user", ""]),
)
json_values = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


def paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in ``data``: dict keys and list positions, depth first."""
    found = [prefix]
    if isinstance(data, dict):
        for key, value in data.items():
            found += paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found += paths(value, (*prefix, index))
    return found


def _parent(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        data = data[part]
    return data


@st.composite
def mutated(draw: st.DrawFn, original: Any) -> Any:
    """``original`` with one place changed (or, rarely, replaced wholesale)."""
    if draw(st.integers(0, 19)) == 0:
        return draw(json_values)
    data = copy.deepcopy(original)
    places = paths(data)
    path = draw(st.sampled_from(places))
    how = draw(st.sampled_from(["replace", "drop", "add", "wrap", "empty", "retype"]))
    if not path:
        return [data] if how == "wrap" else draw(json_values)
    parent, last = _parent(data, path), path[-1]
    value = parent[last]
    if how == "replace":
        parent[last] = draw(json_values)
    elif how == "drop":
        del parent[last]
    elif how == "add":
        if isinstance(value, dict):
            value[draw(st.text(max_size=6))] = draw(json_values)
        elif isinstance(value, list):
            value.append(draw(json_values))
        else:
            parent[last] = draw(json_values)
    elif how == "wrap":
        parent[last] = [value]
    elif how == "empty":
        parent[last] = type(value)() if isinstance(value, (dict, list, str)) else None
    else:  # retype: the same content as another JSON type
        parent[last] = json.dumps(value) if not isinstance(value, str) else {"value": value}
    return data


def expect_flowlib_error_or_success(call: Callable[[], Any]) -> bool:
    """Run ``call``; True if it succeeded, False if it raised a FlowlibError; anything
    else fails the test."""
    try:
        with warnings.catch_warnings():
            # Warnings about a loadable but odd config (a model_info without
            # structured_output, a dump without a field) are not failures.
            warnings.simplefilter("ignore", ComponentSerializationWarning)
            warnings.simplefilter("ignore", UserWarning)
            call()
    except FlowlibError:
        return False
    except Exception as exc:
        pytest.fail(f"raw {type(exc).__name__} escaped: {exc!r}")
    return True


# --- teams and their saved states --------------------------------------------------------


def _scripted(*names: str) -> list[ScriptedAgent]:
    return [ScriptedAgent(name, lambda turn, _, n=name: f"{n} {turn}") for name in names]


def round_robin() -> Team:
    return RoundRobinGroupChat(_scripted("a", "b"), max_turns=3)


def graph_flow() -> Team:
    a, b, c = _scripted("a", "b", "c")
    builder = DiGraphBuilder().add_node(a).add_node(b).add_node(c)
    builder.add_edge("a", "b").add_edge("b", "c", condition="b 1").add_edge("b", "a", condition="x")
    builder.set_entry_point("a")
    return GraphFlow(builder.get_participants(), builder.build(), max_turns=2)


def swarm() -> Team:
    agent = AssistantAgent(
        "helper", ReplayChatCompletionClient(["one", "two", "three"]), handoffs=["other"]
    )
    other = AssistantAgent("other", ReplayChatCompletionClient(["hi"]))
    return Swarm([agent, other], max_turns=2)


def selector() -> Team:
    return SelectorGroupChat(
        _scripted("a", "b"),
        ReplayChatCompletionClient(["a", "b", "a", "b"]),
        termination_condition=MaxMessageTermination(3),
    )


def magentic() -> Team:
    ledger = json.dumps(
        {
            "is_request_satisfied": {"reason": "r", "answer": False},
            "is_in_loop": {"reason": "r", "answer": False},
            "is_progress_being_made": {"reason": "r", "answer": True},
            "next_speaker": {"reason": "r", "answer": "a"},
            "instruction_or_question": {"reason": "r", "answer": "go"},
        }
    )
    model = ReplayChatCompletionClient(["facts", "plan", ledger, ledger, ledger, "answer"])
    return MagenticOneGroupChat(_scripted("a", "b"), model, max_turns=2)


TEAMS: dict[str, Callable[[], Team]] = {
    "round_robin": round_robin,
    "graph_flow": graph_flow,
    "swarm": swarm,
    "selector": selector,
    "magentic_one": magentic,
}

_saved: dict[str, dict[str, Any]] = {}


def saved_state(kind: str) -> dict[str, Any]:
    """A state saved after a run was stopped by max_turns / termination (cached)."""
    if kind not in _saved:

        async def make() -> dict[str, Any]:
            team = TEAMS[kind]()
            await team.run(task="Start.")
            return json.loads(json.dumps(await team.save_state()))

        _saved[kind] = asyncio.run(make())
    return _saved[kind]


def run(coroutine: Awaitable[Any]) -> Any:
    return asyncio.run(coroutine)  # type: ignore[arg-type]


def check_team_load(kind: str, data: Any) -> None:
    async def scenario() -> None:
        team = TEAMS[kind]()
        await team.load_state(saved_state(kind))
        before = json.dumps(await team.save_state(), sort_keys=True)
        try:
            await team.load_state(data)
        except FlowlibError:
            after = json.dumps(await team.save_state(), sort_keys=True)
            assert after == before, "a failed load_state changed the team"
        except Exception as exc:
            pytest.fail(f"raw {type(exc).__name__} escaped load_state: {exc!r}")

    asyncio.run(scenario())


@pytest.mark.parametrize("kind", list(TEAMS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_load_state_of_mutated_states(kind: str, data: st.DataObject) -> None:
    check_team_load(kind, data.draw(mutated(saved_state(kind))))


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(TEAMS))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_load_state_of_mutated_states_many(kind: str, data: st.DataObject) -> None:
    check_team_load(kind, data.draw(mutated(saved_state(kind))))


# --- load_component ------------------------------------------------------------------


def _component_dump() -> dict[str, Any]:
    team = RoundRobinGroupChat(
        [
            AssistantAgent("writer", ReplayChatCompletionClient(["draft"]), tools=None),
            AssistantAgent("editor", ReplayChatCompletionClient(["APPROVE"])),
        ],
        termination_condition=TextMentionTermination("APPROVE") | MaxMessageTermination(5),
    )
    data: dict[str, Any] = dump_component(team).model_dump(mode="json")
    return data


COMPONENT = _component_dump()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated(COMPONENT))
def test_load_component_of_mutated_configs(data: Any) -> None:
    before = json.dumps(COMPONENT, sort_keys=True)
    expect_flowlib_error_or_success(lambda: load_component(data))
    assert json.dumps(COMPONENT, sort_keys=True) == before


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated(COMPONENT))
def test_load_component_of_mutated_configs_many(data: Any) -> None:
    expect_flowlib_error_or_success(lambda: load_component(data))


# --- DiGraph.load ----------------------------------------------------------------------


GRAPH = graph_flow().graph.dump()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated(GRAPH))
def test_digraph_load_of_mutated_dumps(data: Any) -> None:
    before = json.dumps(GRAPH, sort_keys=True)
    expect_flowlib_error_or_success(lambda: DiGraph.load(data))
    assert json.dumps(GRAPH, sort_keys=True) == before


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated(GRAPH))
def test_digraph_load_of_mutated_dumps_many(data: Any) -> None:
    expect_flowlib_error_or_success(lambda: DiGraph.load(data))


def test_deeply_nested_inputs_are_flowlib_errors() -> None:
    deep: Any = {"kind": "not", "condition": "x"}
    for _ in range(3000):
        deep = {"kind": "not", "condition": deep}
    graph = {"nodes": {"a": {"name": "a", "edges": [{"target": "a", "condition": deep}]}}}
    assert not expect_flowlib_error_or_success(lambda: DiGraph.load(graph))
    nested: Any = {"provider": "MaxMessageTermination", "config": {"max_messages": 1}}
    for _ in range(3000):
        nested = {"provider": "OrTerminationCondition", "config": {"conditions": [nested]}}
    assert not expect_flowlib_error_or_success(lambda: load_component(nested))

    # saved_state runs its own event loop the first time: call it before this one runs.
    state: Any = saved_state("round_robin")

    async def scenario() -> None:
        nonlocal state
        team = round_robin()
        for _ in range(3000):
            state = {"type": "TeamState", "version": 1, "agent_states": state}
        with pytest.raises(FlowlibError):
            await team.load_state(state)

    run(scenario())


# --- the load policy: environment variables, hosts, regex patterns (issue 21) ----------

SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "aws-secret-value",
    "OPENAI_API_KEY": "sk-users-own-key",
    "AZURE_OPENAI_API_KEY": "azure-users-own-key",
    "GITHUB_TOKEN": "ghp-users-token",
}
env_names = st.one_of(
    st.sampled_from([*SECRETS, "HOME", "PATH", "OPENAI_BASE_URL", "UNSET_VARIABLE"]),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,24}", fullmatch=True),
)
hosts = st.one_of(
    st.sampled_from(
        ["127.0.0.1", "localhost", "10.0.0.7", "[::1]", "Internal.Example", "api.openai.com"]
    ),
    st.from_regex(r"[a-z][a-z0-9-]{0,12}(\.[a-z][a-z0-9-]{0,12}){0,3}", fullmatch=True),
)
INFO = {
    "vision": False,
    "function_calling": True,
    "json_output": True,
    "family": "unknown",
    "structured_output": True,
}


def _with_secrets(call: Callable[[], Any]) -> Any:
    saved = {name: os.environ.get(name) for name in (*SECRETS, "OPENAI_BASE_URL")}
    os.environ.update(SECRETS)
    os.environ.pop("OPENAI_BASE_URL", None)
    try:
        return call()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _sent_key(client: Any) -> str:
    return str(client._client.api_key)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=env_names, host=hosts, port=st.integers(1, 65535), allowed=st.booleans())
def test_a_config_reads_only_the_environment_variables_it_is_allowed(
    name: str, host: str, port: int, allowed: bool
) -> None:
    config = {
        "provider": "OpenAIChatCompletionClient",
        "config": {
            "model": "m",
            "model_info": INFO,
            "base_url": f"http://{host}:{port}/v1",
            "api_key_env": name,
        },
    }
    policy = {"allow_env": [name]} if allowed else {}

    def load() -> Any:
        return load_component(config, **policy)

    try:
        client = _with_secrets(load)
    except FlowlibError as exc:
        # Refused: not allowed, or not set.
        assert "allow_env" in str(exc) or "not set" in str(exc) or allowed
        return
    except Exception as exc:  # pragma: no cover - the property under test
        pytest.fail(f"raw {type(exc).__name__} escaped: {exc!r}")
    key = _sent_key(client)
    run(client.close())
    # A key from the environment only with the caller's leave: the config's own
    # endpoint is never OpenAI's (its port is explicit), so nothing belongs to it.
    assert allowed, f"{name} was read without allow_env"
    assert key == os.environ.get(name, SECRETS.get(name))


def _host_configs(host: str) -> list[dict[str, Any]]:
    return [
        {
            "provider": "McpWorkbench",
            "config": {"server_params": {"type": kind, "url": f"http://{host}/x"}},
        }
        for kind in ("SseServerParams", "StreamableHttpServerParams")
    ] + [{"provider": "RedisStore", "config": {"host": host.strip("[]")}}]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(host=hosts, other=hosts)
def test_a_config_reaches_only_the_hosts_it_is_allowed(host: str, other: str) -> None:
    bare = host.strip("[]").lower()
    for config in _host_configs(host):
        with pytest.raises(FlowlibError, match="allow_hosts"):
            load_component(config)
        if other.strip("[]").lower() != bare:
            with pytest.raises(FlowlibError, match="allow_hosts"):
                load_component(config, allow_hosts=[other.strip("[]")])
        try:
            load_component(config, allow_hosts=[bare])
        except FlowlibError as exc:  # e.g. redis not installed; never the host check
            assert "allow_hosts" not in str(exc)


regex_patterns = st.one_of(
    st.sampled_from(
        [r"^(a+)+$", r"(a|aa)+$", r"(\w+\s?)*$", r"(x+x+)+y", r"(a)\1", r"(?=a)", "((", "[", "*"]
    ),
    st.text(alphabet="a()+*?|[]^$\\.{}1,!w", max_size=12),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=regex_patterns)
def test_a_regex_from_a_graph_config_loads_or_fails_cleanly_and_runs_in_linear_time(
    pattern: str,
) -> None:
    data = copy.deepcopy(GRAPH)
    edge = next(
        edge for node in data["nodes"].values() for edge in node["edges"] if edge["condition"]
    )
    edge["condition"] = {"kind": "regex", "pattern": pattern}
    loaded: list[Any] = []
    if not expect_flowlib_error_or_success(lambda: loaded.append(DiGraph.load(data))):
        return
    condition = next(
        e.condition for n in loaded[0].nodes.values() for e in n.edges if e.condition is not None
    )
    # The build-time check a team runs on its graph (DiGraph.load alone does not compile
    # patterns): a pattern RE2 cannot run is an InvalidConditionError.
    if not expect_flowlib_error_or_success(
        lambda: check_condition(condition, source="a", target="b")
    ):
        return
    hostile = "a" * 50_000 + "!"
    condition.compiled().search(hostile)  # returns at once: linear in the text
