"""diff_state / apply_patch: round trips on any JSON, and appends stay small."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowlib.checkpoint import apply_patch, diff_state
from flowlib.errors import CheckpointError

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=3), children, max_size=4)
    ),
    max_leaves=20,
)


def _strict(value: Any) -> str:
    """A text form that tells 1, 1.0 and True apart (== does not)."""
    return json.dumps(value, sort_keys=True)


@pytest.mark.timeout(600)  # a hang guard: 45 s of 120 in a whole run at load ~20
@given(json_values, json_values)
def test_round_trip_any_values(a: Any, b: Any) -> None:
    patch = diff_state(a, b)
    json.dumps(patch)  # a patch is JSON itself
    assert _strict(apply_patch(a, patch)) == _strict(b)


@given(json_values, st.lists(json_values, max_size=3), json_values)
def test_round_trip_grown_values(a: Any, extra: list[Any], other: Any) -> None:
    """States that grow like model contexts (nested lists extended, keys added)."""
    old = {"context": [a], "n": other}
    new = {"context": [a, *extra], "n": other, "added": extra}
    assert _strict(apply_patch(old, diff_state(old, new))) == _strict(new)


def test_types_are_told_apart() -> None:
    for a, b in [(1, True), (1, 1.0), (0, False), ([1], [True]), ({"k": 1}, {"k": 1.0})]:
        assert _strict(apply_patch(a, diff_state(a, b))) == _strict(b)


@settings(max_examples=30)
@given(st.integers(min_value=0, max_value=400))
def test_patch_of_an_append_is_small(length: int) -> None:
    """An agent whose context grows by one message writes that one message."""
    message = {"type": "TextMessage", "source": "a", "content": "x" * 50}
    old = {"llm_context": {"messages": [dict(message, content=str(i)) for i in range(length)]}}
    new = {"llm_context": {"messages": [*old["llm_context"]["messages"], message]}}
    patch = diff_state(old, new)
    assert patch == {"update": {"llm_context": {"update": {"messages": {"append": [message]}}}}}
    assert len(json.dumps(patch)) < len(json.dumps(message)) + 80


def test_unchanged_is_empty_and_apply_does_not_mutate() -> None:
    old = {"a": [1, 2], "b": {"c": 3}}
    assert diff_state(old, {"a": [1, 2], "b": {"c": 3}}) == {}
    patch = diff_state(old, {"a": [1, 2, 3], "d": 4})
    new = apply_patch(old, patch)
    assert new == {"a": [1, 2, 3], "d": 4}
    assert old == {"a": [1, 2], "b": {"c": 3}}


def test_a_list_that_is_not_extended_is_replaced() -> None:
    assert diff_state([1, 2, 3], [1, 2]) == {"set": [1, 2]}
    assert diff_state([1, 2], [9, 2, 3]) == {"set": [9, 2, 3]}


@pytest.mark.parametrize(
    ("old", "patch", "words"),
    [
        ({"a": 1}, {"append": [1]}, "not a list"),
        ([1], {"update": {"a": {}}}, "not a dict"),
        (1, {"bogus": 1}, "Unknown state patch"),
        (1, ["set", 1], "must be a dict"),
    ],
)
def test_malformed_patches_are_checkpoint_errors(old: Any, patch: Any, words: str) -> None:
    with pytest.raises(CheckpointError, match=words):
        apply_patch(old, patch)
