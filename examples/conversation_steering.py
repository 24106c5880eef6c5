"""Steer a running turn: wait for the first tool result, then enqueue a follow-up.

The flow of seed 000 ("Feeding the turn while it runs"): ``agent.run(...)`` opens a
turn, ``run.start()`` drives it in the background, ``run.stream.join()`` shows its
events live, and after the first tool result ``run.enqueue(...)`` pushes a steering
message that the turn's next model call takes in. A follow-up ``reply.ask(...)`` then
continues the same conversation.

Offline, on a scripted model (no network, no key):

    python examples/conversation_steering.py

With a real model, set ``OPENAI_API_KEY`` (optionally ``FLOWLIB_MODEL``, default
``gpt-4o-mini``); the script then uses ``flowlib.models.OpenAIChatCompletionClient``
and the same code runs against it:

    OPENAI_API_KEY=sk-... python examples/conversation_steering.py
"""

from __future__ import annotations

import asyncio
import json
import os

from flowlib.conversation import (
    Agent,
    MemoryStream,
    ModelMessageChunk,
    ReplyEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from flowlib.messages import TextMessage
from flowlib.models import (
    ChatCompletionClient,
    CreateResult,
    FunctionCall,
    OpenAIChatCompletionClient,
    ReplayChatCompletionClient,
    RequestUsage,
)
from flowlib.tools import tool

FLIGHTS = {
    "Lisbon": [("TP 1234", "direct", 310), ("FR 88", "1 stop", 140), ("U2 7", "direct", 180)],
}


@tool
def search_flights(destination: str, max_price: int = 10_000, direct_only: bool = False) -> str:
    """Search flights to a destination.

    Args:
        destination: The city to fly to.
        max_price: The highest price in EUR.
        direct_only: Only direct flights.
    """
    found = [
        f"{code} ({kind}, {price} EUR)"
        for code, kind, price in FLIGHTS.get(destination, [])
        if price <= max_price and (kind == "direct" or not direct_only)
    ]
    return "; ".join(found) or "no flights found"


def _calls(arguments: dict[str, object], call_id: str) -> CreateResult:
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=call_id, name="search_flights", arguments=json.dumps(arguments))],
        usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
        cached=False,
    )


def make_client() -> tuple[ChatCompletionClient, bool]:
    """A real OpenAI client when OPENAI_API_KEY is set, else a scripted one."""
    if os.environ.get("OPENAI_API_KEY"):
        model = os.environ.get("FLOWLIB_MODEL", "gpt-4o-mini")
        return OpenAIChatCompletionClient(model=model), False
    script: list[str | CreateResult] = [
        _calls({"destination": "Lisbon"}, "call_1"),
        # What a model answers once it has read the steering message:
        _calls({"destination": "Lisbon", "max_price": 200, "direct_only": True}, "call_2"),
        "The best match is U2 7: a direct flight to Lisbon for 180 EUR.",
        "U2 7 leaves in the morning; shall I book it?",
    ]
    return ReplayChatCompletionClient(script), True


async def main() -> None:
    client, scripted = make_client()
    agent = Agent(
        "travel_agent",
        client,
        system_message="You find flights with the search_flights tool. Be brief.",
        tools=[search_flights],
        streaming=True,
    )
    history = MemoryStream()  # the conversation's log, e.g. for a database or a UI
    saved: list[str] = []  # stands in for a database table
    history.subscribe(lambda event: saved.append(type(event).__name__))

    print("== turn 1: run + start + join, steering after the first tool result")
    async with agent.run("Find me a flight to Lisbon.", stream=history) as run:
        run.start()
        steered = False
        async for event in run.stream.join():
            if isinstance(event, ModelMessageChunk):
                print(event.content, end="", flush=True)
            elif isinstance(event, ToolCallEvent):
                print(f"[tool call]   {event.name}({event.arguments})")
            elif isinstance(event, ToolResultEvent):
                print(f"[tool result] {event.content}")
                if not steered:
                    steered = True
                    run.enqueue("Only direct flights under 200 EUR, please.")
                    print("[enqueued]    Only direct flights under 200 EUR, please.")
            elif isinstance(event, TextMessage) and event.source == "user":
                print(f"[user]        {event.content}")
            elif isinstance(event, ReplyEvent):
                print()
                print(f"[reply]       {event.content}")
        reply = await run.result()

    print("\n== turn 2: reply.ask continues the same conversation")
    follow_up = await reply.ask("When does it leave?")
    print(f"[reply]       {follow_up.body}")

    if scripted:
        assert isinstance(client, ReplayChatCompletionClient)
        print("\n== what each model call saw (the last message of each request)")
        for number, request in enumerate(client.requests, start=1):
            last = request[-1]
            content = last.content if isinstance(last.content, str) else str(last.content)
            print(f"call {number}: {type(last).__name__}: {content}")
    tool_calls = saved.count("ToolCallEvent")
    print(f"\nThe subscriber saved {len(saved)} events ({tool_calls} tool calls) in order.")


if __name__ == "__main__":
    asyncio.run(main())
