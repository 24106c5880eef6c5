"""Messages and usage share one read-only ``model_fields_set`` per set of given fields
(issue 22, item 7: memory per kept message); everything pydantic does with the set still
works."""

from __future__ import annotations

import copy
import pickle

import pytest

from flowlib.errors import InvalidTypeError
from flowlib.messages import TextMessage
from flowlib.models import AssistantMessage, RequestUsage, SystemMessage, UserMessage


def _built() -> list[object]:
    return [
        UserMessage(content="hi", source="user"),
        AssistantMessage(content="ok", source="a"),
        SystemMessage(content="be terse"),
        RequestUsage(prompt_tokens=3, completion_tokens=1),
        TextMessage(content="hello", source="a"),
    ]


def test_instances_built_with_the_same_fields_share_one_fields_set() -> None:
    first, second = _built(), _built()
    for a, b in zip(first, second, strict=True):
        assert a.model_fields_set is b.model_fields_set, type(a).__name__  # type: ignore[attr-defined]
    # Other fields given: another set, with the right names.
    usage = TextMessage(content="x", source="a", models_usage=RequestUsage(1, 2))
    assert usage.model_fields_set == {"content", "source", "models_usage"}
    assert usage.model_fields_set is not first[4].model_fields_set  # type: ignore[attr-defined]


def test_assigning_a_field_gives_the_instance_its_own_set() -> None:
    a = UserMessage(content="hi", source="user")
    b = UserMessage(content="hi", source="user")
    a.content = "changed"
    assert a.content == "changed" and b.content == "hi"
    assert a.model_fields_set == {"content", "source"}
    assert a.model_fields_set is not b.model_fields_set
    msg = TextMessage(content="x", source="a")
    other = TextMessage(content="y", source="b")
    msg.models_usage = RequestUsage(1, 1)
    assert msg.model_fields_set == {"content", "source", "models_usage"}
    assert other.model_fields_set == {"content", "source"}
    assert msg.model_dump(exclude_unset=True)["models_usage"] == {
        "prompt_tokens": 1,
        "completion_tokens": 1,
    }
    assert "models_usage" not in other.model_dump(exclude_unset=True)


def test_the_shared_set_is_read_only_with_a_clear_error() -> None:
    msg = UserMessage(content="hi", source="user")
    with pytest.raises(InvalidTypeError, match="read-only"):
        msg.model_fields_set.add("type")
    with pytest.raises(InvalidTypeError, match="read-only"):
        msg.model_fields_set |= {"type"}
    assert UserMessage(content="x", source="y").model_fields_set == {"content", "source"}


def test_copies_pickles_and_dumps_keep_working() -> None:
    msg = TextMessage(content="x", source="a", metadata={"k": "v"})
    changed = msg.model_copy(update={"content": "y"})
    assert changed.content == "y" and msg.content == "x"
    assert changed.model_fields_set == {"content", "source", "metadata"}
    for clone in (copy.copy(msg), copy.deepcopy(msg), pickle.loads(pickle.dumps(msg))):
        assert clone == msg
        assert clone.model_fields_set == msg.model_fields_set
        clone.content = "z"  # a copy's set is its own
        assert msg.content == "x"
        assert msg.model_fields_set == {"content", "source", "metadata"}
    assert TextMessage.load(msg.dump()) == msg
    assert msg.model_dump(exclude_unset=True) == {
        "content": "x",
        "source": "a",
        "metadata": {"k": "v"},
    }
