"""Structured output: the agent answers with a pydantic model, not free text.

    reviewer   (a one-agent team, max_turns=1) --> StructuredMessage[BookReview]

With ``output_content_type=BookReview`` the model is asked for JSON matching the model's
schema (structured output), the answer is validated, and the agent replies with a
``StructuredMessage[BookReview]`` whose ``content`` is a ``BookReview`` instance: typed
fields your code can use directly, no parsing of prose. ``output_content_type_format``
controls how the message prints.

Run offline: python examples/structured_output.py
With a real model: OPENAI_API_KEY=... python examples/structured_output.py
(the model fills in the schema; it needs structured-output support, which gpt-4o-mini
and recent Ollama and vLLM servers have).
"""

from __future__ import annotations

import asyncio
from typing import Literal

from _common import model_client
from pydantic import BaseModel, Field

from flowlib.agents import AssistantAgent
from flowlib.messages import StructuredMessage
from flowlib.teams import RoundRobinGroupChat
from flowlib.ui import Console

TASK = "Review 'The Hobbit' in a few words for a ten-year-old."


class BookReview(BaseModel):
    """What the reviewer must answer with."""

    title: str
    stars: int = Field(ge=1, le=5)
    audience: Literal["children", "teens", "adults", "everyone"]
    summary: str


def build() -> RoundRobinGroupChat:
    """Build a one-agent team around the structured-output agent."""
    reviewer = AssistantAgent(
        "reviewer",
        model_client=model_client(
            [
                '{"title": "The Hobbit", "stars": 5, "audience": "everyone", '
                '"summary": "A homebody goes on a dragon hunt and finds his courage."}'
            ]
        ),
        output_content_type=BookReview,
        output_content_type_format="{title}: {stars}/5 for {audience}. {summary}",
        system_message="You review books.",
    )
    return RoundRobinGroupChat([reviewer], max_turns=1)


async def main() -> None:
    """Run the team, print its stream, then use the typed answer."""
    team = build()
    result = await Console(team.run_stream(task=TASK))
    answer = result.messages[-1]
    assert isinstance(answer, StructuredMessage)
    review = answer.content
    assert isinstance(review, BookReview)
    print(f"typed answer: {type(answer).__name__}, stars={review.stars!r}")
    print("recommended" if review.stars >= 4 else "not recommended", "for", review.audience)
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
