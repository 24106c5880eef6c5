"""Streaming tokens: agents stream their model's answer, and Console prints it live.

    storyteller --> critic      (round robin, max_turns=2)

With ``model_client_stream=True`` an agent calls ``create_stream`` and emits each chunk
as a ``ModelClientStreamingChunkEvent`` while the model is still writing; ``Console``
writes the chunks inline under one header as they arrive and does not print the
complete message again. The chunk events are part of the stream only: the team's result
holds the complete messages. Offline the scripted model streams word by word.

Run offline: python examples/streaming_tokens.py
With a real model: OPENAI_API_KEY=... python examples/streaming_tokens.py
(the tokens then arrive as the model produces them, so you can watch them appear).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from _common import model_client

from flowlib.agents import AssistantAgent
from flowlib.base import TaskResult
from flowlib.messages import BaseAgentEvent, BaseChatMessage, ModelClientStreamingChunkEvent
from flowlib.teams import RoundRobinGroupChat
from flowlib.ui import Console

TASK = "Tell a three-sentence story about a robot who learns to whistle."


def build() -> RoundRobinGroupChat:
    """Build the team of two streaming agents."""
    storyteller = AssistantAgent(
        "storyteller",
        model_client=model_client(
            [
                "Unit 7 swept the station floor every night, listening to the janitor "
                "whistle. One night it pushed air through its cooling vents and made a thin, "
                "wobbly note. By spring the two of them whistled duets, and nobody minded "
                "the floors anymore."
            ]
        ),
        model_client_stream=True,
        system_message="Tell the story asked for.",
    )
    critic = AssistantAgent(
        "critic",
        model_client=model_client(["Sweet and tight; the vents are a lovely detail."]),
        model_client_stream=True,
        system_message="Give a one-sentence reaction to the story.",
    )
    return RoundRobinGroupChat([storyteller, critic], max_turns=2)


async def main() -> None:
    """Run the team with Console printing chunks live; count the chunks seen."""
    team = build()
    chunks = 0

    async def counted() -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | TaskResult, None]:
        nonlocal chunks
        async for item in team.run_stream(task=TASK):
            if isinstance(item, ModelClientStreamingChunkEvent):
                chunks += 1
            yield item

    result = await Console(counted())
    print(f"{chunks} chunks streamed; {len(result.messages)} complete messages in the result")
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
