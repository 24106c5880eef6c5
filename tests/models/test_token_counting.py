"""Token counts for OpenAI models come from tiktoken; the estimate is logged once.

tiktoken downloads its encodings on first use, which a test cannot rely on (the machine
may be offline), so the tests give tiktoken's ``get_encoding`` a small real
``tiktoken.Encoding`` (byte-level, with merges that make ``hello`` one token), or make it
fail the way an offline download does.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import tiktoken

from flowlib.model_context import TokenLimitedChatCompletionContext
from flowlib.models import OpenAIChatCompletionClient, UserMessage
from flowlib.models import _openai_mapping as mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).parent.parent.parent


def _tiny_encoding() -> tiktoken.Encoding:
    ranks = {bytes([i]): i for i in range(256)}
    ranks.update({b"he": 256, b"ll": 257, b"hell": 258, b"hello": 259})
    return tiktoken.Encoding(
        name="tiny", pat_str=r"\w+|\s+|[^\w\s]+", mergeable_ranks=ranks, special_tokens={}
    )


@pytest.fixture
def fresh_counting() -> Iterator[None]:
    """Forget loaded encodings and whether the estimate was logged, before and after."""

    def reset() -> None:
        mapping._encoder.cache_clear()
        mapping._encoding.cache_clear()
        mapping._estimate_logged = False

    reset()
    yield
    reset()


def _extra_tokens(text: str, model: str = "gpt-4o") -> int:
    """The tokens ``text`` adds to a one-message prompt."""
    empty = mapping.count_tokens([UserMessage(content="", source="user")], model=model)
    full = mapping.count_tokens([UserMessage(content=text, source="user")], model=model)
    return full - empty


def test_tiktoken_is_a_core_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(dep.startswith("tiktoken>=") for dep in project["dependencies"])


def test_counts_come_from_the_models_tiktoken_encoding(
    fresh_counting: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    asked: list[str] = []

    def get_encoding(name: str) -> tiktoken.Encoding:
        asked.append(name)
        return _tiny_encoding()

    monkeypatch.setattr(tiktoken, "get_encoding", get_encoding)
    with caplog.at_level(logging.WARNING):
        assert _extra_tokens("hello") == 1  # one token of the encoding (the estimate: 2)
        assert _extra_tokens("hello hello!") == 4  # hello, " ", hello, "!"
        assert _extra_tokens("hello", model="gpt-4") == 1
        assert _extra_tokens("hello", model="llama3.2") == 1  # unknown to tiktoken
    assert asked == ["o200k_base", "cl100k_base"]  # each encoding loaded once
    assert not caplog.records

    client = OpenAIChatCompletionClient("gpt-4o", api_key="unused")
    ask = [UserMessage(content="hello", source="user")]
    assert client.count_tokens(ask) == mapping.count_tokens(ask, model="gpt-4o")


async def test_token_limited_context_uses_the_real_count(
    fresh_counting: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: _tiny_encoding())
    client = OpenAIChatCompletionClient("gpt-4o", api_key="unused")
    one = client.count_tokens([UserMessage(content="hello " * 3, source="user")])
    two = client.count_tokens([UserMessage(content="hello " * 3, source="user")] * 2)
    context = TokenLimitedChatCompletionContext(client, token_limit=two)
    for _ in range(3):
        await context.add_message(UserMessage(content="hello " * 3, source="user"))
    assert one < two
    assert len(await context.get_messages()) == 2
    await client.close()


def test_the_estimate_is_logged_once_and_says_why(
    fresh_counting: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def offline(name: str) -> tiktoken.Encoding:
        raise ConnectionError("Failed to resolve 'openaipublic.blob.core.windows.net'")

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    with caplog.at_level(logging.WARNING, logger="flowlib"):
        assert _extra_tokens("hello") == 2  # ceil(5 / 4)
        assert _extra_tokens("hello" * 4) == 5
        assert _extra_tokens("hello", model="gpt-4") == 2
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    message = warnings[0].getMessage()
    assert "estimated at 4 characters per token" in message
    assert "ConnectionError" in message and "TIKTOKEN_CACHE_DIR" in message
    assert warnings[0].name.startswith("flowlib.")


def test_without_tiktoken_the_estimate_names_the_package(
    fresh_counting: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import tiktoken -> ImportError
    with caplog.at_level(logging.WARNING, logger="flowlib"):
        assert _extra_tokens("hello") == 2
    assert "pip install tiktoken" in caplog.records[0].getMessage()
