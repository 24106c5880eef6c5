"""Messages without metadata share one empty dict until theirs is read (issue 22, item 7)."""

from __future__ import annotations

import copy
import gc
import pickle
import tracemalloc

import pytest

from flowlib.errors import InvalidTypeError
from flowlib.messages import BaseChatMessage, TextMessage, ToolCallSummaryMessage


def _kept_per_message(build: object, count: int = 2_000) -> float:
    assert callable(build)
    build()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [build() for _ in range(count)]
        gc.collect()
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(kept) == count
    return used / count


def _read(message: BaseChatMessage) -> BaseChatMessage:
    assert message.metadata == {}
    return message


def test_a_message_without_metadata_keeps_no_dict_of_its_own_until_it_is_read() -> None:
    # Agents pass their (empty) metadata to every message they send, as AutoGen's do.
    def build() -> BaseChatMessage:
        return TextMessage(content="hi", source="a", metadata={})

    unread = _kept_per_message(build)
    read = _kept_per_message(lambda: _read(build()))
    assert read - unread >= 56  # the empty dict a read gives the message (64 bytes here)


def test_metadata_reads_as_each_messages_own_mutable_dict() -> None:
    first = TextMessage(content="hi", source="a")
    second = TextMessage(content="hi", source="a", metadata={})
    assert first.metadata == {} and type(first.metadata) is dict
    first.metadata["k"] = "v"
    assert first.metadata == {"k": "v"} and second.metadata == {}
    assert first.dump()["metadata"] == {"k": "v"} and second.dump()["metadata"] == {}
    assert "metadata" not in first.model_fields_set and "metadata" in second.model_fields_set
    assert TextMessage.load(second.dump()) == second and TextMessage.load(first.dump()) == first
    assert second.model_dump_json().count('"metadata":{}') == 1
    third = ToolCallSummaryMessage(content="x", source="a", tool_calls=[], results=[])
    for message in (third, copy.copy(third), copy.deepcopy(third), third.model_copy()):
        assert message.model_dump()["metadata"] == {}
    clone = pickle.loads(pickle.dumps(third))
    assert clone == third
    clone.metadata["k"] = "v"
    assert third.metadata == {} and clone.metadata == {"k": "v"}
    third.metadata = {"a": "b"}
    assert third.metadata == {"a": "b"} and "metadata" in third.model_fields_set


def test_the_shared_empty_metadata_is_read_only_with_a_clear_error() -> None:
    message = TextMessage(content="hi", source="a")
    stored = dict(message)["metadata"]  # the stored value, not `message.metadata`
    assert stored == {}
    with pytest.raises(InvalidTypeError, match="read-only"):
        stored["k"] = "v"
    with pytest.raises(InvalidTypeError, match="read-only"):
        stored.update(k="v")
    assert TextMessage(content="hi", source="b").metadata == {}
